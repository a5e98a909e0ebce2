//go:build linux

package tmux

import (
	"os"

	"golang.org/x/sys/unix"
)

// anonFile is a file with no name from its first moment (O_TMPFILE), in
// the temp dir: the fallback where there is no memfd (the portable
// build) on Linux, so that no kill can leave a name in /tmp.
func anonFile() (*os.File, error) {
	return os.OpenFile(os.TempDir(), os.O_RDWR|unix.O_TMPFILE|unix.O_CLOEXEC, 0o600)
}
