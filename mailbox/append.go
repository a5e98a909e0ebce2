package mailbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentmsg/agentmsg/internal/plainfile"
	"github.com/agentmsg/agentmsg/message"
)

// Box is one agent's inbox in one team.
type Box struct {
	s           *Store
	Team, Agent string
	dir         string
}

// Box returns the inbox of agent in team, checking both names.
func (s *Store) Box(team, agent string) (*Box, error) {
	if err := checkName("team", team); err != nil {
		return nil, err
	}
	if err := checkName("agent", agent); err != nil {
		return nil, err
	}
	return &Box{s: s, Team: team, Agent: agent, dir: filepath.Join(s.teamDir(team), "mailbox")}, nil
}

func (b *Box) path() string     { return filepath.Join(b.dir, b.Agent+".jsonl") }
func (b *Box) lockPath() string { return filepath.Join(b.dir, b.Agent+".lock") }

// ErrInvalidEnvelope is returned by Append for an envelope missing what a
// receiver needs to act on it.
var ErrInvalidEnvelope = errors.New("invalid envelope")

// Append stores env at the end of the inbox and returns once it is on
// disk. A zero Timestamp is set to now.
func (b *Box) Append(env Envelope) error { return b.appendEnvelope(env, synced) }

// AppendBatched stores env as Append does, but leaves making it durable to
// the caller's Store.Sync, which it tells what it wrote: a broadcast writes a hundred inboxes and then
// syncs them all at once, where a hundred fsyncs took a quarter of a second
// (the file system's journal commits them one after another).
func (b *Box) AppendBatched(env Envelope) error { return b.appendEnvelope(env, batched) }

// Sync makes what AppendBatched wrote to this inbox durable: its file, and
// the file's directory entry (the first record made it). For a batch
// that touched a few inboxes; Store.Sync is one call for many (on Linux
// it syncs the whole file system, which a busy machine makes slow).
func (b *Box) Sync() error {
	f, err := os.Open(b.path())
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", b.path(), err)
	}
	return syncDir(b.dir)
}

func (b *Box) appendEnvelope(env Envelope, d durability) error {
	if !message.Valid(string(env.ID)) {
		return fmt.Errorf("%w: id %q is not MSG_<SENDER>_<8 hex>", ErrInvalidEnvelope, env.ID)
	}
	if env.From == "" || env.To == "" || env.Type == "" {
		return fmt.Errorf("%w: %s needs from, to and type", ErrInvalidEnvelope, env.ID)
	}
	if env.Timestamp.IsZero() {
		env.Timestamp = b.s.now()
	}
	env.Timestamp = env.Timestamp.UTC()
	if err := b.appendRecord(env, d); err != nil {
		return fmt.Errorf("storing %s for %s: %w", env.ID, b.Agent, err)
	}
	b.s.emit(b.recorded(env)...)
	return nil
}

// SetDelivery records a new delivery state for message id. It appends an
// update record instead of rewriting the envelope, so the inbox stays
// append-only; readers fold the latest update into the envelope.
func (b *Box) SetDelivery(id message.ID, d Delivery) error {
	if d.Updated.IsZero() {
		d.Updated = b.s.now()
	}
	d.Updated = d.Updated.UTC()
	if b.s.CheckTransitions {
		if err := b.checkTransition(id, d.State); err != nil {
			return err
		}
	}
	// Not fsynced: a delivery record says how far a message got in a tmux
	// pane, and only an OS crash can lose a written line, which takes the
	// tmux server and its panes down with it. Any process crash, agentmsg's
	// included, leaves the line in the page cache for the next reader. The
	// message itself (Append) is fsynced: it must outlive a reboot.
	if err := b.appendRecord(updateRecord{Update: id, Delivery: &d}, cached); err != nil {
		return fmt.Errorf("recording delivery of %s to %s: %w", id, b.Agent, err)
	}
	b.s.emit(b.delivered(id, d))
	return nil
}

