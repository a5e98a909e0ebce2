//go:build linux && !agentmsg_portable

package mailbox

// namesLockHolders: the kernel's lock table (/proc/locks) names who holds
// a lock a writer waits for.
const namesLockHolders = true
