package mailbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentmsg/agentmsg/internal/plainfile"
	"github.com/agentmsg/agentmsg/message"
)

// A message for several inboxes (a broadcast, a request to a team, the
// notice that a request expired) is recorded in one step: first its
// intent, one file naming the message and every inbox it is for, made
// durable; then the copies; then the intent goes. A writer that dies (or
// fails) in between leaves the intent, and Complete records each copy it
// names that an inbox lacks. A crash at any moment therefore leaves no copy
// (no intent yet: the message was never taken) or, once completed, every
// copy. Without it, a daemon SIGKILLed while it recorded a broadcast to 12
// agents left the message in 9 inboxes for good (issue 29).
//
// The writer holds an flock on the intent file itself from before it is
// seen under its name until it is removed, so that Complete never records
// copies that a live writer is about to record: Complete takes the same
// lock first, and the kernel lets it go with the writer, however it dies.

// Intent is a message on its way into several inboxes.
type Intent struct {
	// Env is the message as an inbox that lacks it gets it: its Delivery is
	// the state of a copy recorded late (pending: the next deliver types
	// it), and its Timestamp is the writer's, for every copy.
	Env Envelope `json:"envelope"`
	To  []Inbox  `json:"to"`
	// Commit, when set, says whether the operation the message is part of
	// took place; without its file (or with another content), the writer
	// died before it did, and no copy is recorded.
	Commit *Commit `json:"commit,omitempty"`
}

// Commit is a file that an operation makes, after its intent, to take
// place: a request's file, the mark that one nudger tells a team of an
// expired request.
type Commit struct {
	File  string `json:"file"`            // relative to the place's directory
	Holds string `json:"holds,omitempty"` // when set, the file's whole content
}

// ErrBadIntent: an intent that cannot be recorded as given.
var ErrBadIntent = errors.New("invalid intent")

func (s *Store) intentDir() string { return filepath.Join(s.home(), "intents") }

func (s *Store) intentPath(id message.ID) string {
	return filepath.Join(s.intentDir(), string(id)+".json")
}

// Intended is an intent its writer holds: Done once every copy is recorded
// and durable (or the operation did not take place), Leave when it could
// not record them all.
type Intended struct {
	s    *Store
	in   Intent
	path string
	f    *os.File // holds the lock
}

// Intend makes in durable under its message's id and holds it. An intent
// for that id already there is ErrIntentExists: an earlier writer's, which
// Complete finishes.
func (s *Store) Intend(in Intent) (*Intended, error) {
	if !message.Valid(string(in.Env.ID)) || len(in.To) == 0 {
		return nil, fmt.Errorf("%w: message %q for %d inboxes", ErrBadIntent, in.Env.ID, len(in.To))
	}
	for _, to := range in.To {
		if _, err := s.Box(to.Team, to.Agent); err != nil {
			return nil, err
		}
	}
	if in.Env.Timestamp.IsZero() {
		in.Env.Timestamp = s.now() // one time for every copy, late ones too
	}
	in.Env.Timestamp = in.Env.Timestamp.UTC()
	data, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	dir := s.intentDir()
	if err := s.mkdir(dir); err != nil {
		return nil, err
	}
	path := s.intentPath(in.Env.ID)
	f, err := writeLocked(dir, "."+filepath.Base(path)+".tmp*", data)
	if err != nil {
		return nil, fmt.Errorf("recording the intent of %s: %w", in.Env.ID, err)
	}
	tmp := f.Name()
	// Link, not rename: a second writer of the same id must not replace
	// the first's intent (a retry finishes it instead).
	err = os.Link(tmp, path)
	os.Remove(tmp)
	if err == nil {
		if err = syncDir(dir); err != nil {
			os.Remove(path) // not durable, so not taken: no copy is for anyone
		}
	}
	if err != nil {
		f.Close()
		if errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("%w: %s", ErrIntentExists, in.Env.ID)
		}
		return nil, fmt.Errorf("recording the intent of %s: %w", in.Env.ID, err)
	}
	return &Intended{s: s, in: in, path: path, f: f}, nil
}

