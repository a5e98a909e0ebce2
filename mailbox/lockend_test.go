package mailbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// errStopped stands for the signal that ends a command.
var errStopped = errors.New("interrupted by SIGTERM")

// A writer waiting for a lock that a running process holds ends once its
// store's Life does (the command was signalled, or reached its time
// bound), StopGrace later, saying why; nothing is
// recorded. It used to wait in the kernel, deaf to everything: 1,494
// senders to one inbox, whose test was killed, were still there 76
// minutes later, SIGTERM or not.
func TestAWaitingWriterEndsWithItsLife(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	s := newStore(t)
	life, stop := context.WithCancelCause(context.Background())
	defer stop(nil)
	s.Life = life
	b := box(t, s, "ana")
	appendN(t, b, 1)
	holdLock(t, b)
	done := appendAsync(t, b)
	select {
	case err := <-done:
		t.Fatalf("Append returned while a running process held the lock: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	stopped := time.Now()
	stop(errStopped)
	err := waitErr(t, done)
	took := time.Since(stopped)
	if !errors.Is(err, errStopped) || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("Append: %v, want it interrupted by the life's cause", err)
	}
	if took > StopGrace+2*time.Second {
		t.Errorf("Append ended %s after the life did, want about StopGrace (%s)", took, StopGrace)
	}
	if n := len(mustRead(t, s, "ana").Envelopes); n != 1 {
		t.Errorf("the inbox holds %d messages, want only the first", n)
	}
}

// A running holder is waited for up to MaxLockWait, no longer: the writer
// then says who holds the lock and how long it waited.
func TestAWaitingWriterIsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	s := newStore(t)
	s.MaxLockWait = 300 * time.Millisecond
	b := box(t, s, "ana")
	appendN(t, b, 1)
	pid, _ := holdLock(t, b)
	start := time.Now()
	err := waitErr(t, appendAsync(t, b))
	want := fmt.Sprintf("pid %d", pid)
	if !namesLockHolders {
		want = "another process" // no holder can be named here
	}
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), want) {
		t.Fatalf("Append: %v, want ErrLocked naming %s", err, want)
	}
	if took := time.Since(start); took < s.MaxLockWait {
		t.Errorf("Append gave up after %s, before MaxLockWait (%s)", took, s.MaxLockWait)
	}
}

// A writer waiting for an inbox's lock notices that the mailbox was
// removed under it, and ends with ErrMailboxGone instead of waiting on a
// lock file no other writer can open (or, once its holder let go, writing
// into a directory tree made again for nobody). Before, it waited two
// LockWait checks, then blamed "a process that cannot be told".
func TestAWaitingWriterNoticesItsMailboxRemoved(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	s := newStore(t)
	b := box(t, s, "ana")
	appendN(t, b, 1)
	holdLock(t, b)
	done := appendAsync(t, b)
	time.Sleep(100 * time.Millisecond) // waiting, most likely (either way it must not write)
	if err := os.RemoveAll(s.Root); err != nil {
		t.Fatal(err)
	}
	removed := time.Now()
	err := waitErr(t, done)
	if !errors.Is(err, ErrMailboxGone) {
		t.Fatalf("Append: %v, want ErrMailboxGone", err)
	}
	if took := time.Since(removed); took > 5*lockLook {
		t.Errorf("Append noticed the removal after %s, want within about %s", took, lockLook)
	}
	if _, err := os.Lstat(s.Root); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the mailbox was made again: %v", err)
	}
}

// A removed mailbox root is never made again by a store that saw it,
// whatever writes next (an inbox, the registry, a compaction); a store
// opened where there is none makes it once.
func TestARemovedRootIsNotMadeAgain(t *testing.T) {
	s := New(filepath.Join(t.TempDir(), "state"))
	if err := s.Open(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(s.Root); err != nil || !fi.IsDir() {
		t.Fatalf("Open made no root: %v", err)
	}
	b := box(t, s, "ana")
	appendN(t, b, 1)
	if err := os.RemoveAll(s.Root); err != nil {
		t.Fatal(err)
	}
	writes := map[string]func() error{
		"append":   func() error { return b.Append(newEnv(t, "lead", "ana", "after")) },
		"register": func() error { return s.Register(team, AgentRecord{Agent: "ana"}) },
		"status":   func() error { return s.SetStatus(team, "ana", Status{State: "working"}) },
	}
	for name, write := range writes {
		if err := write(); !errors.Is(err, ErrMailboxGone) {
			t.Errorf("%s: %v, want ErrMailboxGone", name, err)
		}
	}
	if err := s.Gone(); !errors.Is(err, ErrMailboxGone) {
		t.Errorf("Gone: %v, want ErrMailboxGone", err)
	}
	if _, err := os.Lstat(s.Root); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the mailbox was made again: %v", err)
	}
}

// A lock file removed while a writer waits for it, its mailbox still
// there (a team cleaned under running writers), is not waited on: the
// writer starts over on the file now at the path, and records its message
// there, though the old file's holder still holds the old lock.
func TestAWriterStartsOverOnALockFileRemoved(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	s := newStore(t)
	b := box(t, s, "ana")
	appendN(t, b, 1)
	holdLock(t, b)
	done := appendAsync(t, b)
	time.Sleep(100 * time.Millisecond)
	if err := os.RemoveAll(filepath.Dir(b.dir)); err != nil {
		t.Fatal(err)
	}
	if err := waitErr(t, done); err != nil {
		t.Fatalf("Append after the team's directory was removed: %v", err)
	}
	if got := mustRead(t, s, "ana").Envelopes; len(got) != 1 || got[0].Content != "behind the holder" {
		t.Errorf("the inbox made again holds %v, want the waiting writer's message", got)
	}
}

// A Wait on an inbox whose mailbox is removed ends with ErrMailboxGone,
// whether the inbox was there (its file goes) or not (nothing changes but
// the mailbox): a missing inbox used to read as an empty one, and a wait
// with no timeout (wait --timeout 0, inbox --follow) waited for ever.
func TestAWaitEndsWhenItsMailboxGoes(t *testing.T) {
	for _, agent := range []string{"ana", "bob"} {
		s := newStore(t)
		appendN(t, box(t, s, "ana"), 1) // bob has no inbox
		done := make(chan error, 1)
		go func() {
			_, err := s.Wait(context.Background(), team, agent, func(Envelope) bool { return false }, Position{})
			done <- err
		}()
		time.Sleep(50 * time.Millisecond) // waiting, most likely (either way it must end)
		if err := os.RemoveAll(s.Root); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			if !errors.Is(err, ErrMailboxGone) {
				t.Errorf("%s: Wait: %v, want ErrMailboxGone", agent, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: Wait still waits with its mailbox gone", agent)
		}
	}
}
