package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentmsg/agentmsg/eventlog"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
	"github.com/agentmsg/agentmsg/service"
)

// message_log and get_events: Service.Log, History and Events, what
// became of the messages.

// Log limits for message_log and get_events.
const (
	defaultLogLimit = 50
	maxLogLimit     = 512
)

// LogInput is message_log's input.
type LogInput struct {
	Team      string `json:"team,omitempty" jsonschema:"yours when empty, or any other"`
	Agent     string `json:"agent,omitempty" jsonschema:"only this agent's inbox"`
	MessageID string `json:"message_id,omitempty" jsonschema:"one message: every delivery record of it in each inbox that holds it"`
	Limit     int    `json:"limit,omitempty" jsonschema:"the newest this many entries (default 50, at most 512)"`
}

// LogEntry is one message in one inbox and how far its delivery got.
type LogEntry struct {
	Inbox string `json:"inbox"`
	Message
	State       string `json:"state,omitempty" jsonschema:"pending, deferred, typing, submitted, queued, typed, unknown, failed, read, ..."`
	LastVerdict string `json:"last_verdict,omitempty"`
	Reason      string `json:"reason,omitempty" jsonschema:"why it waits or failed, in one word"`
	Attempts    int    `json:"attempts,omitempty"`
}

// DeliveryRecord is one step of a message's delivery history.
type DeliveryRecord struct {
	State       string    `json:"state"`
	LastVerdict string    `json:"last_verdict,omitempty"`
	Reason      string    `json:"reason,omitempty"`
	Attempts    int       `json:"attempts,omitempty"`
	Updated     time.Time `json:"updated,omitzero"`
}

// LogOutput is the log, or with message_id one message's history.
type LogOutput struct {
	Team    string     `json:"team"`
	Entries []LogEntry `json:"entries" jsonschema:"oldest first"`
	// History is message_id's records per inbox, oldest first.
	History map[string][]DeliveryRecord `json:"history,omitempty" jsonschema:"with message_id: its delivery records in each inbox, oldest first"`
	Omitted int                         `json:"omitted,omitempty" jsonschema:"older entries left out by limit"`
}

func (s *server) messageLog(ctx context.Context, in LogInput) (LogOutput, error) {
	team, err := s.teamOf(in.Team)
	if err != nil {
		return LogOutput{}, err
	}
	limit, err := logLimit(in.Limit)
	if err != nil {
		return LogOutput{}, err
	}
	req := service.LogRequest{Team: team, Agent: in.Agent}
	out := LogOutput{Team: team, Entries: []LogEntry{}}
	if in.MessageID != "" {
		copies, err := s.deps.History(ctx, req, message.ID(in.MessageID))
		if errors.Is(err, mailbox.ErrNoMessage) {
			return out, fmt.Errorf("message_id %s is in no inbox of team %s", in.MessageID, team)
		}
		if err != nil {
			return out, s.toolErr("message_log", err)
		}
		out.History = map[string][]DeliveryRecord{}
		for _, c := range copies {
			if n := len(c.Delivery); n > 0 {
				c.Message.Delivery = &c.Delivery[n-1] // the entry says where it is now
			}
			inbox := c.Inbox
			if c.Host != "" {
				inbox += "@" + c.Host // a copy sent to another host
			}
			out.Entries = append(out.Entries, logEntry(inbox, c.Message))
			for _, d := range c.Delivery {
				out.History[inbox] = append(out.History[inbox], DeliveryRecord{State: string(d.State),
					LastVerdict: d.LastVerdict, Reason: d.Reason, Attempts: d.Attempts, Updated: d.Updated})
			}
		}
		return out, nil
	}
	res, err := s.deps.Log(ctx, req)
	if err != nil {
		return out, s.toolErr("message_log", err)
	}
	entries := res.Entries
	if len(entries) > limit {
		out.Omitted, entries = len(entries)-limit, entries[len(entries)-limit:]
	}
	for _, e := range entries {
		inbox := e.Inbox
		if e.Host != "" {
			inbox += "@" + e.Host // a copy sent to another host
		}
		out.Entries = append(out.Entries, logEntry(inbox, e.Envelope))
	}
	return out, nil
}

func logEntry(inbox string, e mailbox.Envelope) LogEntry {
	out := LogEntry{Inbox: inbox, Message: toMessage(e)}
	if d := e.Delivery; d != nil {
		out.State, out.LastVerdict, out.Reason, out.Attempts = string(d.State), d.LastVerdict, d.Reason, d.Attempts
	}
	return out
}

// logLimit is a limit field: the default when 0, at most maxLogLimit.
func logLimit(n int) (int, error) {
	switch {
	case n < 0:
		return 0, fmt.Errorf("limit must not be negative (got %d)", n)
	case n == 0:
		return defaultLogLimit, nil
	}
	return min(n, maxLogLimit), nil
}

// EventsInput is get_events' input.
type EventsInput struct {
	After *int64 `json:"after,omitempty" jsonschema:"the id of the last event you saw (its next_after): only newer ones come; none given starts at the oldest kept"`
	Limit int    `json:"limit,omitempty" jsonschema:"at most this many (default 50, at most 512)"`
}

// EventsOutput is events in order and where to go on from.
type EventsOutput struct {
	Events    []eventlog.Event `json:"events"`
	NextAfter int64            `json:"next_after" jsonschema:"give it as after to get the events that follow"`
	More      bool             `json:"more" jsonschema:"more events wait after these"`
}

// errEnough ends a read of the event log that has its limit.
var errEnough = errors.New("enough events")

func (s *server) getEvents(ctx context.Context, in EventsInput) (EventsOutput, error) {
	limit, err := logLimit(in.Limit)
	if err != nil {
		return EventsOutput{}, err
	}
	after := int64(-1)
	if in.After != nil {
		after = *in.After
	}
	out := EventsOutput{Events: []eventlog.Event{}, NextAfter: after}
	err = s.deps.Events(ctx, after, false, func(e eventlog.Event) error {
		if len(out.Events) == limit {
			out.More = true
			return errEnough
		}
		out.Events = append(out.Events, e)
		out.NextAfter = e.ID
		return nil
	})
	switch {
	case errors.Is(err, service.ErrNoEvents):
		return out, errors.New("this mailbox keeps no event log")
	case err != nil && !errors.Is(err, errEnough):
		return out, err
	}
	return out, nil
}
