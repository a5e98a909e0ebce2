package service

import (
	"context"
	"errors"
	"time"

	"github.com/agentmsg/agentmsg/eventlog"
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
var finalStates = map[string]bool{"message.submitted": true, "message.queued": true, "message.typed": true,
	"message.unknown": true, "message.failed": true, "message.skipped": true}

// WaitDelivered waits, from the event after, until message id's delivery
// to team/agent ends (submitted, queued, typed, unknown, failed or
// skipped: not deferred, which is a wait) and returns that event; ctx
// bounds the wait.
func (s *Service) WaitDelivered(ctx context.Context, after int64, id message.ID, team, agent string) (eventlog.Event, error) {
	var got eventlog.Event
	errFound := errors.New("found")
	err := s.Events(ctx, after, true, func(e eventlog.Event) error {
		if e.Message == string(id) && e.Team == team && e.Agent == agent && finalStates[e.Type] {
			got = e
			return errFound
		}
		return nil
	})
	if errors.Is(err, errFound) {
		return got, nil
	}
	return got, err
}
