package mailbox

import (
	"errors"
	"fmt"
	"io/fs"
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
// soon (one stopped while it holds the lock, or one that has exited while
// a process it started keeps the lock file open), or by running processes
// for longer than a writer waits (MaxLockWait).
var ErrLocked = errors.New("mailbox locked")

// ErrMailboxGone: the mailbox's root directory was removed, or replaced by
// another, while this process used it. Nothing is made again in its place:
// a command that outlived its mailbox (a test's, removed with it) ends and
// says so, instead of waiting for a lock in a file no one else can open or
// making a new tree that nobody reads.
var ErrMailboxGone = errors.New("the mailbox directory is gone")

// DefaultLockWait is how long a writer waits for a mailbox lock before it
// asks whether the holder can let it go; writes hold it for milliseconds.
const DefaultLockWait = 10 * time.Second

// DefaultMaxLockWait bounds a writer's wait for a mailbox lock, however
// the holders run: 1,500 senders to one inbox at once on 2 cores all had
// it within 10 s; a wait past a minute is a machine too loaded to write
// (or a holder stuck in the kernel), and the writer says so.
const DefaultMaxLockWait = time.Minute

// StopGrace is how long a lock wait goes on once the store's Life has
// ended: enough for a record made on the way out (a send interrupted
// while typing says how far it got) to take a lock that changes hands
// every few milliseconds, short enough that a signal ends every waiter
// at once, in human terms.
const StopGrace = time.Second

// lockLook is how often a waiter looks whether its lock file is still
// the one at its path: one removed (its directory, or the mailbox) is
// never let go by anyone who could write to the inbox the path now names.
// Each look wakes the waiting process: every 500 ms made 1,500 senders
// waiting for one inbox a quarter slower (half of them done 11.4-12.2 s
// after the lock was let go, against 8.9-9.6 s); every 2 s, no slower
// (6.7-8.1 s against 9.7-10.5 s, on a shared 2-core machine).
const lockLook = 2 * time.Second

// errLockMoved: the lock file was removed, or replaced, while we waited
// for it (or as we took it); the caller makes its directory and tries
// again, unless the mailbox itself has gone.
var errLockMoved = errors.New("the lock file was removed")

// lockTries bounds how often a writer starts over on a lock file removed
// under it: a person cleaning a team twice is conceivable, a loop is not.
const lockTries = 3

// lock takes the exclusive flock on path, a file in a directory of the
// store that it makes (mkdir) if need be, creating the file. The lock is
// on a file of its own rather than on the inbox because compaction
// replaces the inbox's inode; a lock on the old inode would not exclude a
// writer that opened the new one.
//
// A lock file removed under a waiter (a team cleaned, the mailbox
// removed) is seen within lockLook: the writer starts over on the file
// now at the path, or ends with ErrMailboxGone when the mailbox has gone.
func (s *Store) lock(path string) (unlock func(), err error) {
	for range lockTries {
		unlock, err := s.lockFile(path)
		if !errors.Is(err, errLockMoved) && !errors.Is(err, fs.ErrNotExist) {
			return unlock, err
		}
		if gone := s.rootGone(); gone != nil {
			return nil, gone
		}
		if err := s.mkdir(filepath.Dir(path)); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("locking %s: its lock file was removed %d times while this process waited for it", filepath.Base(path), lockTries)
}

// lockFile is one try of lock: the lock on the file at path now.
//
// It waits as long as running processes hold the lock, up to MaxLockWait:
// under load (1,500 senders to one inbox on 2 cores) each holds it in
// turn, and the last of them waits seconds. Every LockWait it asks the
// kernel who holds the lock now (FlockHolders) and gives up with
// ErrLocked, naming the holder, when that one cannot let it go: stopped
// (Ctrl-Z, SIGSTOP), or exited while a process it started keeps the file
// open. The kernel drops the lock of a writer that dies, so a killed
// writer never wedges an inbox. Once the store's Life ends (a signal, the
// command's time bound) it waits StopGrace more, then gives up saying why.
func (s *Store) lockFile(path string) (unlock func(), err error) {
	f, err := plainfile.Open(path, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening lock: %w", err)
	}
	w := lockWait{f: f, dir: filepath.Dir(path), start: time.Now()}
	var stuck error
	err = lock.Wait{
		Life: s.life(), Grace: StopGrace, Most: s.maxLockWait(),
		Path: path, Look: lockLook,
		Every: s.lockWait(), Check: func() error {
			if who, ok := w.holderStuck(); ok {
				stuck = fmt.Errorf("%w: %s is held by %s; waited %s", ErrLocked, path, who, w.waited())
				return stuck
			}
			return nil
		},
	}.Flock(f, unix.LOCK_EX)
	switch {
	case err == nil:
		return func() { f.Close() }, nil // closing releases the flock
	case errors.Is(err, lock.ErrMoved):
		return nil, errLockMoved
	case stuck != nil:
		return nil, stuck
	case errors.Is(err, lock.ErrTooLong):
		return nil, fmt.Errorf("%w: %s is held by %s; waited %s, the longest a write waits for it", ErrLocked, path, w.holders(), w.waited())
	case s.life().Err() != nil:
		// Not naming the holder: that reads /proc/locks, which a
		// thousand writers stopped at once, each reading it, made take
		// longer than the 10 s a stopped command has to end.
		return nil, fmt.Errorf("interrupted (%w) while waiting for %s (waited %s)", err, path, w.waited())
	default:
		return nil, fmt.Errorf("locking %s: %w", filepath.Base(path), err)
	}
}

// lockWait is a writer's wait for a lock another holds.
type lockWait struct {
	f     *os.File // the lock file, its flock asked for
	dir   string
	start time.Time
	dev   *string // how the kernel's lock table names the lock's file system, once found
	// unknown: checks at which it could not be found
	unknown int
	// stuck: the holders the last check found unable to let go. A holder
	// is given up on only when two checks in a row find it so: a Go
	// process's main thread shows as a zombie while its other threads,
	// which still hold its files and so its locks, are exiting.
	stuck []int
}

func (w *lockWait) waited() time.Duration { return time.Since(w.start).Round(time.Millisecond) }

// holders names the processes that hold the lock now, for a writer that
// gives up on a wait: "another process" when the kernel's table cannot
// tell (its directory gone, say).
func (w *lockWait) holders() string {
	if w.dev == nil {
		if dev, ok := lockDevice(w.dir); ok {
			w.dev = &dev
		}
	}
	var pids []int
	if w.dev != nil {
		pids, _ = lock.FlockHolders(w.f, *w.dev)
	}
	if len(pids) == 0 {
		return "another process"
	}
	who := make([]string, len(pids))
	for i, pid := range pids {
		who[i] = fmt.Sprintf("pid %d", pid)
		if cmd := lock.Command(pid); cmd != "" {
			who[i] += " (" + cmd + ")"
		}
	}
	return strings.Join(who, ", ")
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
	if err := plainfile.Fill(f, data, 0); err != nil {
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
