package mailbox

import (
	"os"
	"sync"
	"time"
)

// inboxWatch polls one inbox file for every Wait on it in this process:
// one stat per PollInterval however many wait, so that a waiter costs a
// goroutine asleep on a channel and nothing more (10,000 waits that each
// polled kept a core busy).
type inboxWatch struct {
	users int // guarded by the Store's watches.mu

	mu      sync.Mutex
	changed chan struct{} // closed when the file changes, then replaced
	stop    chan struct{}
}

// watchSet is a Store's watches, by inbox path.
type watchSet struct {
	mu sync.Mutex
	by map[string]*inboxWatch
}

// watchInbox is the watch of the inbox at path, started by its first
// user; release ends the use, and the last release stops the polling. A
// Store not made by New has no watches to share: each use gets its own.
func (s *Store) watchInbox(path string) (w *inboxWatch, release func()) {
	ws := s.watches
	if ws == nil {
		ws = &watchSet{by: map[string]*inboxWatch{}}
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	w, ok := ws.by[path]
	if !ok {
		w = &inboxWatch{changed: make(chan struct{}), stop: make(chan struct{})}
		// The first look is taken before any user reads: a change between
		// that read and the poller's start is then a change it sees.
		go w.poll(path, statFile(path), s.pollInterval(), s.rootGone)
		ws.by[path] = w
	}
	w.users++
	return w, func() {
		ws.mu.Lock()
		defer ws.mu.Unlock()
		if w.users--; w.users == 0 {
			delete(ws.by, path)
			close(w.stop)
		}
	}
}

// next is closed at the first change after this call. A user takes it
// before reading the inbox, so a change after that read always wakes it.
func (w *inboxWatch) next() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.changed
}

// poll looks at the file every interval and wakes the users when its size
// or inode changed: a stat is cheap, works on any filesystem, and sees both
// appends and compaction's rename. Every rootLook it also asks gone
// whether the mailbox was removed, and wakes the users when it was (an
// inbox that never was does not change when its mailbox goes).
func (w *inboxWatch) poll(path string, last fileState, every time.Duration, gone func() error) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	next := time.Now().Add(rootLook)
	for {
		select {
		case <-w.stop:
			return
		case <-tick.C:
		}
		st := statFile(path)
		changed := st != last
		if now := time.Now(); !changed && now.After(next) {
			next = now.Add(rootLook)
			changed = gone() != nil
		}
		if changed {
			last = st
			w.mu.Lock()
			close(w.changed)
			w.changed = make(chan struct{})
			w.mu.Unlock()
		}
	}
}

// rootLook is how often a watch asks whether the mailbox is still there.
const rootLook = time.Second

// statFile is what the file at path looks like now; a missing one is the
// zero state, so its creation is a change.
func statFile(path string) fileState {
	fi, err := os.Stat(path)
	if err != nil {
		return fileState{}
	}
	return statOf(fi)
}

func (s *Store) pollInterval() time.Duration {
	if s.PollInterval > 0 {
		return s.PollInterval
	}
	return 10 * time.Millisecond
}
