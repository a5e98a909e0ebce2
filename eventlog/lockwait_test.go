package eventlog

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// holdLog holds l's lock on an open file of its own, as another process
// stopped in the middle of an append would, until the test ends.
func holdLog(t *testing.T, l *Log) {
	t.Helper()
	if _, err := l.Append(Event{Type: "message.recorded"}); err != nil {
		t.Fatal(err)
	}
	h, err := os.OpenFile(filepath.Join(l.Dir, "events.lock"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	if err := unix.Flock(int(h.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
}

// appendWithin appends one event and fails the test unless Append returns
// within d.
func appendWithin(t *testing.T, l *Log, d time.Duration) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := l.Append(Event{Type: "message.submitted"})
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		t.Fatalf("Append still waits for the lock after %s", d)
		return nil
	}
}

// An append waits for a held lock at most MaxLockWait, and LockGrace once
// its Life has ended: it used to wait in the kernel for as long as the
// holder kept it (a stopped one: for ever), and every command that records
// anything waited behind it, deaf to signals.
func TestAnAppendGivesUpOnAHeldLock(t *testing.T) {
	t.Run("bound", func(t *testing.T) {
		l := &Log{Dir: t.TempDir(), MaxLockWait: 200 * time.Millisecond}
		holdLog(t, l)
		start := time.Now()
		if err := appendWithin(t, l, 10*time.Second); err == nil {
			t.Fatal("Append succeeded while another held the lock")
		}
		if took := time.Since(start); took < l.MaxLockWait {
			t.Errorf("Append gave up after %s, before MaxLockWait", took)
		}
	})
	t.Run("life", func(t *testing.T) {
		errStopped := errors.New("interrupted by SIGTERM")
		life, stop := context.WithCancelCause(context.Background())
		l := &Log{Dir: t.TempDir(), Life: life}
		holdLog(t, l)
		time.AfterFunc(50*time.Millisecond, func() { stop(errStopped) })
		if err := appendWithin(t, l, LockGrace+5*time.Second); !errors.Is(err, errStopped) {
			t.Fatalf("Append: %v, want the life's cause", err)
		}
	})
}

// A log whose mailbox root was removed does not make it again.
func TestALogDoesNotMakeItsRootAgain(t *testing.T) {
	root := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(root, 0o700); err != nil {
		t.Fatal(err)
	}
	l := &Log{Dir: filepath.Join(root, "events"), Within: root}
	if _, err := l.Append(Event{Type: "message.recorded"}); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(root); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(Event{Type: "message.submitted"}); err == nil {
		t.Error("Append succeeded with its mailbox removed")
	}
	if _, err := os.Lstat(root); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the mailbox root was made again: %v", err)
	}
}
