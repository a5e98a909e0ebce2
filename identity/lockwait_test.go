package identity

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentmsg/agentmsg/lock"
)

// A change to the token file waits for another's lock at most
// MaxLockWait: it used to wait in the kernel as long as the holder kept
// it (one stopped: for ever), and a spawn or token command with it.
func TestATokenChangeGivesUpOnAHeldLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcp-tokens.json")
	h, err := os.Create(path + ".lock")
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if err := unix.Flock(int(h.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	tokens := &Tokens{Path: path, MaxLockWait: 100 * time.Millisecond}
	done := make(chan error, 1)
	go func() {
		_, err := tokens.Issue(Grant{Team: "alpha", Name: "ana"})
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, lock.ErrTooLong) {
			t.Fatalf("Issue: %v, want lock.ErrTooLong", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Issue still waits for the lock")
	}
}
