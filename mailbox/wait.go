package mailbox

import (
	"context"
	"fmt"

	"github.com/agentmsg/agentmsg/message"
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
	return s.wait(ctx, team, agent, match, after, false)
}

// WaitSettled is Wait for a reader who asks whether the agent saw a
// message in its pane: a message that a deliverer is typing there, or
// about to (Delivery.UnderWay), is offered to match once the outcome is
// recorded, or once the deliverer records that it waits for the agent.
func (s *Store) WaitSettled(ctx context.Context, team, agent string, match func(Envelope) bool, after Position) (Envelope, error) {
	return s.wait(ctx, team, agent, match, after, true)
}

func (s *Store) wait(ctx context.Context, team, agent string, match func(Envelope) bool, after Position, settled bool) (Envelope, error) {
	b, err := s.Box(team, agent)
	if err != nil {
		return Envelope{}, err
	}
	w, release := s.watchInbox(b.path())
	defer release()
	pos := after
	for {
		changed := w.next()
		// A mailbox removed under the wait reads as an empty inbox for
		// ever: say so instead (the watch wakes us when it is gone).
		if err := s.rootGone(); err != nil {
			return Envelope{}, err
		}
		batch, _, err := readInbox(b.path(), pos)
		if err != nil {
			return Envelope{}, err
		}
		next := batch.End
		for i, e := range batch.Envelopes {
			if settled && e.Delivery.UnderWay() {
				if next == batch.End {
					next = batch.before(i, pos) // read it again once it changes
				}
				continue
			}
			if match(e) {
				return e, nil
			}
		}
		pos = next
		select {
		case <-ctx.Done():
			return Envelope{}, fmt.Errorf("waiting for a message to %s: %w", agent, ctx.Err())
		case <-changed:
		}
	}
}

// WaitDelivery blocks until one of message id's delivery records in
// agent's inbox, taken oldest first, satisfies done, and returns it; or
// until ctx ends. The inbox is read again when it changes (the watch Wait
// uses), and then only what was appended since: it is the record a
// waiter can trust when the event log could not be written.
func (s *Store) WaitDelivery(ctx context.Context, team, agent string, id message.ID, done func(Delivery) bool) (Delivery, error) {
	b, err := s.Box(team, agent)
	if err != nil {
		return Delivery{}, err
	}
	w, release := s.watchInbox(b.path())
	defer release()
	var from Position
	for {
		changed := w.next()
		ds, end, err := deliveriesOf(b.path(), id, from)
		if err != nil {
			return Delivery{}, err
		}
		from = end
		for _, d := range ds {
			if done(d) {
				return d, nil
			}
		}
		select {
		case <-ctx.Done():
			return Delivery{}, fmt.Errorf("waiting for the delivery of %s to %s: %w", id, agent, ctx.Err())
		case <-changed:
		}
	}
}
