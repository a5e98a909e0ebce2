package mailbox

import (
	"context"
	"fmt"
)

// Wait blocks until a message matching match is in agent's inbox after
// position after, and returns it; or until ctx ends. Messages already
// there after after count, so nothing appended between taking a Position
// and calling Wait is missed.
//
// Every Wait on one inbox in this process shares one look at the file per
// PollInterval (10ms by default; see inboxWatch): the wake-up comes within
// one interval, and a waiter costs nothing while nothing changes.
func (s *Store) Wait(ctx context.Context, team, agent string, match func(Envelope) bool, after Position) (Envelope, error) {
	b, err := s.Box(team, agent)
	if err != nil {
		return Envelope{}, err
	}
	w, release := s.watchInbox(b.path())
	defer release()
	pos := after
	for {
		changed := w.next()
		batch, _, err := readInbox(b.path(), pos)
		if err != nil {
			return Envelope{}, err
		}
		for _, e := range batch.Envelopes {
			if match(e) {
				return e, nil
			}
		}
		pos = batch.End
		select {
		case <-ctx.Done():
			return Envelope{}, fmt.Errorf("waiting for a message to %s: %w", agent, ctx.Err())
		case <-changed:
		}
	}
}
