package mailbox

import (
	"github.com/agentmsg/agentmsg/eventlog"
	"github.com/agentmsg/agentmsg/message"
)

// Every change the store records is also an event (package eventlog), so
// whoever follows the log (agentmsg events, the daemon's event stream, the
// terminal UI) learns of it, whichever process made it. Events are derived
// from what the store already holds: one that cannot be written costs the
// followers a late look, never a message, so it fails nothing here. It is
// not silent either: the log counts it, warns of it (eventlog.Log.Warn)
// and tells its readers with an events.lost event once it can write, and
// whoever waits for a message's fate reads it from the inbox as well
// (service.WaitDelivered).

// emit appends events to the store's event log, if it has one.
func (s *Store) emit(events ...eventlog.Event) {
	if s.Events == nil || len(events) == 0 {
		return
	}
	for i := range events {
		events[i].Place = s.Place.Socket
	}
	_, _ = s.Events.Append(events...)
}

// recorded is the event of env's arrival in b.
func (b *Box) recorded(env Envelope) []eventlog.Event {
	e := eventlog.Event{Type: eventlog.MessageRecorded, Team: b.Team, Agent: b.Agent, Message: string(env.ID), From: env.From}
	out := []eventlog.Event{e}
	if env.Delivery != nil {
		out[0].State = string(env.Delivery.State)
		if env.Delivery.State == StateDeferred {
			// Recorded first, whatever state it is recorded in: a client
			// learns of every message by its message.recorded.
			e.Type, e.State, e.Reason, e.Detail = eventlog.MessageDeferred, string(StateDeferred), env.Delivery.Reason, env.Delivery.LastVerdict
			out = append(out, e)
		}
	}
	if env.ReplyTo != "" {
		out = append(out, eventlog.Event{Type: eventlog.MessageReplied, Team: b.Team, Agent: env.From, Message: string(env.ReplyTo), From: env.From, Detail: string(env.ID)})
	}
	return out
}

// delivered is the event of message id's new delivery state in b.
func (b *Box) delivered(id message.ID, d Delivery) eventlog.Event {
	kind := string(d.State)
	if d.State == StateTyping && d.Reached != "" {
		kind = d.Reached // pasted, unseen, pressed: how far typing got
	}
	return eventlog.Event{Type: eventlog.MessageState(kind), Team: b.Team, Agent: b.Agent, Message: string(id),
		State: string(d.State), Reason: d.Reason, Detail: d.LastVerdict}
}
