//go:build linux && !agentmsg_portable

package mailbox

// Naming a lock's holder needs the kernel's lock table (/proc/locks): Linux
// only; lockwait_other_test.go holds what a waiter does without it.

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/lock"
)

// A writer waits for the inbox lock as long as a running process holds
// it, however long that is: 1,500 senders at once each hold it in turn.
// The lock file names an exited process, as it does while a new holder
// has the lock but has not yet written its pid (when the waiters took
// that pid for the holder's, 1,162 of 1,500 sends failed).
func TestRunningHolderIsWaitedFor(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	s := newStore(t)
	s.LockWait = 20 * time.Millisecond
	b := box(t, s, "ana")
	appendN(t, b, 1)
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b.lockPath(), []byte(strconv.Itoa(gone.Process.Pid)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, holder := holdLock(t, b)
	done := appendAsync(t, b)
	// Well past the old limit of six waits for a running holder.
	select {
	case err := <-done:
		t.Fatalf("Append returned while a running process held the lock: %v", err)
	case <-time.After(20 * s.LockWait):
	}
	holder.in.Close()
	if err := <-done; err != nil {
		t.Fatalf("Append after the holder let go: %v", err)
	}
}

// A holder that is stopped (Ctrl-Z, SIGSTOP) is not waited for forever:
// the writer gives up after LockWait with ErrLocked, naming it.
func TestStoppedHolderIsNamedNotWaitedFor(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	s := newStore(t)
	s.LockWait = 50 * time.Millisecond
	b := box(t, s, "ana")
	pid, holder := holdLock(t, b)
	if err := holder.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	err := waitErr(t, appendAsync(t, b))
	want := fmt.Sprintf("held by pid %d (mailbox.test), which is stopped", pid)
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), want) {
		t.Fatalf("Append: %v, want ErrLocked saying %q", err, want)
	}
	holder.cmd.Process.Signal(syscall.SIGCONT)
	holder.in.Close()
	if err := b.Append(newEnv(t, "lead", "ana", "after")); err != nil {
		t.Fatal(err)
	}
}

// A holder that has exited while a process it started keeps the lock
// file open (and so the lock) is not waited for either, and is named as
// such.
func TestExitedHolderIsNamedNotWaitedFor(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	s := newStore(t)
	s.LockWait = 50 * time.Millisecond
	b := box(t, s, "ana")
	child, holder := holdLock(t, b, "MB_INHERIT=1")
	t.Cleanup(func() { syscall.Kill(child, syscall.SIGKILL) })
	holder.cmd.Wait()
	err := waitErr(t, appendAsync(t, b))
	want := fmt.Sprintf("held by pid %d, which has exited (a process it started still holds the lock file", holder.cmd.Process.Pid)
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), want) {
		t.Fatalf("Append: %v, want ErrLocked saying %q", err, want)
	}
}

// A read of /proc/locks that misses the waiter's own probe lock (the table
// is written in pieces while 1,500 writers take and let go of theirs) is
// asked again at the next check: it used to stand for the whole wait, and
// the waiter gave up on a running holder at its second check (CI: 40 of
// 1,500 sends failed, "a process that cannot be told").
func TestAMissedProbeIsAskedAgain(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	missed := 0
	lockDevice = func(dir string) (string, bool) {
		if missed == 0 {
			missed++
			return "", false
		}
		return lock.LockDevice(dir)
	}
	t.Cleanup(func() { lockDevice = lock.LockDevice })
	s := newStore(t)
	s.LockWait = 20 * time.Millisecond
	b := box(t, s, "ana")
	appendN(t, b, 1)
	_, holder := holdLock(t, b)
	done := appendAsync(t, b)
	select {
	case err := <-done:
		t.Fatalf("Append returned while a running process held the lock: %v", err)
	case <-time.After(20 * s.LockWait):
	}
	holder.in.Close()
	if err := <-done; err != nil {
		t.Fatalf("Append after the holder let go: %v", err)
	}
}
