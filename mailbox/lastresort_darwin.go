package mailbox

import (
	"os"
	"os/user"
	"path/filepath"
)

// lastResortRoot, with no AGENTMSG_HOME, XDG_STATE_HOME or HOME (a launchd
// job may have none): ~/.local/state/agentmsg of the home the user
// database gives. macOS's $TMPDIR is a per-user directory under
// /var/folders whose files unused for three days the system removes, and
// /tmp is emptied too: no place for messages that must be kept. Only a
// user with no home there falls back to it (tmpRoot).
func lastResortRoot() string {
	if u, err := user.Current(); err == nil && filepath.IsAbs(u.HomeDir) {
		if fi, err := os.Stat(u.HomeDir); err == nil && fi.IsDir() {
			return filepath.Join(u.HomeDir, ".local", "state", "agentmsg")
		}
	}
	return tmpRoot()
}