// ErrIntentExists: a message's intent is there already.
var ErrIntentExists = errors.New("the message's intent is recorded already")

// writeLocked writes data to a new fsynced temp file in dir and returns it
// open, flocked.
func writeLocked(dir, pattern string, data []byte) (*os.File, error) {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return nil, err
	}
	if err = flock(f, unix.LOCK_EX|unix.LOCK_NB); err == nil {
		if _, err = f.Write(data); err == nil {
			err = f.Sync()
		}
	}
	if err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	return f, nil
}

// Done removes the intent and lets it go: every copy is recorded and
// durable, or the operation did not take place. Its removal need not be
// durable: an intent that comes back after a crash names no copy that an
// inbox lacks, and Complete only removes it.
func (i *Intended) Done() error {
	defer i.f.Close()
	if err := os.Remove(i.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing the intent of %s: %w", i.in.Env.ID, err)
	}
	return nil
}

// Leave lets the intent go and keeps it: some copies could not be
// recorded now, and Complete records them later.
func (i *Intended) Leave() { i.f.Close() }

// Record appends a copy of the message to each inbox the intent names,
// makes them durable at once (one Store.Sync) and is Done. Copies that
// cannot be recorded now are a *BroadcastError (by agent; Delivered names
// those recorded), and the intent stays for Complete.
func (i *Intended) Record() error {
	be := &BroadcastError{Failed: map[string]error{}}
	for _, to := range i.in.To {
		b, err := i.s.Box(to.Team, to.Agent)
		if err == nil {
			err = b.AppendBatched(i.in.Env)
		}
		if err != nil {
			be.Failed[to.Agent] = err
			continue
		}
		be.Delivered = append(be.Delivered, to.Agent)
	}
	if err := i.s.Sync(); err != nil {
		for _, a := range be.Delivered {
			be.Failed[a] = err // written, maybe not durable: Complete sees
		}
		be.Delivered = nil
	}
	if len(be.Failed) > 0 {
		i.Leave()
		return be
	}
	// Every copy is durable: an intent that could not be removed names
	// none that an inbox lacks, and the next Complete removes it.
	_ = i.Done()
	return nil
}

// Intent reads the intent of message id, if there is one: a writer at
// work on it, or one that died before it recorded every copy.
func (s *Store) Intent(id message.ID) (Intent, bool, error) {
	if !message.Valid(string(id)) {
		return Intent{}, false, nil
	}
	data, err := os.ReadFile(s.intentPath(id))
	if errors.Is(err, os.ErrNotExist) {
		return Intent{}, false, nil
	}
	if err != nil {
		return Intent{}, false, err
	}
	var in Intent
	if err := json.Unmarshal(data, &in); err != nil {
		return Intent{}, false, fmt.Errorf("reading the intent of %s: %w", id, err)
	}
	return in, true, nil
}

// Complete finishes every intent whose writer is gone: each copy it names
// that an inbox lacks is recorded (as the intent's Env says), and the
// intent removed. One whose writer is at work is left to it. It returns
// the intents it finished.
func (s *Store) Complete() ([]Intent, error) {
	ents, err := os.ReadDir(s.intentDir())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var (
		done []Intent
		errs []error
	)
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || !message.Valid(id) {
			continue // a temp file, or not ours
		}
		in, ok, err := s.completeOne(context.Background(), message.ID(id), false)
		if err != nil {
			errs = append(errs, err)
		}
		if ok {
			done = append(done, in)
		}
	}
	return done, errors.Join(errs...)
}

// CompleteID finishes the intent of message id as Complete does, waiting
// (until ctx ends) for a writer at work on it to let it go. ok is false
// when there was none to finish.
func (s *Store) CompleteID(ctx context.Context, id message.ID) (Intent, bool, error) {
	return s.completeOne(ctx, id, true)
}

