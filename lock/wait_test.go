package lock

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// heldFile makes a lock file in a new directory and holds its flock on
// an open file of its own (flocks belong to open files, so the test's
// second open of it waits as another process would). It returns the
// path and the holder's release.
func heldFile(t *testing.T) (path string, release func()) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "x.lock")
	h, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(int(h.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return path, func() { h.Close() }
}

func open(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// within runs fn and fails the test if it takes longer than d.
func within(t *testing.T, d time.Duration, fn func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		t.Fatalf("the wait did not end within %s", d)
		return nil
	}
}

// A free lock is taken at once; a held one once it is let go.
func TestWaitTakesTheLockOnceFree(t *testing.T) {
	path, release := heldFile(t)
	f := open(t, path)
	defer f.Close()
	time.AfterFunc(50*time.Millisecond, release)
	if err := within(t, 10*time.Second, func() error { return Wait{Path: path, Look: 10 * time.Millisecond}.Flock(f, unix.LOCK_EX) }); err != nil {
		t.Fatal(err)
	}
	other := open(t, path)
	defer other.Close()
	if err := unix.Flock(int(other.Fd()), unix.LOCK_EX|unix.LOCK_NB); !errors.Is(err, unix.EWOULDBLOCK) {
		t.Fatalf("another open took the lock the wait had won: %v", err)
	}
}

// Every wait ends, each for its reason, while the holder keeps the lock;
// and the flock left behind lets the lock go as soon as it gets it, so a
// wait that gave up never keeps a lock from anyone.
func TestWaitEnds(t *testing.T) {
	errStuck := errors.New("the holder is stuck")
	cases := []struct {
		name string
		wait func(path string) (Wait, func())
		want error
	}{
		{"life ended, after its grace", func(path string) (Wait, func()) {
			life, stop := context.WithCancelCause(context.Background())
			return Wait{Life: life, Grace: 50 * time.Millisecond, Path: path}, func() { stop(errStuck) }
		}, errStuck},
		{"bound reached", func(path string) (Wait, func()) {
			return Wait{Most: 50 * time.Millisecond, Path: path}, func() {}
		}, ErrTooLong},
		{"file removed", func(path string) (Wait, func()) {
			return Wait{Path: path, Look: 10 * time.Millisecond}, func() { os.Remove(path) }
		}, ErrMoved},
		{"check failed", func(path string) (Wait, func()) {
			return Wait{Path: path, Every: 10 * time.Millisecond, Check: func() error { return errStuck }}, func() {}
		}, errStuck},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path, release := heldFile(t)
			w, then := c.wait(path)
			f := open(t, path)
			time.AfterFunc(20*time.Millisecond, then)
			err := within(t, 10*time.Second, func() error { return w.Flock(f, unix.LOCK_EX) })
			if !errors.Is(err, c.want) {
				t.Fatalf("Flock: %v, want %v", err, c.want)
			}
			release()
			if c.want == ErrMoved {
				return // a new file at the path would be free anyway
			}
			// The flock left behind wins the lock and lets it go.
			deadline := time.Now().Add(10 * time.Second)
			for {
				other := open(t, path)
				err := unix.Flock(int(other.Fd()), unix.LOCK_EX|unix.LOCK_NB)
				other.Close()
				if err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the wait that gave up still holds the lock")
				}
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
}
