package mailbox

import (
	"errors"
	"fmt"

	"github.com/agentmsg/agentmsg/message"
)

// A task carries an agent's messages that wait to be typed, in its text
// (a task assign): once the task is in the agent's inbox they are read,
// and no deliver types them on their own. Marking them and recording the
// task are one step, through an intent (see Intent) that names the task,
// its inbox and each message it carries with the record it had: the
// intent is made durable first, then the marks, then the task is recorded
// (its writer records and types it, see Carry), then the intent goes. A
// writer that dies in between leaves the intent, and Complete decides by
// the inbox: the task is there, so they ride in it and stay read; it is
// not, so each gets its record back and a deliver types it on its own.
//
// The marks are not fsynced (delivery records never are), and need not
// be: the task's record, fsynced, follows them in the same file, and
// until it is there the intent says what to undo. Without the intent, a
// task assign killed in the moments its agent's pane was looked up (about
// 3 ms) left the messages read and in no task: never typed, shown only by
// inbox.

// Carried is a message that an operation's own message carries (a task
// that lists it): the record it had (Was) and the one it got (Mark).
type Carried struct {
	ID   message.ID `json:"id"`
	Was  Delivery   `json:"was"`
	Mark Delivery   `json:"mark"`
}

// Carrying is a task on its way into an inbox with the messages it
// carries, held by its writer: Done once the task is recorded, PutBack
// when it is not to carry them.
type Carrying struct {
	s    *Store
	held *Intended // nil: nothing carried, or let go
}

// Carry marks msgs, messages of team/agent's inbox that wait to be typed
// (each with its Delivery), read, with why as the verdict: message task,
// which the caller records in that inbox next, carries them. Until the
// caller's Done, a writer that dies leaves them to Complete, which gives
// each its record back unless task is in the inbox. With no msgs there is
// nothing to mark, and Done and PutBack do nothing.
func (s *Store) Carry(team, agent string, task message.ID, msgs []Envelope, why string) (*Carrying, error) {
	c := &Carrying{s: s}
	if len(msgs) == 0 {
		return c, nil
	}
	in := Intent{Env: Envelope{ID: task, To: agent, Type: TypeTask}, To: []Inbox{{Team: team, Agent: agent}},
		Commit: &Commit{Recorded: true}}
	now := s.now()
	for _, e := range msgs {
		if e.Delivery == nil {
			return nil, fmt.Errorf("%w: %s has no delivery record to give back", ErrBadIntent, e.ID)
		}
		in.Carried = append(in.Carried, Carried{ID: e.ID, Was: *e.Delivery,
			Mark: Delivery{State: StateRead, Attempts: e.Delivery.Attempts, LastVerdict: why, Updated: now}})
	}
	held, err := s.Intend(in)
	if err != nil {
		return nil, fmt.Errorf("recording what task %s carries: %w", task, err)
	}
	c.held = held
	box, err := s.Box(team, agent)
	if err == nil {
		for _, m := range held.in.Carried {
			if err = box.SetDelivery(m.ID, m.Mark); err != nil {
				break
			}
		}
	}
	if err != nil {
		// Carried by nothing: those marked get their records back.
		return nil, errors.Join(fmt.Errorf("recording that task %s carries them: %w", task, err), c.PutBack())
	}
	return c, nil
}

// Done lets the intent go: the task is recorded in the inbox, and carries
// them.
func (c *Carrying) Done() error {
	if c == nil || c.held == nil {
		return nil
	}
	held := c.held
	c.held = nil
	return held.Done()
}

// PutBack gives each message its record back, unless it has had another
// since its mark, and lets the intent go: the task was not recorded, or
// is not to carry them (it failed). Should one not be given back (a full
// disk), the intent stays for Complete, which gives it back unless the
// task is in the inbox by then (a task recorded, then failed: it stays
// read, inside that task).
func (c *Carrying) PutBack() error {
	if c == nil || c.held == nil {
		return nil
	}
	held := c.held
	c.held = nil
	if err := c.s.putBack(held.in); err != nil {
		held.Leave()
		return err
	}
	return held.Done()
}

// putBack gives each message in carries its record from before, if it
// still has the mark in gave it, and makes that durable: the intent may
// go once it returns.
func (s *Store) putBack(in Intent) error {
	if len(in.Carried) == 0 {
		return nil
	}
	box, err := s.Box(in.To[0].Team, in.To[0].Agent)
	if err != nil {
		return err
	}
	var errs []error
	back := false
	for _, m := range in.Carried {
		ok, err := box.setDeliveryIf(m.ID, m.Mark, m.Was)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s stays marked read: %w", m.ID, err))
		}
		back = back || ok
	}
	if back {
		errs = append(errs, box.Sync())
	}
	return errors.Join(errs...)
}