// completeOne finishes the intent of id once it holds its lock; without
// wait, one held by a writer is left.
func (s *Store) completeOne(ctx context.Context, id message.ID, wait bool) (Intent, bool, error) {
	path := s.intentPath(id)
	f, err := plainfile.Open(path, os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if errors.Is(err, os.ErrNotExist) {
		return Intent{}, false, nil
	}
	if err != nil {
		return Intent{}, false, err
	}
	defer f.Close()
	if err := lockIntent(ctx, f, wait); err != nil {
		if errors.Is(err, unix.EWOULDBLOCK) {
			return Intent{}, false, nil // its writer is at work
		}
		return Intent{}, false, fmt.Errorf("waiting for the writer of %s: %w", id, err)
	}
	if !sameFile(f, path) {
		return Intent{}, false, nil // its writer (or another completer) removed it
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return Intent{}, false, err
	}
	var in Intent
	if err := json.Unmarshal(data, &in); err != nil {
		return Intent{}, false, fmt.Errorf("reading the intent of %s: %w", id, err)
	}
	took, err := s.tookPlace(in.Commit)
	if err != nil {
		return Intent{}, false, fmt.Errorf("the intent of %s: %w", id, err)
	}
	if took {
		if err := s.recordMissing(in); err != nil {
			return Intent{}, false, fmt.Errorf("completing %s: %w", id, err)
		}
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return Intent{}, false, err
	}
	return in, took, nil
}

// lockIntent takes f's lock: at once, or, with wait, once its holder lets
// it go (a writer holds it for the moments it records copies).
func lockIntent(ctx context.Context, f *os.File, wait bool) error {
	for {
		err := flock(f, unix.LOCK_EX|unix.LOCK_NB)
		if !wait || !errors.Is(err, unix.EWOULDBLOCK) {
			return err
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// sameFile reports whether the open f is still the file at path.
func sameFile(f *os.File, path string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Lstat(path)
	return err == nil && os.SameFile(a, b)
}

// tookPlace reports whether c's operation took place (no Commit: yes).
func (s *Store) tookPlace(c *Commit) (bool, error) {
	if c == nil {
		return true, nil
	}
	if c.File == "" || filepath.IsAbs(c.File) || strings.HasPrefix(filepath.Clean(c.File), "..") {
		return false, fmt.Errorf("%w: commit file %q", ErrBadIntent, c.File)
	}
	data, err := os.ReadFile(filepath.Join(s.home(), c.File))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return c.Holds == "" || bytes.Equal(data, []byte(c.Holds)), nil
}

// recordMissing appends in's message to each inbox it names that lacks
// it, and makes them durable.
func (s *Store) recordMissing(in Intent) error {
	var errs []error
	for _, to := range in.To {
		held, err := s.holds(to.Team, to.Agent, in.Env.ID)
		if err == nil && !held {
			var b *Box
			if b, err = s.Box(to.Team, to.Agent); err == nil {
				err = b.AppendBatched(in.Env)
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s/%s: %w", to.Team, to.Agent, err))
		}
	}
	errs = append(errs, s.Sync())
	return errors.Join(errs...)
}

// holds reports whether team/agent's inbox holds message id; an inbox
// that cannot be read is an error, never a no (a copy recorded twice
// would be typed twice).
func (s *Store) holds(team, agent string, id message.ID) (bool, error) {
	b, err := s.Read(team, agent)
	if err != nil {
		return false, err
	}
	for _, e := range b.Envelopes {
		if e.ID == id {
			return true, nil
		}
	}
	return false, nil
}

// commitFile is path as a Commit names it: relative to the place's
// directory.
func (s *Store) commitFile(path string) (string, error) {
	return filepath.Rel(s.home(), path)
}

// flock is flock(2) on f, again when a signal interrupts it. Intents take
// their locks without waiting (LOCK_NB), so no wait here needs a bound.
func flock(f *os.File, how int) error {
	for {
		err := unix.Flock(int(f.Fd()), how)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}
