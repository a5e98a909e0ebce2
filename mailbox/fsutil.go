package mailbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentmsg/agentmsg/lock"
)

// ErrLocked: another process held a mailbox lock for longer than any
// write takes (Store.LockWait): most likely it was stopped mid-write.
var ErrLocked = errors.New("mailbox locked")

// DefaultLockWait is how long a writer waits for another's mailbox lock;
// writes hold it for milliseconds.
const DefaultLockWait = 10 * time.Second

// lockFile takes an exclusive flock on path, creating it if needed, within
// wait. The kernel drops the lock when the holder dies, so a killed writer
// can never wedge an inbox; and a stopped one (Ctrl-Z, SIGSTOP) holds up
// others for wait at most, not forever. The lock is on a file of its own
// rather than on the inbox because compaction replaces the inbox's inode;
// a lock on the old inode would not exclude a writer that opened the new
// one.
func lockFile(path string, wait time.Duration) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening lock: %w", err)
	}
	start := time.Now()
	deadline := start.Add(wait)
	poll := 100 * time.Microsecond
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		switch {
		case err == nil:
			// Say who holds it, for a waiter to tell a stopped holder
			// from a slow one.
			if f.Truncate(0) == nil {
				_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())), 0)
			}
			return func() { f.Close() }, nil // closing releases the flock
		case !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR):
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", filepath.Base(path), err)
		case time.Now().After(deadline):
			// A holder that is running (a loaded machine, many writers)
			// is waited for, up to slowHolders times as long; a stopped
			// one, or one that cannot be told, is not.
			if holderRunning(f) && time.Since(start) < slowHolders*wait {
				deadline = time.Now().Add(wait)
				continue
			}
			f.Close()
			return nil, fmt.Errorf("%w: %s stayed locked by another process for %s (one stopped while writing?)", ErrLocked, path, time.Since(start).Round(time.Second))
		}
		time.Sleep(poll)
		poll = min(2*poll, 5*time.Millisecond)
	}
}

// slowHolders bounds the wait for a lock whose holder still runs.
const slowHolders = 6

// holderRunning reports whether the process named in a lock file (its pid,
// written by the holder) is running: neither stopped nor gone.
func holderRunning(f *os.File) bool {
	b := make([]byte, 20)
	n, _ := f.ReadAt(b, 0)
	pid, err := strconv.Atoi(string(b[:n]))
	if err != nil || pid <= 0 {
		return false
	}
	switch lock.ProcessState(pid) {
	case 0, '?', 'T', 't', 'Z':
		return false
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

// Sync makes everything written to the store durable, AppendBatched's
// lines and their new files and directories included: one syncfs(2) of the
// file system that holds the store, one journal commit for them all.
func (s *Store) Sync() error {
	d, err := os.Open(s.Root)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := unix.Syncfs(int(d.Fd())); err != nil {
		return fmt.Errorf("syncing the mailbox (%s): %w", s.Root, err)
	}
	return nil
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