// setDeliveryIf records d for message id, as SetDelivery does, only while
// its latest record is still was: the look and the write are one step
// under the inbox lock, so no other record comes between them. ok says
// whether it recorded d (not when the message is not in the inbox).
func (b *Box) setDeliveryIf(id message.ID, was, d Delivery) (ok bool, err error) {
	if d.Updated.IsZero() {
		d.Updated = b.s.now()
	}
	d.Updated = d.Updated.UTC()
	line, err := json.Marshal(updateRecord{Update: id, Delivery: &d})
	if err != nil {
		return false, err
	}
	if err := b.s.mkdir(b.dir); err != nil {
		return false, err
	}
	unlock, err := b.s.lock(b.lockPath())
	if err != nil {
		return false, err
	}
	defer unlock()
	recs, _, err := deliveriesOf(b.path(), id, Position{})
	if err != nil || len(recs) == 0 || !sameDelivery(recs[len(recs)-1], was) {
		return false, err
	}
	if b.s.CheckTransitions && !Allowed(was.State, d.State) {
		return false, &TransitionError{ID: string(id), From: was.State, To: d.State}
	}
	if err := b.appendLocked(append(line, '\n'), cached); err != nil {
		return false, fmt.Errorf("recording delivery of %s to %s: %w", id, b.Agent, err)
	}
	b.s.emit(b.delivered(id, d))
	return true, nil
}

// sameDelivery reports whether a and b are one record.
func sameDelivery(a, b Delivery) bool {
	return a.State == b.State && a.Attempts == b.Attempts && a.LastVerdict == b.LastVerdict &&
		a.Reason == b.Reason && a.Reached == b.Reached && a.Updated.Equal(b.Updated)
}

// checkTransition refuses a change of message id's state that the state
// machine does not list (Transitions). The state a message is recorded in
// is not checked here: tests put messages in every state to start from.
func (b *Box) checkTransition(id message.ID, to DeliveryState) error {
	batch, err := b.s.Read(b.Team, b.Agent)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(batch.Envelopes, func(e Envelope) bool { return e.ID == id })
	if i < 0 {
		return fmt.Errorf("%w: %s in %s/%s, whose state is to change to %s", ErrNoMessage, id, b.Team, b.Agent, to)
	}
	from := Recorded
	if d := batch.Envelopes[i].Delivery; d != nil {
		from = d.State
	}
	if !Allowed(from, to) {
		return &TransitionError{ID: string(id), From: from, To: to}
	}
	return nil
}

// durability says when an appended line is on disk.
type durability int

const (
	// cached: in the page cache (a delivery record; a new file, whose
	// header must not be lost, is fsynced all the same).
	cached  durability = iota
	synced             // fsynced before the append returns
	batched            // the caller syncs the whole store (Store.Sync)
)

// appendRecord writes v as one line: one write(2) of the whole line under
// the inbox lock, then, when durable, fsync. The lock, not O_APPEND alone,
// is what keeps lines whole: O_APPEND makes each write land at the end,
// but a write cut short (SIGKILL, full disk) must not have another
// writer's line glued onto its fragment.
//
// An append that fails takes its bytes back: the inbox is left as it was,
// so a record whose writer was told it failed is never read, and never
// completed by the next append (a message reported failed would come back,
// a retried send would be there twice).
func (b *Box) appendRecord(v any, d durability) error {
	line, err := json.Marshal(v)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	if err := b.s.mkdir(b.dir); err != nil {
		return err
	}
	unlock, err := b.s.lock(b.lockPath())
	if err != nil {
		return err
	}
	defer unlock()
	return b.appendLocked(line, d)
}

