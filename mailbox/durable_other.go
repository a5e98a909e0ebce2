//go:build (!linux && !darwin) || (linux && agentmsg_portable)

package mailbox

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// Elsewhere, and on Linux built with agentmsg_portable (so that Darwin's
// way runs in Linux's tests): no syncfs; each file written since the last
// Sync is fsynced, and the last one's sync also flushes the drive's cache
// (File.Sync, which is fsync(2) here).
const canSyncfs = false

func syncfs(*os.File) error { return errors.ErrUnsupported }

func fsync(f *os.File) error { return ignoringEINTR(func() error { return unix.Fsync(int(f.Fd())) }) }

func fullFsync(f *os.File) error { return f.Sync() }
