package mailbox

// The lock holder the tests of waiting writers start (lockwait_test.go,
// lockend_test.go, lockwait_other_test.go), on every system.

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestHelperHolder takes the flock on MB_LOCK as a writer does, prints its
// pid, and holds it until its stdin closes. With MB_INHERIT it instead
// starts a sleep that inherits the locked file, prints the sleep's pid and
// exits: a holder gone while a process it started keeps the lock.
func TestHelperHolder(t *testing.T) {
	if os.Getenv(helperEnv) != "holder" {
		t.Skip("helper process")
	}
	f, err := os.OpenFile(os.Getenv("MB_LOCK"), os.O_RDWR|os.O_CREATE, 0o600)
	if err == nil {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX)
	}
	if err != nil {
		fail(err)
	}
	if os.Getenv("MB_INHERIT") != "" {
		child := exec.Command("sleep", "120")
		child.ExtraFiles = []*os.File{f}
		if err := child.Start(); err != nil {
			fail(err)
		}
		fmt.Println(child.Process.Pid)
		os.Exit(0)
	}
	fmt.Println(os.Getpid())
	io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// holdLock starts a process that holds b's inbox lock and returns the pid
// it printed and the helper (closing h.in makes a holder let go).
func holdLock(t *testing.T, b *Box, env ...string) (int, *helper) {
	t.Helper()
	if err := b.s.mkdir(b.dir); err != nil {
		t.Fatal(err)
	}
	h := startHelper(t, testCtx(t), "holder", append(env, "MB_LOCK="+b.lockPath())...)
	t.Cleanup(func() {
		h.cmd.Process.Signal(syscall.SIGCONT)
		h.in.Close()
		h.cmd.Wait()
	})
	line := make([]byte, 32)
	n, err := h.out.Read(line)
	pid, perr := strconv.Atoi(strings.TrimSpace(string(line[:n])))
	if err != nil || perr != nil {
		t.Fatalf("holder: %v %v %s", err, perr, h.err.String())
	}
	return pid, h
}

// appendAsync appends one message to b and returns where its error will be.
func appendAsync(t *testing.T, b *Box) <-chan error {
	done := make(chan error, 1)
	env := newEnv(t, "lead", b.Agent, "behind the holder")
	go func() { done <- b.Append(env) }()
	return done
}

// waitErr is the error at done, which must come within a generous bound.
func waitErr(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("Append still waits for a lock whose holder cannot let go")
		return nil
	}
}