// appendLocked is appendRecord of a marshalled line once the caller holds
// the inbox lock.
func (b *Box) appendLocked(line []byte, d durability) error {
	// Open by path only once locked: compaction may have renamed a new
	// file into place while we waited.
	f, err := plainfile.Open(b.path(), os.O_RDWR|os.O_APPEND|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	end, err := cutUnfinished(f)
	if err != nil {
		return err
	}
	if end == 0 {
		// A new file: the header goes out in the same write as the first
		// line, so the file is never seen with a line but no header.
		hdr, err := newHeader(b.s.now())
		if err != nil {
			return err
		}
		line = append(hdr, line...)
	}
	if err := b.writeLine(f, end, line, d); err != nil {
		return errors.Join(err, b.takeBack(f, end, d))
	}
	return nil
}

// writeLine appends line to an inbox whose lines end at end, and makes it
// as durable as d says.
func (b *Box) writeLine(f *os.File, end int64, line []byte, d durability) error {
	if d == batched {
		// For the caller's Store.Sync: the file and, when this makes
		// it, its directory's new entry (also when the write fails and
		// takeBack removes it again).
		dir := ""
		if end == 0 {
			dir = b.dir
		}
		b.s.unsynced.note(b.path(), dir)
	}
	if _, err := f.Write(line); err != nil {
		return err
	}
	if d == batched || (d == cached && end != 0) {
		return nil
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if end == 0 {
		// The file may be new: make its directory entry durable too.
		return syncDir(b.dir)
	}
	return nil
}

// takeBack undoes a failed writeLine: the inbox is cut back to end, and a
// file that had no line is removed, as durably as the append would have
// been, so that a crash cannot bring the record back either.
func (b *Box) takeBack(f *os.File, end int64, d durability) error {
	if end == 0 {
		if err := os.Remove(b.path()); err != nil {
			return fmt.Errorf("removing the inbox its first record failed to make: %w", err)
		}
		if d == batched {
			return nil
		}
		return syncDir(b.dir)
	}
	if err := f.Truncate(end); err != nil {
		return fmt.Errorf("taking the failed record back out of the inbox: %w", err)
	}
	if d == synced {
		return f.Sync()
	}
	return nil
}

// cutUnfinished returns where the inbox's complete lines end, cutting off
// a last line without its newline. Under the inbox lock such a line can
// only be one whose writer died, or failed and could not take it back,
// before it returned: no one was told it was stored. Ending it instead
// would store it, a message reported failed included.
func cutUnfinished(f *os.File) (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	size := st.Size()
	end := int64(0)
	buf := make([]byte, 4096)
	for to := size; to > 0; {
		from := max(0, to-int64(len(buf)))
		chunk := buf[:to-from]
		if _, err := f.ReadAt(chunk, from); err != nil {
			return 0, err
		}
		if i := bytes.LastIndexByte(chunk, '\n'); i >= 0 {
			end = from + int64(i) + 1
			break
		}
		to = from
	}
	if end < size {
		if err := f.Truncate(end); err != nil {
			return 0, fmt.Errorf("cutting off an unfinished last line: %w", err)
		}
	}
	return end, nil
}

// BroadcastError is a broadcast that reached only some inboxes.
type BroadcastError struct {
	Delivered []string
	Failed    map[string]error // by agent
}

func (e *BroadcastError) Error() string {
	names := make([]string, 0, len(e.Failed))
	for n := range e.Failed {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + ": " + e.Failed[n].Error()
	}
	return fmt.Sprintf("stored for %d of %d agents; failed for %s",
		len(e.Delivered), len(e.Delivered)+len(e.Failed), strings.Join(parts, "; "))
}

// AppendMany stores env in the inbox of each agent of team in one step
// (see Intent): a writer that dies part way leaves an intent that Complete
// finishes, never some inboxes with the message and the others without.
// Every agent is tried; if some fail the error is a *BroadcastError naming
// them, and Complete records their copies later.
func (s *Store) AppendMany(team string, agents []string, env Envelope) error {
	// A name that can have no inbox is no copy to come: it fails alone.
	bad := map[string]error{}
	ok := slices.DeleteFunc(slices.Clone(agents), func(a string) bool {
		_, err := s.Box(team, a)
		if err != nil {
			bad[a] = err
		}
		return err != nil
	})
	err := s.appendAll(team, ok, env, nil)
	if len(bad) == 0 {
		return err
	}
	be := &BroadcastError{Delivered: ok, Failed: bad}
	if err != nil && !errors.As(err, &be) {
		return err
	}
	maps.Copy(be.Failed, bad)
	return be
}

// appendAll is AppendMany for an operation that takes place once commit's
// file says so (nil: at once; see Commit). The caller makes that file
// between the intent and the copies: take, when not nil, is called then,
// and reports whether the operation took place.
func (s *Store) appendAll(team string, agents []string, env Envelope, c *committed) error {
	if len(agents) == 0 {
		if c != nil {
			_, err := c.take()
			return err
		}
		return nil
	}
	in := Intent{Env: env, To: make([]Inbox, len(agents))}
	for i, a := range agents {
		in.To[i] = Inbox{Team: team, Agent: a}
	}
	if c != nil {
		in.Commit = &c.Commit
	}
	held, err := s.Intend(in)
	if err != nil {
		return err
	}
	if c != nil {
		took, err := c.take()
		if err != nil || !took {
			// Nothing of it took place: no copy is for anyone.
			return errors.Join(err, held.Done())
		}
	}
	return held.Record()
}

// committed is an operation's Commit and the step that makes its file.
type committed struct {
	Commit
	take func() (bool, error)
}

// newHeader is the first line of a new inbox file.
func newHeader(now time.Time) ([]byte, error) {
	gen, err := message.NewToken("", nil)
	if err != nil {
		return nil, err
	}
	h, err := json.Marshal(headerRecord{Gen: gen, Created: now})
	if err != nil {
		return nil, err
	}
	return append(h, '\n'), nil
}
