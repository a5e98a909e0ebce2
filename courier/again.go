package courier

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/agentmsg/agentmsg/broadcast"
	"github.com/agentmsg/agentmsg/delivery"
	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
	"github.com/agentmsg/agentmsg/target"
)

// IDTakenError: a message with the id its writer chose is recorded already
// (or on its way into inboxes), and it is not the same message, or not to
// the same team: a retry must be the message it retries.
type IDTakenError struct {
	ID          message.ID
	Team, Agent string // an inbox that holds it ("" when only its intent does)
	Why         string // what differs
}

func (e *IDTakenError) Error() string {
	where := "on its way into inboxes"
	if e.Agent != "" {
		where = "in " + e.Team + "/" + e.Agent + "'s inbox"
	}
	return fmt.Sprintf("%s %s, %s", e.ID, where, e.Why)
}

// BroadcastOnce is Broadcast of a message whose id its writer chose (an app
// that must learn its fate even if it never gets the answer): when that id
// is recorded already, or was on its way into the inboxes when its sender
// died, this is a retry. The same message (sender, type, text, metadata)
// to the same team finishes it: the copies that inboxes lack are recorded,
// the copies not yet typed are typed (after what waits before them, as
// their send would have), and each copy's result comes back, from what its
// inbox says for one finished already. It is never recorded or typed
// twice. Another message with that id is an *IDTakenError, and nothing is
// recorded.
//
// A retry waits for the broadcast it retries, when that one is still at
// work (the message's typing lock), and types as mode says; one agent
// still not ready keeps its copy, as deliver keeps it (Deferred).
func (c *Courier) BroadcastOnce(ctx context.Context, team string, env mailbox.Envelope, mode Mode) ([]Result, error) {
	env.To = mailbox.Broadcast
	unlock, err := c.holdTyping(ctx, env.ID)
	if err != nil {
		return nil, fmt.Errorf("recording the broadcast: %w", err)
	}
	begun, err := c.begun(team, env)
	if err != nil || begun {
		// Finished without the lock: a deliverer takes it (shared) to
		// resume a copy left typing.
		unlock()
		if err != nil {
			return nil, err
		}
		return c.finish(ctx, team, env.ID, mode)
	}
	defer unlock()
	if mode.MailboxOnly {
		return c.recordBroadcast(ctx, team, env)
	}
	return c.broadcastNow(ctx, team, env, mode)
}

// begun reports whether a broadcast of env.ID to team was recorded (or
// begun) before: an *IDTakenError when it is not env's.
func (c *Courier) begun(team string, env mailbox.Envelope) (bool, error) {
	in, open, err := c.Store.Intent(env.ID)
	if err != nil {
		return false, err
	}
	if open {
		for _, to := range in.To {
			if team != "" && to.Team != team {
				return false, &IDTakenError{ID: env.ID, Why: "for team " + to.Team}
			}
		}
		if why := differs(in.Env, env); why != "" {
			return false, &IDTakenError{ID: env.ID, Why: why}
		}
		return true, nil
	}
	held, first, err := c.holding(team, env.ID)
	if err != nil || len(held) == 0 {
		return false, err
	}
	if why := differs(first, env); why != "" {
		return false, &IDTakenError{ID: env.ID, Team: held[0].Team, Agent: held[0].Agent, Why: why}
	}
	return true, nil
}

// differs says how the stored message differs from env ("" when it is the
// same message): what a retry may not change.
func differs(stored, env mailbox.Envelope) string {
	switch {
	case stored.To != env.To:
		return "sent to one agent, not broadcast"
	case stored.From != env.From:
		return "from " + stored.From
	case stored.Type != env.Type:
		return "of type " + string(stored.Type)
	case stored.Content != env.Content:
		return "with another text"
	case !maps.Equal(stored.Metadata, env.Metadata):
		return "with other metadata"
	case stored.ReplyTo != env.ReplyTo || stored.RequestID != env.RequestID:
		return "answering another message"
	}
	return ""
}

// holding lists the inboxes of team ("" every team) that hold message id,
// with the message as the first of them stored it.
func (c *Courier) holding(team string, id message.ID) ([]mailbox.Inbox, mailbox.Envelope, error) {
	all, err := c.Store.Inboxes(team)
	if err != nil {
		return nil, mailbox.Envelope{}, err
	}
	var (
		held  []mailbox.Inbox
		first mailbox.Envelope
	)
	for _, in := range all {
		env, _, err := c.Store.History(in.Team, in.Agent, id)
		if errors.Is(err, mailbox.ErrNoMessage) {
			continue
		}
		if err != nil {
			return nil, mailbox.Envelope{}, err
		}
		if len(held) == 0 {
			first = env
		}
		held = append(held, in)
	}
	return held, first, nil
}

