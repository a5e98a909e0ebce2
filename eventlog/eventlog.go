// Package eventlog is the durable, ordered record of everything that
// happens to messages and agents: a message recorded, typed, submitted,
// deferred (and why), read, claimed, answered; an agent appearing, busy,
// ready, in a dialog, gone. Every process that changes the mailbox appends
// here (the CLI, hooks, MCP servers, the daemon), so a client that follows
// the log (agentmsg events, the daemon's /v1/events, the terminal UI)
// learns of a change whoever made it.
//
// Each event has an id that only grows: the byte offset of its line in the
// whole log, counted across rotations. A client that saw id N asks for
// what comes after N and misses nothing, sees nothing twice, whichever
// side restarted in between (Syncthing's events and SSE's Last-Event-ID
// work the same way).
//
// Files: <dir>/events-<base>.jsonl, base being the id of its first byte.
// Appends take an flock and write one line; a file past MaxSize is closed
// and the next one starts at base+size. The oldest files are removed
// beyond Keep; a client that asks for an id they held is told so
// (ErrExpired) and starts again from the oldest kept.
//
// An event that cannot be written (a full disk) is not dropped without a
// word: the log counts it in its lock file, in a region written while
// there was room (so that counting needs no new block), and the next
// append that succeeds, from whichever process, writes an events.lost
// event first, saying how many were lost and since when. An id is a byte
// offset, so the ids alone would show no gap.
package eventlog

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentmsg/agentmsg/internal/plainfile"
	"github.com/agentmsg/agentmsg/lock"
)

// Event is one change. Which fields are set depends on Type.
type Event struct {
	ID   int64     `json:"id"`
	Time time.Time `json:"time"`
	// Type is what happened: one of Kinds.
	Type Type `json:"type"`
	// Place is the tmux server (canonical socket) the agent lives on.
	Place   string `json:"place,omitempty"`
	Team    string `json:"team,omitempty"`
	Agent   string `json:"agent,omitempty"`
	Message string `json:"message_id,omitempty"`
	From    string `json:"from,omitempty"`
	// Reason says why, for a deferral or a failure ("timeout",
	// "behind_older", "dialog", ...), or what else a person needs.
	Reason string `json:"reason,omitempty"`
	Detail string `json:"detail,omitempty"`
	// State is the message's delivery state, or the agent's screen state.
	State string `json:"state,omitempty"`
	Pane  string `json:"pane,omitempty"`
	// Lost is, in an events.lost event, how many events could not be
	// written since Since (when the first of them could not).
	Lost  int64     `json:"lost,omitempty"`
	Since time.Time `json:"since,omitzero"`
}

// Defaults bound the log: about 64 MiB of the newest events.
const (
	DefaultMaxSize = 16 << 20
	DefaultKeep    = 4
)

// An append waits for the log's lock at most DefaultMaxLockWait, and
// LockGrace once its Life has ended. A writer holds the lock for one
// write (no fsync); the bound is for a holder that stopped (Ctrl-Z),
// which used to keep every writer waiting as long (a send, a deliver, the
// daemon), signals or not. It is not shorter because a loaded machine is
// not a stopped holder: with 5 s, eight writers and a rotation under a
// CI run beside others (load 80) gave up on 3 of 400 events. An event
// says what the mailbox already says: one given up on is lost to the
// log's readers only (and told: TypeLost).
const (
	DefaultMaxLockWait = 30 * time.Second
	LockGrace          = time.Second
)

// Log is an event log in Dir. Use it through a pointer: its appends wait
// for each other (see Append).
type Log struct {
	Dir string
	// Within, when set, is the directory Dir is in (the mailbox's root):
	// Dir is made only while it exists, so a log whose mailbox was removed
	// under a running process fails instead of making that again.
	Within  string
	MaxSize int64 // a file past this many bytes is rotated; 0: DefaultMaxSize
	Keep    int   // files kept; 0: DefaultKeep
	Now     func() time.Time
	// Warn, when set, hears of events that could not be written
	// (charmbracelet/log's Logger.Warn fits): at the first failure, at
	// most every warnEvery while they go on, and when the log is written
	// again.
	Warn func(msg any, keyvals ...any)

	// loss is what this process could not write and could not count in
	// the lock file either; warned is when Warn last heard of a failure
	// (zero: the last append went through). Only the one writing uses
	// them (see Append).
	loss   Loss
	warned time.Time
	// appendFile writes a batch (tests fail it); nil: f.Write.
	appendFile func(f *os.File, b []byte) (int, error)
	// Life is the life of the process's command (or daemon): once it
	// ends, an append waiting for the log's lock gives up (LockGrace
	// later). nil never ends.
	Life context.Context
	// MaxLockWait bounds an append's wait for the lock; 0 is
	// DefaultMaxLockWait.
	MaxLockWait time.Duration

	mu      sync.Mutex
	turn    *sync.Cond // on mu: a write ended
	queue   []*appendCall
	writing bool
	// last is the base of the file this log wrote last (wrote: it has
	// written), used by the one writing (see newest).
	last  int64
	wrote bool
}

