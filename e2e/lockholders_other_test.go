//go:build !linux || agentmsg_portable

package e2e

// namesLockHolders: macOS (and Linux built with agentmsg_portable) cannot
// name who holds an inbox's lock, so a sender gives up after two checks
// (docs/platforms.md), running holder or not.
const namesLockHolders = false
