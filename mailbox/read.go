package mailbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"syscall"

	"github.com/agentmsg/agentmsg/message"
)

// Batch is the result of reading an inbox.
type Batch struct {
	// Envelopes are the complete messages read, in append order, each with
	// the latest delivery update (seen in this read) folded in.
	Envelopes []Envelope
	// End is where the next read should start: after the last complete
	// line. A last line still being written is not included and is read
	// once it is complete.
	End Position
	// Corrupt lists complete lines that did not parse. They are skipped
	// so that one bad line cannot hide the rest of the inbox.
	Corrupt []CorruptLine

	starts []int64 // where each envelope's line starts, in generation End.Gen
}

// before is the position just before envelope i, which after is just
// before the first of.
func (b Batch) before(i int, after Position) Position {
	if i == 0 {
		return after
	}
	return Position{Gen: b.End.Gen, Offset: b.starts[i], LastID: b.Envelopes[i-1].ID}
}

// CorruptLine is a complete inbox line that is not a valid record.
type CorruptLine struct {
	Offset int64 // where the line starts, in generation Batch.End.Gen
	Err    error
}

func (c CorruptLine) Error() string { return fmt.Sprintf("inbox line at byte %d: %v", c.Offset, c.Err) }

// Read returns every message in agent's inbox.
func (s *Store) Read(team, agent string) (Batch, error) {
	b, err := s.Box(team, agent)
	if err != nil {
		return Batch{}, err
	}
	batch, _, err := readInbox(b.path(), Position{})
	return batch, err
}

// fileState identifies what a read saw, so Wait can tell when the inbox
// has grown or been replaced since.
type fileState struct {
	ino  uint64
	size int64
}

func statOf(fi os.FileInfo) fileState {
	st := fileState{size: fi.Size()}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.ino = sys.Ino
	}
	return st
}

// readInbox reads the messages after from. All reads go through one open
// file, so a compaction renaming a new file into place mid-read cannot mix
// two generations; the next read sees the new one.
func readInbox(path string, from Position) (Batch, fileState, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return Batch{End: from}, fileState{}, nil
	}
	if err != nil {
		return Batch{}, fileState{}, fmt.Errorf("opening inbox: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Batch{}, fileState{}, fmt.Errorf("opening inbox: %w", err)
	}
	st := statOf(fi)

	gen, err := readGen(f, st.size)
	if err != nil {
		return Batch{}, st, err
	}
	fast := from.Offset == 0 && from.LastID == ""
	if from.Gen == gen && from.Offset >= 0 && from.Offset <= st.size {
		fast = true // same generation: the offset is exact
	}
	if fast {
		data, err := readAt(f, from.Offset, st.size)
		if err != nil {
			return Batch{}, st, err
		}
		sc := parse(data, from.Offset)
		sc.gen = gen
		return sc.batch(0, from.LastID), st, nil
	}
	// The inbox was compacted (or recreated) since from was taken: find
	// the last message read by its id.
	data, err := readAt(f, 0, st.size)
	if err != nil {
		return Batch{}, st, err
	}
	sc := parse(data, 0)
	i := sc.after(from)
	anchor := message.ID("")
	if i > 0 {
		anchor = sc.entries[i-1].env.ID
	}
	return sc.batch(i, anchor), st, nil
}

func readAt(f *os.File, from, to int64) ([]byte, error) {
	data := make([]byte, to-from)
	if _, err := f.ReadAt(data, from); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("reading inbox: %w", err)
	}
	return data, nil
}

// readGen returns the generation named by the header line, or "" for a
// file without one.
func readGen(f *os.File, size int64) (string, error) {
	buf := make([]byte, min(size, 256))
	if _, err := f.ReadAt(buf, 0); err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("reading inbox: %w", err)
	}
	nl := bytes.IndexByte(buf, '\n')
	if nl < 0 {
		return "", nil
	}
	var h headerRecord
	if json.Unmarshal(buf[:nl], &h) != nil {
		return "", nil
	}
	return h.Gen, nil
}

