package mailbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentmsg/agentmsg/internal/plainfile"
	"github.com/agentmsg/agentmsg/lock"
)

// ErrLocked: a mailbox lock is held by a process that cannot let it go
// soon: one stopped while it holds the lock, or one that has exited while
// a process it started keeps the lock file open.
var ErrLocked = errors.New("mailbox locked")

// DefaultLockWait is how long a writer waits for a mailbox lock before it
// asks whether the holder can let it go; writes hold it for milliseconds.
const DefaultLockWait = 10 * time.Second

// lockFile takes an exclusive flock on path, creating it if needed. The
// lock is on a file of its own rather than on the inbox because
// compaction replaces the inbox's inode; a lock on the old inode would not
// exclude a writer that opened the new one.
//
// It waits as long as running processes hold the lock: under load (1,500
// senders to one inbox on 2 cores) each holds it in turn, and the last of
// them waits minutes. Every wait it asks the kernel who holds the lock now
// (FlockHolders) and gives up with ErrLocked, naming the holder, only when
// that one cannot let it go: stopped (Ctrl-Z, SIGSTOP), or exited while a
// process it started keeps the file open. The kernel drops the lock of a
// writer that dies, so a killed writer never wedges an inbox.
func lockFile(path string, wait time.Duration) (unlock func(), err error) {
	f, err := plainfile.Open(path, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening lock: %w", err)
	}
	release := func() { f.Close() } // closing releases the flock
	err = flock(f, unix.LOCK_EX|unix.LOCK_NB)
	if err == nil {
		return release, nil
	}
	if !errors.Is(err, unix.EWOULDBLOCK) {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", filepath.Base(path), err)
	}
	// Wait in the kernel, which wakes a waiter as the lock is let go:
	// 1,500 senders polling for it (sleeping up to 5 ms between tries)
	// took 197 s, waiting in the kernel 10 s.
	start := time.Now()
	got := make(chan error, 1)
	go func() { got <- flock(f, unix.LOCK_EX) }()
	tick := time.NewTicker(wait)
	defer tick.Stop()
	w := lockWait{f: f, dir: filepath.Dir(path)}
	for {
		select {
		case err := <-got:
			if err != nil {
				f.Close()
				return nil, fmt.Errorf("locking %s: %w", filepath.Base(path), err)
			}
			return release, nil
		case <-tick.C:
		}
		who, stuck := w.holderStuck()
		if !stuck {
			continue
		}
		// The blocked flock cannot be called off: it keeps the file
		// open until it returns, and then lets the lock go at once. In a
		// process that lives on (the MCP server) its thread waits until
		// then.
		go func() { <-got; f.Close() }()
		return nil, fmt.Errorf("%w: %s is held by %s; waited %s", ErrLocked, path, who, time.Since(start).Round(time.Millisecond))
	}
}

// flock is flock(2) on f, again when a signal interrupts it.
func flock(f *os.File, how int) error {
	for {
		err := unix.Flock(int(f.Fd()), how)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// lockWait is a writer's wait for a lock another holds.
type lockWait struct {
	f       *os.File
	dir     string
	dev     *string // how the kernel's lock table names the lock's file system, once found
	unknown int     // checks at which it could not be found
	// stuck: the holders the last check found unable to let go. A holder
	// is given up on only when two checks in a row find it so: a Go
	// process's main thread shows as a zombie while its other threads,
	// which still hold its files and so its locks, are exiting.
	stuck []int
}

// lockDevice finds how the kernel's lock table (/proc/locks) names a
// directory's file system; never found where there is none (Darwin). A
// variable for tests.
var lockDevice = lock.LockDevice

// holderStuck reports whether the lock's holder cannot let it go, and
// names it. A holder that runs, whatever it waits for, can; none found is
// the lock changing hands (the kernel has woken the next holder, which
// has yet to run: under load, often).
func (w *lockWait) holderStuck() (string, bool) {
	if w.dev == nil {
		// Learnt once it is found; not finding it is asked again at the
		// next check (under heavy churn a read of the table can miss it).
		if dev, ok := lockDevice(w.dir); ok {
			w.dev = &dev
		} else {
			w.unknown++
		}
	}
	if w.dev == nil {
		// No holder can be told: as before any could, a waiter gives up
		// when two checks could not tell.
		return lock.HoldersUnknown, w.unknown >= 2
	}
	pids, err := lock.FlockHolders(w.f, *w.dev)
	if err != nil || len(pids) == 0 {
		w.stuck = nil
		return "", false
	}
	var who []string
	for _, pid := range pids {
		switch state := lock.ProcessState(pid); {
		case pid == 0:
			who = append(who, "a process that has exited or runs in another pid namespace (one it started may still hold the lock file)")
		case state == 0 || state == 'Z' || state == 'X':
			who = append(who, fmt.Sprintf("pid %d, which has exited (a process it started still holds the lock file)", pid))
		case state == 'T' || state == 't':
			who = append(who, fmt.Sprintf("pid %d (%s), which is stopped: it keeps the lock until it is continued (kill -CONT) or killed", pid, lock.Command(pid)))
		default:
			w.stuck = nil
			return "", false
		}
	}
	// Each must still hold the lock now that its state is known: a holder
	// that let go and exited in between (many writers hand the lock on
	// every few milliseconds) is not stuck. A process lets its locks go
	// before it exits, so one still named after it was seen gone holds
	// the lock through a file another process keeps open.
	now, err := lock.FlockHolders(w.f, *w.dev)
	if err != nil || !containsAll(now, pids) {
		w.stuck = nil
		return "", false
	}
	again := len(w.stuck) > 0 && containsAll(w.stuck, pids)
	w.stuck = pids
	return strings.Join(who, "; "), again
}

func containsAll(set, want []int) bool {
	for _, x := range want {
		if !slices.Contains(set, x) {
			return false
		}
	}
	return true
}

// writeFileAtomic replaces path with data so that a reader or a crash sees
// either the old content or all of the new: temp file in the same
// directory, fsync, rename, fsync of the directory (without the last step
// the rename itself may be lost on power failure).
func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := writeTemp(dir, "."+filepath.Base(path)+".tmp*", data)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(dir)
}

// writeTemp writes data to a new fsynced temp file in dir and returns its
// name. Temp names start with '.' so no listing or glob here matches them.
func writeTemp(dir, pattern string, data []byte) (string, error) {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return "", err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", dir, err)
	}
	return nil
}
