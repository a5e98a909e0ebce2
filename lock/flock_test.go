//go:build linux && !agentmsg_portable

package lock

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// The kernel's table names the process holding an flock now, and nobody
// once it is let go.
func TestFlockHoldersNamesTheHolderNow(t *testing.T) {
	dir := t.TempDir()
	dev, ok := LockDevice(dir)
	if !ok {
		t.Fatal("LockDevice: /proc/locks does not show a lock taken in a local directory")
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("the probe left files: %v", left)
	}
	path := filepath.Join(dir, "x.lock")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	// Another open of the file, as a waiter has.
	w, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if pids, err := FlockHolders(w, dev); err != nil || !slices.Equal(pids, []int{os.Getpid()}) {
		t.Fatalf("held: %v %v, want this process", pids, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_UN); err != nil {
		t.Fatal(err)
	}
	if pids, err := FlockHolders(w, dev); err != nil || len(pids) != 0 {
		t.Fatalf("let go: %v %v, want none", pids, err)
	}
}
