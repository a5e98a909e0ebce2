package mailbox

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// Darwin: no syncfs. fsync(2) hands a file's data to the drive, which may
// keep it in its cache past a power cut; F_FULLFSYNC also has the drive
// write out its cache, all of it, so one at the end of a Sync makes every
// file fsynced before it durable. (Go's File.Sync is F_FULLFSYNC on
// Darwin: an Append, which syncs one file, is durable as it returns.)
const canSyncfs = false

func syncfs(*os.File) error { return errors.ErrUnsupported }

func fsync(f *os.File) error { return ignoringEINTR(func() error { return unix.Fsync(int(f.Fd())) }) }

func fullFsync(f *os.File) error {
	err := ignoringEINTR(func() error {
		_, err := unix.FcntlInt(f.Fd(), unix.F_FULLFSYNC, 0)
		return err
	})
	if errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.EINVAL) {
		// A file system that cannot (SMB, some FUSE): fsync is all there is.
		return fsync(f)
	}
	return err
}
