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

// Fill leaves a whole file with its mode, or none at all.
func TestFillLeavesAWholeFileOrNone(t *testing.T) {
	dir := t.TempDir()
	f, err := os.CreateTemp(dir, "fill")
	if err != nil {
		t.Fatal(err)
	}
	if err := Fill(f, []byte("whole"), 0o640); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(f.Name()); err != nil || string(b) != "whole" {
		t.Fatalf("read back %q, %v", b, err)
	}
	if fi, _ := os.Stat(f.Name()); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want 0640", fi.Mode().Perm())
	}
	g, err := os.CreateTemp(dir, "half")
	if err != nil {
		t.Fatal(err)
	}
	g.Close() // the write fails
	if err := Fill(g, []byte("half"), 0); err == nil {
		t.Fatal("Fill of a closed file: no error")
	}
	if _, err := os.Lstat(g.Name()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a file Fill failed to write is still there: %v", err)
	}
}
