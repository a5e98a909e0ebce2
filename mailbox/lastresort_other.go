//go:build !darwin

package mailbox

// lastResortRoot, with no AGENTMSG_HOME, XDG_STATE_HOME or HOME: a
// directory of this user's under the shared TMPDIR (tmpRoot), checked as
// one others could have made first (Store.Base).
func lastResortRoot() string { return tmpRoot() }
