package plainfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// A file opened here reads, writes and reports errors as one from
// os.OpenFile does, and is closed in the programs this one starts.
func TestOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if _, err := Open(path, os.O_RDWR, 0); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a missing file: %v, want ErrNotExist", err)
	}
	f, err := Open(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("one\n"); err != nil {
		t.Fatal(err)
	}
	if fi, err := f.Stat(); err != nil || fi.Mode().Perm() != 0o600 || fi.Size() != 4 {
		t.Fatalf("stat %v, %v", fi, err)
	}
	flags, err := unix.FcntlInt(f.Fd(), unix.F_GETFD, 0)
	if err != nil || flags&unix.FD_CLOEXEC == 0 {
		t.Errorf("close-on-exec not set: %x, %v", flags, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Errorf("flock: %v", err)
	}
}
