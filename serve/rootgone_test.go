package serve

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/mailbox"
)

// A daemon whose mailbox is removed under it says so, and ends (Run
// returns the error): its socket and lock went with the mailbox, so no
// client could find it, and it used to serve nobody until killed. One
// still there is not ended.
func TestTheDaemonSeesItsMailboxGo(t *testing.T) {
	root := filepath.Join(t.TempDir(), "agentmsg")
	if err := os.Mkdir(root, 0o700); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	gone := rootGone(ctx, root, 10*time.Millisecond)
	select {
	case err := <-gone:
		t.Fatalf("gone while there: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	if err := os.RemoveAll(root); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-gone:
		if !errors.Is(err, mailbox.ErrMailboxGone) {
			t.Fatalf("%v, want ErrMailboxGone", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the daemon did not see its mailbox go")
	}
}
