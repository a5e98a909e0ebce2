package mailbox

import (
	"context"
	"fmt"
	"os"
	"time"
)

// Wait blocks until a message matching match is in agent's inbox after
// position after, and returns it; or until ctx ends. Messages already
// there after after count, so nothing appended between taking a Position
// and calling Wait is missed.
//
// It polls the inbox's size and inode every PollInterval (10ms by
// default): a stat is cheap, works on any filesystem, and sees both
// appends and compaction's rename; the wake-up comes within one interval.
func (s *Store) Wait(ctx context.Context, team, agent string, match func(Envelope) bool, after Position) (Envelope, error) {
	b, err := s.Box(team, agent)
	if err != nil {
		return Envelope{}, err
	}
	interval := s.PollInterval
	if interval <= 0 {
		interval = 10 * time.Millisecond
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()

	pos := after
	for {
		batch, seen, err := readInbox(b.path(), pos)
		if err != nil {
			return Envelope{}, err
		}
		for _, e := range batch.Envelopes {
			if match(e) {
				return e, nil
			}
		}
		pos = batch.End
		for changed := false; !changed; {
			select {
			case <-ctx.Done():
				return Envelope{}, fmt.Errorf("waiting for a message to %s: %w", agent, ctx.Err())
			case <-tick.C:
			}
			if fi, err := os.Stat(b.path()); err == nil {
				changed = statOf(fi) != seen
			}
		}
	}
}