// finish is a retry of broadcast id to team: its intent completed, then
// each copy typed that waits, in parallel.
func (c *Courier) finish(ctx context.Context, team string, id message.ID, mode Mode) ([]Result, error) {
	if _, _, err := c.Store.CompleteID(ctx, id); err != nil {
		return nil, fmt.Errorf("finishing the broadcast of %s: %w", id, err)
	}
	held, _, err := c.holding(team, id)
	if err != nil {
		return nil, err
	}
	out := broadcast.Each(ctx, held, deliverConcurrency, func(ctx context.Context, in mailbox.Inbox) Result {
		return c.finishCopy(ctx, in, id, mode)
	})
	slices.SortFunc(out, func(a, b Result) int { return strings.Compare(a.Target.Session, b.Target.Session) })
	return out, nil
}

// finishCopy types the copy of id in inbox in when it waits (and what
// waits before it), and returns its result.
func (c *Courier) finishCopy(ctx context.Context, in mailbox.Inbox, id message.ID, mode Mode) Result {
	if !mode.MailboxOnly {
		typed, _ := c.deliverInbox(ctx, in.Team, in.Agent, true, mode.Call, nil, id)
		for _, t := range typed {
			if t.ID == id {
				return t.Result
			}
		}
		// Not tried now: finished before, or another deliverer is at
		// work on the inbox (its result is in the inbox soon).
	}
	return c.recordedResult(in, id)
}

// recordedResult is the copy of id in inbox in as its record says: the
// result of the attempt that got it there.
func (c *Courier) recordedResult(in mailbox.Inbox, id message.ID) Result {
	t, _ := target.InboxOwner(in.Team, in.Agent)
	res := Result{Outcome: dispatch.Outcome{Target: t, ID: id}}
	env, ds, err := c.Store.History(in.Team, in.Agent, id)
	if err != nil {
		res.Verdict, res.Err = delivery.Failed, err
		return res
	}
	d := env.Delivery
	if len(ds) > 0 {
		d = &ds[len(ds)-1]
	}
	if d == nil {
		d = &mailbox.Delivery{State: mailbox.StatePending}
	}
	res.State, res.Reason = d.State, d.Reason
	why := errors.New(string(d.State))
	if d.LastVerdict != "" {
		why = errors.New(d.LastVerdict)
	}
	res.Verdict, res.Err = VerdictOf(d.State, d.Reason, why)
	return res
}

// SendOnce is Send of a message whose id its writer chose (an app that
// must learn its fate even if it never gets the answer): the id is one
// message on the server, whichever inbox it is in. When a message with
// that id is recorded already, or on its way into inboxes, this is a
// retry: the same message (sender, type, text, metadata) to the same
// agent answers the result its inbox records (replayed), waiting for the
// send at work on it to end, and nothing is recorded or typed again.
// Another message with that id, or the same one to another agent, is an
// *IDTakenError, and nothing is recorded. Writers of one id take turns.
func (c *Courier) SendOnce(ctx context.Context, t target.Target, env mailbox.Envelope, mode Mode) (res Result, replayed bool, err error) {
	unlock, err := c.Locks.Named(ctx, "id-"+string(env.ID))
	if err != nil {
		return Result{}, false, fmt.Errorf("sending %s: %w", env.ID, err)
	}
	defer unlock()
	team, agent := target.Inbox(t)
	env.To = agent
	in, open, err := c.Store.Intent(env.ID)
	if err != nil {
		return Result{}, false, err
	}
	if open {
		to := "a broadcast to team " + in.Env.To
		if len(in.To) > 0 {
			to = "a broadcast to team " + in.To[0].Team
		}
		return Result{}, false, &IDTakenError{ID: env.ID, Why: "which is " + to}
	}
	held, first, err := c.holding("", env.ID)
	if err != nil {
		return Result{}, false, err
	}
	if len(held) == 0 {
		return c.Send(ctx, t, env, mode), false, nil
	}
	if len(held) > 1 || held[0] != (mailbox.Inbox{Team: team, Agent: agent}) {
		return Result{}, false, &IDTakenError{ID: env.ID, Team: held[0].Team, Agent: held[0].Agent, Why: "a message to another agent"}
	}
	if why := differs(first, env); why != "" {
		return Result{}, false, &IDTakenError{ID: env.ID, Team: team, Agent: agent, Why: why}
	}
	// A send of it at work holds its typing lock: its result is what it
	// records.
	release, err := c.holdTyping(ctx, env.ID)
	if err != nil {
		return Result{}, false, err
	}
	release()
	return c.recordedResult(held[0], env.ID), true, nil
}
