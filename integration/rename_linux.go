package integration

import (
	"errors"

	"golang.org/x/sys/unix"
)

// exchange swaps the files at a and b in one step (renameat2
// RENAME_EXCHANGE): a then holds what b held, so nothing that stood at b
// is lost, whoever put it there.
func exchange(a, b string) error {
	return renameErr(unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE))
}

// renameNoReplace renames from to to unless to exists (fs.ErrExist).
func renameNoReplace(from, to string) error {
	return renameErr(unix.Renameat2(unix.AT_FDCWD, from, unix.AT_FDCWD, to, unix.RENAME_NOREPLACE))
}

// renameErr is errors.ErrUnsupported where the kernel or the file system
// has no such rename.
func renameErr(err error) error {
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) {
		return errors.ErrUnsupported
	}
	return err
}
