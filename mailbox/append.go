package mailbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"

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
// the caller's Store.Sync: a broadcast writes a hundred inboxes and then
// syncs them all at once, where a hundred fsyncs took a quarter of a second
// (the file system's journal commits them one after another).
func (b *Box) AppendBatched(env Envelope) error { return b.appendEnvelope(env, batched) }

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
	// Not fsynced: a delivery record says how far a message got in a tmux
	// pane, and only an OS crash can lose a written line, which takes the
	// tmux server and its panes down with it. Any process crash, agentmsg's
	// included, leaves the line in the page cache for the next reader. The
	// message itself (Append) is fsynced: it must outlive a reboot.
	if err := b.appendRecord(updateRecord{Update: id, Delivery: &d}, cached); err != nil {
		return fmt.Errorf("recording delivery of %s to %s: %w", id, b.Agent, err)
	}
	return nil
}

// appendRecord writes v as one line: one write(2) of the whole line under
// the inbox lock, then, when durable, fsync. The lock, not O_APPEND alone, is what keeps
// lines whole: O_APPEND makes each write land at the end, but a write
// interrupted part way (SIGKILL, full disk) must not have another writer's
// line glued onto its fragment.
// durability says when an appended line is on disk.
type durability int

const (
	// cached: in the page cache (a delivery record; a new file, whose
	// header must not be lost, is fsynced all the same).
	cached  durability = iota
	synced             // fsynced before the append returns
	batched            // the caller syncs the whole store (Store.Sync)
)

func (b *Box) appendRecord(v any, d durability) error {
	line, err := json.Marshal(v)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	if err := b.s.mkdir(b.dir); err != nil {
		return err
	}
	unlock, err := lockFile(b.lockPath(), b.s.lockWait())
	if err != nil {
		return err
	}
	defer unlock()

	// Open by path only once locked: compaction may have renamed a new
	// file into place while we waited.
	f, err := os.OpenFile(b.path(), os.O_RDWR|os.O_APPEND|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if st.Size() == 0 {
		// A new file: the header goes out in the same write as the first
		// line, so the file is never seen with a line but no header.
		hdr, err := newHeader(b.s.now())
		if err != nil {
			return err
		}
		line = append(hdr, line...)
	} else {
		// Under the lock a missing final newline can only be left by a
		// writer that died mid-line. End that fragment so it reads as one
		// corrupt line instead of swallowing ours.
		var last [1]byte
		if _, err := f.ReadAt(last[:], st.Size()-1); err != nil {
			return err
		}
		if last[0] != '\n' {
			line = append([]byte{'\n'}, line...)
		}
	}
	if _, err := f.Write(line); err != nil {
		return err
	}
	if d == batched || (d == cached && st.Size() != 0) {
		return nil
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if st.Size() == 0 {
		// The file may be new: make its directory entry durable too.
		return syncDir(b.dir)
	}
	return nil
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

// AppendMany stores env in the inbox of each agent of team, taking one
// inbox lock at a time (never two at once, so two broadcasts cannot
// deadlock). Every agent is tried; if some fail the error is a
// *BroadcastError naming them.
func (s *Store) AppendMany(team string, agents []string, env Envelope) error {
	if env.Timestamp.IsZero() {
		env.Timestamp = s.now() // one time for all copies
	}
	be := &BroadcastError{Failed: map[string]error{}}
	for _, a := range agents {
		b, err := s.Box(team, a)
		if err == nil {
			err = b.Append(env)
		}
		if err != nil {
			be.Failed[a] = err
			continue
		}
		be.Delivered = append(be.Delivered, a)
	}
	if len(be.Failed) > 0 {
		return be
	}
	return nil
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
