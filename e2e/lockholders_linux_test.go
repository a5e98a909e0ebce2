//go:build linux && !agentmsg_portable

package e2e

// namesLockHolders: the kernel's lock table (/proc/locks) names who holds
// an inbox's lock, so a sender waits for a running holder however long.
const namesLockHolders = true
