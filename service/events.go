package service

import (
	"context"
	"errors"
	"time"

	"github.com/agentmsg/agentmsg/eventlog"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
)

// ErrNoEvents: the store keeps no event log.
var ErrNoEvents = errors.New("this mailbox keeps no event log")

// followEvery is how often a follower looks for new events.
const followEvery = 50 * time.Millisecond

// Events passes each event after id after (-1: from the oldest kept) to
// fn, oldest first; with follow it goes on with new ones until ctx ends.
// Events rotated away are reported by fn's never seeing them: the stream
// goes on from the oldest kept (eventlog.ErrExpired is not an error here).
func (s *Service) Events(ctx context.Context, after int64, follow bool, fn func(eventlog.Event) error) error {
	log := s.Store.Events
	if log == nil {
		return ErrNoEvents
	}
	t := time.NewTicker(followEvery)
	defer t.Stop()
	for {
		evs, next, err := log.Since(after, 512)
		switch {
		case errors.Is(err, eventlog.ErrExpired):
			after = -1
			continue
		case err != nil:
			return err
		}
		for _, e := range evs {
			if err := fn(e); err != nil {
				return err
			}
		}
		after = next
		if len(evs) > 0 {
			continue
		}
		if !follow {
			return nil
		}
		// A log whose mailbox was removed has nothing more to say.
		if err := s.Store.Gone(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// LastEvent is the id of the newest event, -1 when there is none.
func (s *Service) LastEvent() (int64, error) {
	if s.Store.Events == nil {
		return -1, ErrNoEvents
	}
	return s.Store.Events.Last()
}

// finalStates are the delivery states a message's typing ends in.
var finalStates = map[eventlog.Type]bool{eventlog.MessageSubmitted: true, eventlog.MessageQueued: true, eventlog.MessageTyped: true,
	eventlog.MessageUnknown: true, eventlog.MessageFailed: true, eventlog.MessageSkipped: true}

// finalRecord reports whether an inbox's delivery record ends the
// message's typing, as finalStates does for its event.
func finalRecord(d mailbox.Delivery) bool { return finalStates[eventlog.MessageState(string(d.State))] }

// eventGrace is how long a verdict read from the inbox waits for its
// event, which its writer appends right after the record: the event
// gives the caller its id, and a verdict goes without one only when its
// event was lost.
const eventGrace = 2 * followEvery

// WaitDelivered waits, from the event after, until message id's delivery
// to team/agent ends (submitted, queued, typed, unknown, failed or
// skipped: not deferred, which is a wait) and returns that event; ctx
// bounds the wait.
//
// The inbox is the record, and the event only says what it holds: an
// event that could not be written (a full disk) must not leave the
// waiter saying "not delivered" about a message the agent has. So the
// inbox is watched too, and a verdict it holds whose event does not come
// within eventGrace is returned as an event of its own, with ID -1. A
// message delivered on another host has no record here: its events
// alone tell it.
func (s *Service) WaitDelivered(ctx context.Context, after int64, id message.ID, team, agent string) (eventlog.Event, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	recorded := make(chan mailbox.Delivery, 1)
	go func() {
		if d, err := s.Store.WaitDelivery(ctx, team, agent, id, finalRecord); err == nil {
			recorded <- d
		}
	}()
	log := s.Store.Events
	t := time.NewTicker(followEvery)
	defer t.Stop()
	var fromInbox *mailbox.Delivery
	var grace <-chan time.Time
	for {
		if e, ok := s.deliveredEvent(log, &after, id, team, agent); ok {
			return e, nil
		}
		select {
		case <-ctx.Done():
			return eventlog.Event{}, ctx.Err()
		case <-t.C:
		case d := <-recorded:
			fromInbox = &d
			grace = time.After(eventGrace)
		case <-grace:
			if e, ok := s.deliveredEvent(log, &after, id, team, agent); ok {
				return e, nil
			}
			return recordEvent(*fromInbox, id, team, agent), nil
		}
	}
}

// deliveredEvent reads the events after *after (moving it on) for the one
// that ends message id's delivery. A log that cannot be read is passed
// over: the inbox answers.
func (s *Service) deliveredEvent(log *eventlog.Log, after *int64, id message.ID, team, agent string) (eventlog.Event, bool) {
	if log == nil {
		return eventlog.Event{}, false
	}
	for {
		evs, next, err := log.Since(*after, 512)
		if errors.Is(err, eventlog.ErrExpired) {
			*after = -1
			continue
		}
		if err != nil {
			return eventlog.Event{}, false
		}
		for _, e := range evs {
			if e.Message == string(id) && e.Team == team && e.Agent == agent && finalStates[e.Type] {
				return e, true
			}
		}
		*after = next
		if len(evs) == 0 {
			return eventlog.Event{}, false
		}
	}
}

// recordEvent is the event an inbox's record d of message id would have
// been, without an id: it was never written.
func recordEvent(d mailbox.Delivery, id message.ID, team, agent string) eventlog.Event {
	return eventlog.Event{ID: -1, Time: d.Updated, Type: eventlog.MessageState(string(d.State)), Team: team, Agent: agent,
		Message: string(id), State: string(d.State), Reason: d.Reason, Detail: d.LastVerdict}
}