// scan is one parsed stretch of an inbox.
type scan struct {
	gen     string
	entries []entry
	end     int64 // absolute offset just after the last complete line
	torn    int64 // bytes after end: a line not yet (or never) complete
	updates int   // update records folded or dropped
	corrupt []CorruptLine
}

type entry struct {
	env        Envelope
	start, end int64
}

// completeLines yields each complete line of data with the offset it
// starts at, without its newline: a last line without one is still being
// written (or was cut short), and is left.
func completeLines(data []byte) iter.Seq2[int, []byte] {
	return func(yield func(int, []byte) bool) {
		for off := 0; ; {
			nl := bytes.IndexByte(data[off:], '\n')
			if nl < 0 || !yield(off, data[off:off+nl]) {
				return
			}
			off += nl + 1
		}
	}
}

// parse reads the complete lines of data, which starts at offset base.
func parse(data []byte, base int64) *scan {
	sc := &scan{end: base}
	byID := map[message.ID]int{}
	for off, line := range completeLines(data) {
		start := base + int64(off)
		sc.end = start + int64(len(line)) + 1
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		r, err := decodeLine(line)
		if err != nil {
			sc.corrupt = append(sc.corrupt, CorruptLine{Offset: start, Err: err})
			continue
		}
		switch {
		case r.Gen != "":
			if start == 0 {
				sc.gen = r.Gen
			}
		case r.Update != "":
			sc.updates++
			if i, ok := byID[r.Update]; ok {
				sc.entries[i].env.Delivery = r.Delivery // latest wins
			}
		default:
			byID[r.ID] = len(sc.entries)
			sc.entries = append(sc.entries, entry{env: r.Envelope, start: start, end: sc.end})
		}
	}
	sc.torn = base + int64(len(data)) - sc.end
	return sc
}

// decodeLine decodes one inbox line that is a record: the header (Gen), an
// update with its delivery, or a message with a valid id.
func decodeLine(line []byte) (record, error) {
	var r record
	if err := json.Unmarshal(line, &r); err != nil {
		return r, err
	}
	switch {
	case r.Gen != "":
	case r.Update != "":
		if r.Delivery == nil {
			return r, errors.New("update without delivery")
		}
	case !message.Valid(string(r.ID)):
		return r, fmt.Errorf("no valid message id (%q)", r.ID)
	}
	return r, nil
}

// after returns the index of the first entry after pos.
func (sc *scan) after(pos Position) int {
	if pos.Gen == sc.gen && pos.Offset <= sc.end {
		for i, e := range sc.entries {
			if e.start >= pos.Offset {
				return i
			}
		}
		return len(sc.entries)
	}
	if pos.LastID != "" {
		for i := len(sc.entries) - 1; i >= 0; i-- {
			if sc.entries[i].env.ID == pos.LastID {
				return i + 1
			}
		}
	}
	// The anchor is gone (or there never was one): start over. A reader
	// may see a message twice, but never misses one.
	return 0
}

// batch returns the entries from index i; lastID is the message before
// them.
func (sc *scan) batch(i int, lastID message.ID) Batch {
	b := Batch{Corrupt: sc.corrupt}
	if n := len(sc.entries) - i; n > 0 {
		b.Envelopes, b.starts = make([]Envelope, n), make([]int64, n)
		for j, e := range sc.entries[i:] {
			b.Envelopes[j], b.starts[j] = e.env, e.start
		}
		lastID = b.Envelopes[n-1].ID
	}
	b.End = Position{Gen: sc.gen, Offset: sc.end, LastID: lastID}
	return b
}

// Holds reports whether team/agent's inbox holds message id.
func (s *Store) Holds(team, agent string, id message.ID) bool {
	b, err := s.Read(team, agent)
	if err != nil {
		return false
	}
	for _, e := range b.Envelopes {
		if e.ID == id {
			return true
		}
	}
	return false
}