// appendCall is one Append waiting to be written.
type appendCall struct {
	events []Event
	out    []Event
	err    error
	done   bool
}

// ErrExpired: the events asked for were rotated away.
var ErrExpired = errors.New("those events are no longer kept")

func (l *Log) maxSize() int64 {
	if l.MaxSize > 0 {
		return l.MaxSize
	}
	return DefaultMaxSize
}

func (l *Log) keep() int {
	if l.Keep > 0 {
		return l.Keep
	}
	return DefaultKeep
}

func (l *Log) now() time.Time {
	if l.Now != nil {
		return l.Now().UTC()
	}
	return time.Now().UTC()
}

// Append records events in order and returns them with their ids and
// times set. It is safe across processes. The lines stay in the page
// cache, not fsynced: an event says what the mailbox (which is fsynced
// where it matters) already says, and only an OS crash loses a written
// line.
//
// Appends made at once in one process are written together (a group
// commit): while one writes, the others wait, and the next to write takes
// every one waiting in one write under the log's lock. A broadcast to a
// hundred agents appends four hundred events, each alone a dozen system
// calls.
func (l *Log) Append(events ...Event) ([]Event, error) {
	if len(events) == 0 {
		return nil, nil
	}
	c := &appendCall{events: events}
	l.mu.Lock()
	if l.turn == nil {
		l.turn = sync.NewCond(&l.mu)
	}
	l.queue = append(l.queue, c)
	for l.writing && !c.done {
		l.turn.Wait()
	}
	if c.done {
		l.mu.Unlock()
		return c.out, c.err
	}
	l.writing = true
	calls := l.queue
	l.queue = nil
	l.mu.Unlock()

	var all []Event
	for _, w := range calls {
		all = append(all, w.events...)
	}
	out, err := l.write(all)
	l.mu.Lock()
	for _, w := range calls {
		w.done, w.err = true, err
		if err == nil {
			w.out, out = out[:len(w.events):len(w.events)], out[len(w.events):]
		}
	}
	l.writing = false
	l.turn.Broadcast()
	l.mu.Unlock()
	return c.out, c.err
}

// write appends events in one write under the log's lock, after an
// events.lost event when some before them could not be written, and
// counts them as lost when they cannot be written either.
func (l *Log) write(events []Event) ([]Event, error) {
	lf, err := l.lock()
	if err != nil {
		l.lose(nil, Loss{}, len(events), err)
		return nil, err
	}
	defer lf.Close()
	counted := readLedger(lf)
	untold := counted.add(l.loss)
	out, err := l.writeLocked(events, untold)
	if err != nil {
		l.lose(lf, counted, len(events), err)
		return nil, err
	}
	l.told(lf, counted, untold)
	return out, nil
}

