package eventlog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Loss is what could not be written to the log and is not yet told in it.
type Loss struct {
	Count int64     `json:"lost"`
	Since time.Time `json:"since,omitzero"` // when the first of them could not be written
	Last  time.Time `json:"last,omitzero"`  // when the last of them could not be
	Err   string    `json:"error,omitempty"`
}

// add is the loss of l and m together.
func (l Loss) add(m Loss) Loss {
	if m.Count == 0 {
		return l
	}
	if l.Count == 0 {
		return m
	}
	out := l
	out.Count += m.Count
	if m.Since.Before(out.Since) {
		out.Since, out.Err = m.Since, m.Err
	}
	if m.Last.After(out.Last) {
		out.Last = m.Last
	}
	return out
}

// event is the events.lost event of l, at id.
func (l Loss) event(id int64, now time.Time) Event {
	return Event{ID: id, Time: now, Type: TypeLost, Lost: l.Count, Since: l.Since, Reason: lossReason(l.Err),
		Detail: fmt.Sprintf("%d events from %s to %s could not be written (%s): every message's state is in its inbox",
			l.Count, l.Since.Format(time.RFC3339), l.Last.Format(time.RFC3339), l.Err)}
}

// lossReason is the one word for why events were lost.
func lossReason(err string) string {
	if strings.Contains(err, unix.ENOSPC.Error()) || strings.Contains(err, unix.EDQUOT.Error()) {
		return "no_space"
	}
	return "write_failed"
}

// The ledger is the first ledgerSize bytes of the lock file: the loss not
// yet told, as JSON padded with spaces, or only spaces. Its bytes are
// written once while the disk has room (a lock file made by an older
// agentmsg is empty), so that counting a loss overwrites them and needs
// no new block of a full file system. It is read and written under the
// log's lock only.
const ledgerSize = 512

// readLedger is the loss the lock file counts, zero when it counts none
// or cannot be read. A lock file shorter than the ledger (new, or made by
// an older agentmsg) gets its blank ledger now, while there may be room.
func readLedger(lf *os.File) Loss {
	var buf [ledgerSize]byte
	n, err := lf.ReadAt(buf[:], 0)
	if n < ledgerSize && (err == nil || errors.Is(err, io.EOF)) {
		_ = writeLedger(lf, Loss{}) // no room: the next append tries again
	}
	l, _ := parseLedger(buf[:n]) // one that does not parse counts nothing
	return l
}

// parseLedger is the loss a ledger's bytes count.
func parseLedger(b []byte) (Loss, error) {
	var l Loss
	if b = bytes.Trim(b, " \x00\n"); len(b) == 0 {
		return l, nil
	}
	if err := json.Unmarshal(b, &l); err != nil {
		return Loss{}, fmt.Errorf("reading the count of lost events: %w", err)
	}
	return l, nil
}

// writeLedger counts l in the lock file (zero: none).
func writeLedger(lf *os.File, l Loss) error {
	buf := bytes.Repeat([]byte{' '}, ledgerSize)
	buf[ledgerSize-1] = '\n'
	if l.Count > 0 {
		b, err := json.Marshal(l)
		for err == nil && len(b) >= ledgerSize && l.Err != "" {
			l.Err = l.Err[:len(l.Err)/2] // an error's text is what may be long
			b, err = json.Marshal(l)
		}
		if err != nil {
			return err
		}
		copy(buf, b)
	}
	_, err := lf.WriteAt(buf, 0)
	return err
}

// lose counts n events that could not be written because of err, besides
// what the lock file lf counted already (nil: it could not be opened, and
// this process remembers them until it can).
func (l *Log) lose(lf *os.File, counted Loss, n int, err error) {
	now := l.now()
	this := Loss{Count: int64(n), Since: now, Last: now, Err: err.Error()}
	switch {
	case lf == nil:
		l.loss = l.loss.add(this)
	case writeLedger(lf, counted.add(l.loss).add(this)) == nil:
		l.loss = Loss{}
	default:
		l.loss = l.loss.add(this)
	}
	l.warnLost(now, counted.add(l.loss), err)
}

// warnEvery spaces the warnings of a failure that goes on.
const warnEvery = 10 * time.Second

// warnLost warns of events that could not be written: the first of a
// run at once, later ones at most every warnEvery.
func (l *Log) warnLost(now time.Time, untold Loss, err error) {
	if l.Warn == nil || (!l.warned.IsZero() && now.Sub(l.warned) < warnEvery) {
		return
	}
	msg := "the event log could not be written: its readers miss these changes until it can (every message's state is in its inbox)"
	if !l.warned.IsZero() {
		msg = "the event log still cannot be written"
	}
	l.warned = now
	l.Warn(msg, "dir", l.Dir, "lost", untold.Count, "since", untold.Since.Format(time.RFC3339), "err", err)
}

// told clears the loss that an append has just told (untold: what the
// lock file counted, and this process, before it).
func (l *Log) told(lf *os.File, counted, untold Loss) {
	l.loss = Loss{}
	if counted.Count > 0 {
		if err := writeLedger(lf, Loss{}); err != nil && l.Warn != nil {
			l.Warn("the event log could not clear its count of lost events: they may be told again", "dir", l.Dir, "err", err)
		}
	}
	switch {
	case l.Warn == nil:
	case untold.Count > 0:
		l.Warn("the event log is written again; an events.lost event tells its readers what they missed", "dir", l.Dir,
			"lost", untold.Count, "since", untold.Since.Format(time.RFC3339))
	case !l.warned.IsZero():
		l.Warn("the event log is written again; an events.lost event told its readers what they missed", "dir", l.Dir)
	}
	l.warned = time.Time{}
}

// Lost is the loss not yet told in the log, counted in its lock file by
// any process: what an events.lost event will say once the log can be
// written again. It takes no lock: it may be a moment behind.
func (l *Log) Lost() (Loss, error) {
	f, err := os.Open(filepath.Join(l.Dir, "events.lock"))
	if errors.Is(err, os.ErrNotExist) {
		return Loss{}, nil
	}
	if err != nil {
		return Loss{}, err
	}
	defer f.Close()
	var buf [ledgerSize]byte
	n, err := f.ReadAt(buf[:], 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return Loss{}, err
	}
	return parseLedger(buf[:n])
}
