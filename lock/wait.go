package lock

import (
	"context"
	"errors"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// ErrMoved: the lock file waited for was removed, or another file put at
// its path, while the waiter waited (its directory removed, say): whoever
// writes what the path names now locks the file there, never this one.
var ErrMoved = errors.New("the lock file was removed")

// ErrTooLong: a wait for a lock reached its bound (Wait.Most).
var ErrTooLong = errors.New("waited too long for the lock")

// Wait is a wait for an flock in the kernel, which wakes a waiter as the
// lock is let go: 1,500 processes waiting for one lock there were through
// in 10 s, where polling for it (sleeping up to 5 ms between tries) took
// 197 s. The mailbox's and the event log's locks are taken this way, by
// many processes at once; a pane's (Dir) polls, since its waiters are
// few and its holders hand over a look.
//
// A blocked flock(2) cannot be called off (Go's signal handlers restart
// it), so it runs on a thread of its own and the wait watches it: the
// wait ends when the lock is ours, when Life has ended (Grace later),
// when Most has passed, when the file is no longer at Path, or when Check
// says so. A flock left behind closes the file as soon as it answers,
// which lets the lock go at once; in a process that lives on (the
// daemon) its thread waits until then, and a command exits.
type Wait struct {
	// Life is the life of the caller (a command, the daemon): once it
	// ends, the wait goes on for Grace, then ends with its cause. nil
	// never ends.
	Life  context.Context
	Grace time.Duration
	// Most bounds the wait (ErrTooLong); 0 is no bound of its own.
	Most time.Duration
	// Path is where the file was opened: every Look the wait checks that
	// the file is still the one there (ErrMoved when not), and once more
	// when it has the lock.
	Path string
	Look time.Duration
	// Check, when set, is called every Every: an error ends the wait
	// with it (a holder that cannot let go, say).
	Check func() error
	Every time.Duration
}

// Flock takes the flock how (LOCK_EX or LOCK_SH) on f, at once when it is
// free, else waiting as w says. On error f is closed, now or by the flock
// left behind once it answers: the caller no longer has it.
func (w Wait) Flock(f *os.File, how int) error {
	err := flock(f, how|unix.LOCK_NB)
	if err == nil {
		return nil
	}
	if !errors.Is(err, unix.EWOULDBLOCK) {
		f.Close()
		return err
	}
	got := make(chan error, 1)
	go func() { got <- flock(f, how) }()
	answered, err := w.watch(f, got)
	switch {
	case err == nil:
	case answered:
		f.Close()
	default:
		go func() {
			<-got
			f.Close()
		}()
	}
	return err
}

// watch waits for got (the flock's answer) or for a reason to stop
// waiting, and says whether the flock has answered.
func (w Wait) watch(f *os.File, got <-chan error) (answered bool, err error) {
	life := w.Life
	if life == nil {
		life = context.Background()
	}
	look := ticker(w.Look)
	defer look.Stop()
	check := ticker(w.Every)
	defer check.Stop()
	var bound <-chan time.Time
	if w.Most > 0 {
		t := time.NewTimer(w.Most)
		defer t.Stop()
		bound = t.C
	}
	stopping := life.Done()
	var grace <-chan time.Time
	for {
		select {
		case err := <-got:
			if err == nil && !same(f, w.Path) {
				err = ErrMoved
			}
			return true, err
		case <-look.C:
			if !same(f, w.Path) {
				return false, ErrMoved
			}
		case <-check.C:
			if w.Check != nil {
				if err := w.Check(); err != nil {
					return false, err
				}
			}
		case <-bound:
			return false, ErrTooLong
		case <-stopping:
			stopping = nil
			t := time.NewTimer(w.Grace)
			defer t.Stop()
			grace = t.C
		case <-grace:
			return false, context.Cause(life)
		}
	}
}

// ticker ticks every d; never when d is 0.
func ticker(d time.Duration) *time.Ticker {
	if d <= 0 {
		t := time.NewTicker(time.Hour)
		t.Stop()
		return t
	}
	return time.NewTicker(d)
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