// writeLocked is write's work under the lock: events, after the event of
// lost when there is one.
func (l *Log) writeLocked(events []Event, lost Loss) ([]Event, error) {
	base, f, err := l.newest()
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	size := st.Size()
	if size, err = cutFragment(f, size); err != nil {
		f.Close()
		return nil, err
	}
	if size >= l.maxSize() {
		f.Close()
		base += size
		if f, err = plainfile.Open(l.path(base), os.O_RDWR|os.O_APPEND|os.O_CREATE|unix.O_NOFOLLOW, 0o600); err != nil {
			return nil, err
		}
		size = 0
		bases, err := l.bases()
		if err != nil {
			f.Close()
			return nil, err
		}
		l.trim(bases)
	}
	l.last, l.wrote = base, true
	defer f.Close()
	var buf bytes.Buffer
	out := make([]Event, len(events))
	now := l.now()
	if lost.Count > 0 {
		line, err := json.Marshal(lost.event(base+size, now))
		if err != nil {
			return nil, err
		}
		buf.Write(line)
		buf.WriteByte('\n')
	}
	for i, e := range events {
		e.ID = base + size + int64(buf.Len())
		if e.Time.IsZero() {
			e.Time = now
		}
		line, err := json.Marshal(e)
		if err != nil {
			return nil, err
		}
		buf.Write(line)
		buf.WriteByte('\n')
		out[i] = e
	}
	if _, err := l.writeFile(f, buf.Bytes()); err != nil {
		// A line cut short would be skipped by readers but shift the
		// ids after it: take it back.
		_ = f.Truncate(size)
		return nil, fmt.Errorf("appending to the event log: %w", err)
	}
	return out, nil
}

func (l *Log) writeFile(f *os.File, b []byte) (int, error) {
	if l.appendFile != nil {
		return l.appendFile(f, b)
	}
	return f.Write(b)
}

