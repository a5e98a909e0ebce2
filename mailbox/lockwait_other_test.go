//go:build !linux || agentmsg_portable

package mailbox

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentmsg/agentmsg/lock"
)

// Where the system cannot say who holds a lock (Darwin, and Linux built
// with agentmsg_portable), a writer waits for the inbox lock two checks,
// then gives up with ErrLocked saying that it cannot tell who holds it:
// never a holder named by guess, never a wait without end behind one that
// may be stopped.
func TestAnUnknownHolderIsSaidSo(t *testing.T) {
	s := newStore(t)
	s.LockWait = 20 * time.Millisecond
	b := box(t, s, "ana")
	appendN(t, b, 1)
	// Another open of the lock file holds it, as another process would.
	f, err := os.OpenFile(b.lockPath(), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = b.Append(newEnv(t, "lead", "ana", "behind a holder no one can name"))
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), lock.HoldersUnknown) {
		t.Fatalf("Append: %v, want ErrLocked saying %q", err, lock.HoldersUnknown)
	}
	if took := time.Since(start); took < 2*s.LockWait {
		t.Errorf("gave up after %s, before two checks of %s", took, s.LockWait)
	}
	_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
	if err := b.Append(newEnv(t, "lead", "ana", "after")); err != nil {
		t.Fatal(err)
	}
}
