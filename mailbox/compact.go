package mailbox

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Retention bounds an inbox. A zero field is no bound; the zero Retention
// keeps every message and only folds updates into their envelopes.
type Retention struct {
	MaxCount int           // keep at most the newest MaxCount messages...
	MaxAge   time.Duration // ...that are younger than MaxAge
	// MinDrop: rewrite the inbox only when it drops at least this many
	// messages, one past MaxAge, or a corrupt or torn line. The compaction
	// a send or a deliver runs on the side sets it, so that an inbox whose
	// messages must all be kept is not rewritten by every send.
	MinDrop int
}

// CompactResult says what Compact did.
type CompactResult struct {
	Kept, Dropped int
	Corrupt       int  // unparsable lines dropped
	Torn          bool // a line left unfinished by a dead writer was dropped
	Rewritten     bool // false when there was nothing to change
}

// Compact rewrites agent's inbox to the messages r retains, folding each
// delivery update into its envelope. Beyond r it never drops a message
// that a saved cursor has not passed, the last message a cursor passed
// (its anchor, see Position), one whose delivery is still outstanding, or
// one the agent itself has not seen: neither passed by its own cursor nor
// typed into its pane (DeliveryState.Seen). An agent that never saved a
// cursor has read nothing. Other readers that never saved a cursor are not
// protected.
//
// The new file is written beside the inbox, fsynced and renamed over it
// under the inbox lock, so writers wait and a crash at any instant leaves
// either the old file or the new one, each complete. A compaction killed
// before its rename leaves its new file beside the inbox; the next one
// removes it.
func (s *Store) Compact(team, agent string, r Retention) (CompactResult, error) {
	b, err := s.Box(team, agent)
	if err != nil {
		return CompactResult{}, err
	}
	res, err := b.compact(r)
	if err != nil {
		return res, fmt.Errorf("compacting inbox of %s: %w", agent, err)
	}
	return res, nil
}

func (b *Box) compact(r Retention) (CompactResult, error) {
	if _, err := os.Stat(b.path()); os.IsNotExist(err) {
		return CompactResult{}, nil
	}
	unlock, err := b.s.lock(b.lockPath())
	if err != nil {
		return CompactResult{}, err
	}
	defer unlock()
	if err := b.removeTemps(); err != nil {
		return CompactResult{}, err
	}

	data, err := os.ReadFile(b.path())
	if err != nil {
		return CompactResult{}, err
	}
	sc := parse(data, 0)
	// Cursors are read under the lock; see Advance for why a cursor saved
	// after this point is still safe.
	cursors, err := b.cursors()
	if err != nil {
		return CompactResult{}, err
	}
	keep := b.retain(sc, cursors, r)

	res := CompactResult{Corrupt: len(sc.corrupt), Torn: sc.torn > 0}
	expired := 0 // dropped for their age
	now := b.s.now()
	for i, k := range keep {
		switch {
		case k:
			res.Kept++
		case r.MaxAge > 0 && now.Sub(sc.entries[i].env.Timestamp) >= r.MaxAge:
			expired++
		}
	}
	res.Dropped = len(keep) - res.Kept
	clean := res.Corrupt == 0 && !res.Torn && sc.gen != ""
	// MinDrop spares a rewrite for a few messages over the count; a
	// message past its age goes whatever the count.
	if clean && (res.Dropped == 0 && sc.updates == 0 || r.MinDrop > 0 && res.Dropped < r.MinDrop && expired == 0) {
		return res, nil
	}

	hdr, err := newHeader(b.s.now())
	if err != nil {
		return res, err
	}
	out := make([]byte, 0, len(data))
	out = append(out, hdr...)
	for i, e := range sc.entries {
		if !keep[i] {
			continue
		}
		line, err := json.Marshal(e.env)
		if err != nil {
			return res, err
		}
		out = append(append(out, line...), '\n')
	}
	tmp, err := writeTemp(b.dir, b.tempPrefix()+"*", out)
	if err != nil {
		return res, err
	}
	if err := os.Rename(tmp, b.path()); err != nil {
		os.Remove(tmp)
		return res, err
	}
	res.Rewritten = true
	return res, syncDir(b.dir)
}

// tempPrefix begins the name of the new file a compaction writes before
// it renames it over the inbox. Names have no '.', so no other inbox's
// temp file begins so.
func (b *Box) tempPrefix() string { return "." + b.Agent + ".jsonl.tmp" }

// removeTemps removes the new files of compactions killed before their
// rename, each a full copy of the inbox. Only a compaction holding the
// inbox's lock writes one, and the caller holds it: none is being written.
func (b *Box) removeTemps() error {
	ents, err := os.ReadDir(b.dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), b.tempPrefix()) {
			continue
		}
		if err := os.Remove(filepath.Join(b.dir, e.Name())); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("removing a killed compaction's %s: %w", e.Name(), err)
		}
	}
	return nil
}

// retain decides, per entry, whether compaction keeps it.
func (b *Box) retain(sc *scan, cursors map[string]Position, r Retention) []bool {
	n := len(sc.entries)
	firstUnread := n
	anchors := map[int]bool{}
	for reader, c := range cursors {
		i := sc.after(c)
		if i > 0 {
			anchors[i-1] = true
		}
		if reader != b.Agent {
			firstUnread = min(firstUnread, i)
		}
	}
	// The owner's cursor; the zero Position (nothing read) when it has
	// none. What it saw in its pane counts as read.
	ownerUnread := sc.after(cursors[b.Agent])
	now := b.s.now()
	keep := make([]bool, n)
	retained := 0
	for i := n - 1; i >= 0; i-- {
		e := sc.entries[i].env
		young := r.MaxAge <= 0 || now.Sub(e.Timestamp) < r.MaxAge
		if young && (r.MaxCount <= 0 || retained < r.MaxCount) {
			keep[i] = true
			retained++
		}
		unseen := i >= ownerUnread && (e.Delivery == nil || !e.Delivery.State.Seen())
		if i >= firstUnread || unseen || anchors[i] || (e.Delivery != nil && e.Delivery.State.Outstanding()) {
			keep[i] = true
		}
	}
	return keep
}