// lock takes the log's lock, making its directory when there is none
// (see Within), waiting as MaxLockWait and Life say.
func (l *Log) lock() (*os.File, error) {
	path := filepath.Join(l.Dir, "events.lock")
	lf, err := plainfile.Open(path, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	if errors.Is(err, fs.ErrNotExist) {
		if err := l.mkdir(); err != nil {
			return nil, err
		}
		lf, err = plainfile.Open(path, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	}
	if err != nil {
		return nil, err
	}
	most := l.MaxLockWait
	if most <= 0 {
		most = DefaultMaxLockWait
	}
	w := lock.Wait{Life: l.Life, Grace: LockGrace, Most: most, Path: path, Look: 2 * time.Second}
	if err := w.Flock(lf, unix.LOCK_EX); err != nil {
		return nil, fmt.Errorf("locking the event log: %w", err)
	}
	return lf, nil
}

// mkdir makes Dir: in Within only while that exists.
func (l *Log) mkdir() error {
	if l.Within == "" {
		return os.MkdirAll(l.Dir, 0o700)
	}
	if _, err := os.Lstat(l.Within); err != nil {
		return fmt.Errorf("the event log's directory %s: %w", l.Within, err)
	}
	// Mkdir, not MkdirAll: Within gone since the look above stays gone.
	if err := os.Mkdir(l.Dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
}

// newest opens the newest file, to append to it, and returns its base.
// The file this log wrote last is still the newest while it is under
// MaxSize (a writer starts the next file only once the newest has reached
// it), so the directory is listed only when that one has grown, or gone:
// a write used to list it each time, a third of an append's cost. The
// caller holds the log's lock.
func (l *Log) newest() (int64, *os.File, error) {
	if l.wrote {
		f, err := plainfile.Open(l.path(l.last), os.O_RDWR|os.O_APPEND|unix.O_NOFOLLOW, 0)
		if err == nil {
			if st, err := f.Stat(); err == nil && st.Size() < l.maxSize() {
				return l.last, f, nil
			}
			f.Close()
		}
	}
	bases, err := l.bases()
	if err != nil {
		return 0, nil, err
	}
	base := int64(0)
	if len(bases) > 0 {
		base = bases[len(bases)-1]
	}
	f, err := plainfile.Open(l.path(base), os.O_RDWR|os.O_APPEND|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	return base, f, err
}

// cutFragment cuts off an unfinished last line (a writer killed while
// writing it, under the lock, so no one is writing it now) and returns the
// size that is left: an append right after it would be swallowed.
func cutFragment(f *os.File, size int64) (int64, error) {
	if size == 0 {
		return 0, nil
	}
	var last [1]byte
	if _, err := f.ReadAt(last[:], size-1); err != nil {
		return size, err
	}
	if last[0] == '\n' {
		return size, nil
	}
	tail := min(size, 1<<20) // a line is far shorter
	buf := make([]byte, tail)
	if _, err := f.ReadAt(buf, size-tail); err != nil {
		return size, err
	}
	keep := size - tail + int64(bytes.LastIndexByte(buf, '\n')+1)
	if i := bytes.LastIndexByte(buf, '\n'); i < 0 && tail < size {
		return size, nil // no line end in reach: leave it
	}
	return keep, f.Truncate(keep)
}

// trim removes the oldest files beyond Keep.
func (l *Log) trim(bases []int64) {
	for len(bases) > l.keep() {
		os.Remove(l.path(bases[0]))
		bases = bases[1:]
	}
}

func (l *Log) path(base int64) string {
	return filepath.Join(l.Dir, "events-"+strconv.FormatInt(base, 10)+".jsonl")
}

// bases lists the files' bases, oldest first.
func (l *Log) bases() ([]int64, error) {
	ents, err := os.ReadDir(l.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []int64
	for _, e := range ents {
		s, ok := strings.CutPrefix(e.Name(), "events-")
		if !ok {
			continue
		}
		s, ok = strings.CutSuffix(s, ".jsonl")
		if n, err := strconv.ParseInt(s, 10, 64); ok && err == nil && n >= 0 {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out, nil
}

// Since returns up to max events with ids above after (-1: from the
// oldest kept), oldest first, and the id to ask after next time (the last
// event's, or after itself when there is none). ErrExpired when events
// right after after were rotated away: the caller has missed some, and
// restarts from the oldest kept (-1).
func (l *Log) Since(after int64, max int) ([]Event, int64, error) {
	bases, err := l.bases()
	if err != nil || len(bases) == 0 {
		return nil, after, err
	}
	if after >= 0 && after+1 < bases[0] {
		return nil, after, fmt.Errorf("%w: the oldest kept event is %d, asked for after %d", ErrExpired, bases[0], after)
	}
	var out []Event
	next := after
	for i, base := range bases {
		if i+1 < len(bases) && bases[i+1] <= after+1 {
			continue // wholly at or before after
		}
		f, err := os.Open(l.path(base))
		if errors.Is(err, fs.ErrNotExist) {
			continue // rotated away meanwhile
		}
		if err != nil {
			return out, next, err
		}
		start := int64(0)
		if after+1 > base {
			start = after + 1 - base
		}
		evs, err := readFrom(f, base, start, max-len(out))
		f.Close()
		if err != nil {
			return out, next, err
		}
		for _, e := range evs {
			if e.ID > after {
				out = append(out, e)
				next = e.ID
			}
		}
		if len(out) >= max {
			break
		}
	}
	return out, next, nil
}

// readFrom reads whole lines of f from offset start on (a line starting
// exactly there, or the first one after), up to max events.
func readFrom(f *os.File, base, start int64, max int) ([]Event, error) {
	if max <= 0 {
		return nil, nil
	}
	if start > 0 {
		// Back up one byte: if it is a newline, a line starts at start.
		if _, err := f.Seek(start-1, io.SeekStart); err != nil {
			return nil, err
		}
	}
	r := bufio.NewReaderSize(f, 64<<10)
	if start > 0 {
		if _, err := r.ReadSlice('\n'); err != nil {
			return nil, nil // nothing whole after start
		}
	}
	var out []Event
	for len(out) < max {
		line, err := r.ReadBytes('\n')
		if err != nil {
			break // the end, or a line still being written
		}
		var e Event
		if json.Unmarshal(line, &e) != nil || e.ID < base {
			continue
		}
		out = append(out, e)
	}
	return out, nil
}

// Last is the id of the newest event, -1 when there is none: where a
// follower that wants only what comes next starts.
func (l *Log) Last() (int64, error) {
	bases, err := l.bases()
	if err != nil || len(bases) == 0 {
		return -1, err
	}
	for i := len(bases) - 1; i >= 0; i-- {
		line, err := lastLine(l.path(bases[i]))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return -1, err
		}
		if len(line) == 0 {
			continue
		}
		var e Event
		if json.Unmarshal(line, &e) == nil {
			return e.ID, nil
		}
	}
	return -1, nil
}

// lastLine is the last line of the file at path, without its newline, read
// from the end of the file: a file holds up to MaxSize bytes, and every
// send asks where the log ends (it read all of it).
func lastLine(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := st.Size()
	for chunk := int64(64 << 10); ; chunk *= 4 {
		from := max(0, size-chunk)
		buf := make([]byte, size-from)
		if _, err := f.ReadAt(buf, from); err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		buf = bytes.TrimSuffix(buf, []byte("\n"))
		if i := bytes.LastIndexByte(buf, '\n'); i >= 0 || from == 0 {
			return buf[i+1:], nil
		}
	}
}