// DeliverySince is message id's latest delivery update appended to
// agent's inbox after from (the End of an earlier read of it): changed is
// false when none was, and ok is false when the inbox was compacted or
// replaced since from (the caller reads it whole). It decodes only the
// lines that name id. A deliverer that
// checked each message of a long inbox before typing it re-read the whole
// inbox each time, which was most of a busy daemon's work.
func (s *Store) DeliverySince(team, agent string, id message.ID, from Position) (d Delivery, changed, ok bool, err error) {
	got, _, ok, err := s.updatesSince(team, agent, from, id)
	d, changed = got[id]
	return d, changed, ok, err
}

// UpdatesSince reads only what was appended to agent's inbox after from
// (the End of an earlier read, or of UpdatesSince), and returns the latest
// delivery update of each message, and where the next call starts. ok is
// false when the inbox was compacted or replaced since from: the caller
// reads it whole (Read) and starts again from that read's End.
func (s *Store) UpdatesSince(team, agent string, from Position) (got map[message.ID]Delivery, end Position, ok bool, err error) {
	return s.updatesSince(team, agent, from, "")
}

// updatesSince is UpdatesSince for message only, or for every message
// when only is "": a line that does not name it is not decoded.
func (s *Store) updatesSince(team, agent string, from Position, only message.ID) (got map[message.ID]Delivery, end Position, ok bool, err error) {
	b, err := s.Box(team, agent)
	if err != nil {
		return nil, from, false, err
	}
	f, err := os.Open(b.path())
	if err != nil {
		return nil, from, false, nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, from, false, err
	}
	gen, err := readGen(f, fi.Size())
	if err != nil || from.Gen != gen || from.Offset <= 0 || from.Offset > fi.Size() {
		return nil, from, false, err
	}
	data, err := readAt(f, from.Offset, fi.Size())
	if err != nil {
		return nil, from, false, err
	}
	got, end = map[message.ID]Delivery{}, from
	marker := []byte(`"update":`) // every update line names this
	if only != "" {
		marker = []byte(`"` + string(only) + `"`)
	}
	for off, line := range completeLines(data) {
		end.Offset = from.Offset + int64(off+len(line)+1)
		if !bytes.Contains(line, marker) { // decode only what may be wanted
			continue
		}
		if r, err := decodeLine(line); err == nil && r.Update != "" && r.Delivery != nil && (only == "" || r.Update == only) {
			got[r.Update] = *r.Delivery // latest wins
		}
	}
	return got, end, true, nil
}

// deliveriesOf is every delivery record of message id in the inbox at
// path after from (the end of an earlier call; the zero Position: all),
// oldest first: the record it was appended with, then each update, and
// where the next call starts. An inbox compacted or replaced since from
// is read whole again; compaction folds a message's updates into its
// envelope, so only the latest is left of those.
func deliveriesOf(path string, id message.ID, from Position) ([]Delivery, Position, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, Position{}, nil
	}
	if err != nil {
		return nil, from, fmt.Errorf("opening inbox: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, from, fmt.Errorf("opening inbox: %w", err)
	}
	gen, err := readGen(f, fi.Size())
	if err != nil {
		return nil, from, err
	}
	start := int64(0)
	if from.Gen == gen && from.Offset > 0 && from.Offset <= fi.Size() {
		start = from.Offset
	}
	data, err := readAt(f, start, fi.Size())
	if err != nil {
		return nil, from, err
	}
	end := Position{Gen: gen, Offset: start}
	marker := []byte(`"` + string(id) + `"`)
	var out []Delivery
	for off, line := range completeLines(data) {
		end.Offset = start + int64(off+len(line)+1)
		if !bytes.Contains(line, marker) { // decode only what names it
			continue
		}
		r, err := decodeLine(line)
		switch {
		case err != nil || r.Gen != "":
		case r.Update == id:
			out = append(out, *r.Delivery)
		case r.Update == "" && r.ID == id && r.Delivery != nil:
			out = append(out, *r.Delivery)
		}
	}
	return out, end, nil
}
