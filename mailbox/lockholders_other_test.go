//go:build !linux || agentmsg_portable

package mailbox

// namesLockHolders: macOS (and Linux built with agentmsg_portable) cannot
// name who holds a lock (docs/platforms.md).
const namesLockHolders = false
