package courier

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
)

// A person who watches the agents settles what delivery could not: a
// message left in the box (typed), one whose fate nobody can tell
// (unknown), one that failed. Each change is recorded in the inbox like
// any delivery step, under the locks a deliverer takes, so that no pass
// or sender types the message while its record changes.

// StateError: the message is in a state the change does not apply to.
type StateError struct {
	ID     message.ID
	State  mailbox.DeliveryState
	Change string // "handled", "retried"
	Want   []mailbox.DeliveryState
}

func (e *StateError) Error() string {
	return fmt.Sprintf("%s is %s: only a message that is %s can be %s", e.ID, e.State, wordsOr(e.Want), e.Change)
}

// ErrBeingTyped: a sender or deliverer is typing the message right now.
var ErrBeingTyped = errors.New("the message is being typed right now; try again when its delivery has ended")

// handleable are the states a person may mark handled: every one that is
// not settled yet, or ended without the agent taking it.
var handleable = []mailbox.DeliveryState{mailbox.StatePending, mailbox.StateDeferred, mailbox.StateTyping, mailbox.StateTyped, mailbox.StateFailed}

// retryable are the states a person may send back to deliver after
// looking at the pane: those a delivery ended in without proof.
var retryable = []mailbox.DeliveryState{mailbox.StateTyped, mailbox.StateFailed}

// markWait bounds the wait for a deliverer at work on the inbox.
const markWait = 5 * time.Second

// MarkHandled records that a person dealt with message id of team/agent's
// inbox by hand (typed it themselves, or decided it is not needed): it is
// never typed again, and how far earlier attempts got is kept.
func (c *Courier) MarkHandled(ctx context.Context, team, agent string, id message.ID) (mailbox.Delivery, error) {
	return c.mark(ctx, team, agent, id, "handled", handleable, func(d mailbox.Delivery) mailbox.Delivery {
		return mailbox.Delivery{State: mailbox.StateHandled, Attempts: d.Attempts, Reached: d.Reached,
			LastVerdict: "handled by a person", Updated: c.now()}
	})
}

// Reopen sends a message whose delivery ended typed or failed (an unknown
// verdict among them) back to deliver, once a person has looked at the
// agent's pane: it is pending again, with no step of it known to have
// reached the pane. The next deliver still looks for it first (a receipt,
// its id above the box, exactly its text in the box, which is then only
// submitted) and types it again only where none shows.
func (c *Courier) Reopen(ctx context.Context, team, agent string, id message.ID) (mailbox.Delivery, error) {
	return c.mark(ctx, team, agent, id, "retried", retryable, func(d mailbox.Delivery) mailbox.Delivery {
		return mailbox.Delivery{State: mailbox.StatePending, Attempts: d.Attempts,
			LastVerdict: "retried by a person who looked at the pane", Updated: c.now()}
	})
}

// mark records change(current) for message id, when it is in one of
// want, holding the inbox's deliverer lock (no pass is at work on it) and
// the message's typing lock (no sender is typing it).
func (c *Courier) mark(ctx context.Context, team, agent string, id message.ID, change string, want []mailbox.DeliveryState, next func(mailbox.Delivery) mailbox.Delivery) (mailbox.Delivery, error) {
	box, err := c.Store.Box(team, agent)
	if err != nil {
		return mailbox.Delivery{}, err
	}
	lctx, cancel := context.WithTimeout(ctx, markWait)
	unlock, err := c.Locks.Kept(lctx, "deliver-"+team+"-"+agent)
	cancel()
	if err != nil {
		return mailbox.Delivery{}, fmt.Errorf("waiting for the deliverer of %s/%s: %w", team, agent, err)
	}
	defer unlock()
	unlockTyping, free := c.tryTyping(id)
	if !free {
		return mailbox.Delivery{}, fmt.Errorf("%s: %w", id, ErrBeingTyped)
	}
	defer unlockTyping()
	env, err := c.find(team, agent, id)
	if err != nil {
		return mailbox.Delivery{}, err
	}
	if env.Delivery == nil || !slices.Contains(want, env.Delivery.State) {
		st := mailbox.StateInbox
		if env.Delivery != nil {
			st = env.Delivery.State
		}
		return mailbox.Delivery{}, &StateError{ID: id, State: st, Change: change, Want: want}
	}
	rec := next(*env.Delivery)
	if err := box.SetDelivery(id, rec); err != nil {
		return mailbox.Delivery{}, err
	}
	return rec, nil
}

// find reads message id of team/agent's inbox as it is now.
func (c *Courier) find(team, agent string, id message.ID) (mailbox.Envelope, error) {
	b, err := c.Store.Read(team, agent)
	if err != nil {
		return mailbox.Envelope{}, err
	}
	for _, e := range b.Envelopes {
		if e.ID == id {
			return e, nil
		}
	}
	return mailbox.Envelope{}, fmt.Errorf("%w: %s is not in the inbox of %s/%s", mailbox.ErrNoMessage, id, team, agent)
}

// wordsOr lists states as "a, b or c".
func wordsOr(states []mailbox.DeliveryState) string {
	s := ""
	for i, st := range states {
		switch {
		case i == 0:
		case i == len(states)-1:
			s += " or "
		default:
			s += ", "
		}
		s += string(st)
	}
	return s
}
