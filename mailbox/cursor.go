package mailbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentmsg/agentmsg/eventlog"
	"github.com/agentmsg/agentmsg/message"
)

// A cursor is one reader's Position in one inbox, saved in
// <agent>.cursor.<reader> beside it. It holds the id of the last message
// read as well as the byte offset: the offset is fast, but compaction
// rewrites offsets, and the id lets the reader find its place in the new
// file. Compaction keeps every message a cursor's id names, so the id is
// always there to be found. Translating cursors inside Compact instead
// would race with a reader that has called Unread but not yet Advance: its
// pending offset would belong to a file that no longer exists.

func (b *Box) cursorPath(reader string) string {
	return filepath.Join(b.dir, b.Agent+".cursor."+reader)
}

// Unread returns the messages reader has not yet passed, and the Position
// to give Advance once they are handled. Readers are independent: each
// has its own cursor.
func (s *Store) Unread(team, agent, reader string) (Batch, error) {
	pos, err := s.Cursor(team, agent, reader)
	if err != nil {
		return Batch{}, err
	}
	b, err := s.Box(team, agent)
	if err != nil {
		return Batch{}, err
	}
	batch, _, err := readInbox(b.path(), pos)
	return batch, err
}

// Cursor is reader's saved place in agent's inbox: its unread messages
// are those after it.
func (s *Store) Cursor(team, agent, reader string) (Position, error) {
	b, err := s.Box(team, agent)
	if err != nil {
		return Position{}, err
	}
	if err := checkName("reader", reader); err != nil {
		return Position{}, err
	}
	return b.cursor(reader)
}

// Advance saves reader's cursor at to. Call it only after the messages up
// to to are safely handled: a crash before Advance means they are read
// again, never lost. The write is atomic, so a crash never leaves a
// half-written cursor.
func (s *Store) Advance(team, agent, reader string, to Position) error {
	b, err := s.Box(team, agent)
	if err != nil {
		return err
	}
	if err := checkName("reader", reader); err != nil {
		return err
	}
	data, err := json.Marshal(to)
	if err != nil {
		return err
	}
	if err := b.s.mkdir(b.dir); err != nil {
		return err
	}
	// No inbox lock: compaction reads cursors under the lock, and a cursor
	// saved after that read is at or past the one it saw, so every message
	// the new cursor names was kept as unread.
	if err := writeFileAtomic(b.cursorPath(reader), data); err != nil {
		return fmt.Errorf("saving cursor of %s on %s: %w", reader, agent, err)
	}
	return nil
}

// cursor returns reader's saved Position; the start for a new reader.
func (b *Box) cursor(reader string) (Position, error) {
	data, err := os.ReadFile(b.cursorPath(reader))
	if errors.Is(err, os.ErrNotExist) {
		return Position{}, nil
	}
	if err != nil {
		return Position{}, fmt.Errorf("reading cursor of %s on %s: %w", reader, b.Agent, err)
	}
	var p Position
	if err := json.Unmarshal(data, &p); err != nil {
		// Rereading everything is safe; refusing to read is not.
		return Position{}, nil
	}
	return p, nil
}

// cursors returns every saved cursor of the inbox, by reader.
func (b *Box) cursors() (map[string]Position, error) {
	prefix := b.Agent + ".cursor."
	ents, err := os.ReadDir(b.dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	out := map[string]Position{}
	for _, e := range ents {
		reader, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || checkName("reader", reader) != nil {
			continue
		}
		p, err := b.cursor(reader)
		if err != nil {
			return nil, err
		}
		out[reader] = p
	}
	return out, nil
}

// AdvanceShown moves reader's cursor on agent's inbox past the unread
// messages in shown, but never past one that was not shown: it stops
// before the first unread message missing from shown, so that a filtered
// read (by sender, type, reply) never skips a message for good. It returns
// how many unread messages were not shown.
func (s *Store) AdvanceShown(team, agent, reader string, shown map[message.ID]bool) (left int, err error) {
	batch, err := s.Unread(team, agent, reader)
	if err != nil {
		return 0, err
	}
	n := 0
	for n < len(batch.Envelopes) && shown[batch.Envelopes[n].ID] {
		n++
	}
	for _, e := range batch.Envelopes {
		if !shown[e.ID] {
			left++
		}
	}
	if n == 0 {
		return left, nil
	}
	defer func() {
		if err == nil {
			read := make([]eventlog.Event, n)
			for i, e := range batch.Envelopes[:n] {
				read[i] = eventlog.Event{Type: eventlog.MessageRead, Team: team, Agent: agent, Message: string(e.ID), From: e.From, Detail: "by " + reader}
			}
			s.emit(read...)
		}
	}()
	to := batch.End
	if n < len(batch.Envelopes) {
		// Not at the end: the position after message n-1 is found again
		// by its id (a position of no generation always is).
		to = Position{LastID: batch.Envelopes[n-1].ID}
	}
	return left, s.Advance(team, agent, reader, to)
}
