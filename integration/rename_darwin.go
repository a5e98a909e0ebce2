package integration

import (
	"errors"

	"golang.org/x/sys/unix"
)

// exchange swaps the files at a and b in one step (renamex_np
// RENAME_SWAP): a then holds what b held, so nothing that stood at b is
// lost, whoever put it there.
func exchange(a, b string) error {
	return renameErr(unix.RenamexNp(a, b, unix.RENAME_SWAP))
}

// renameNoReplace renames from to to unless to exists (fs.ErrExist).
func renameNoReplace(from, to string) error {
	return renameErr(unix.RenamexNp(from, to, unix.RENAME_EXCL))
}

// renameErr is errors.ErrUnsupported where the file system has no such
// rename (APFS and HFS+ have both; SMB and some FUSE file systems not).
func renameErr(err error) error {
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.ENOSYS) {
		return errors.ErrUnsupported
	}
	return err
}
