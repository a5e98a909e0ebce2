//go:build linux && !agentmsg_portable

package mailbox

import (
	"os"

	"golang.org/x/sys/unix"
)

// Linux: syncfs(2) writes out the whole file system that holds the store
// and commits its journal once, for any number of inboxes; fsync(2)
// already makes the drive write its cache.
const canSyncfs = true

func syncfs(f *os.File) error    { return ignoringEINTR(func() error { return unix.Syncfs(int(f.Fd())) }) }
func fsync(f *os.File) error     { return f.Sync() }
func fullFsync(f *os.File) error { return f.Sync() }
