package mcpserver

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
	"github.com/agentmsg/agentmsg/service"
)

// check_messages and wait_for_message: Service.Inbox and Service.Wait.

// CheckInput is check_messages' input.
type CheckInput struct {
	Peek bool `json:"peek,omitempty" jsonschema:"leave the messages unread"`
}

// CheckOutput is check_messages' output.
type CheckOutput struct {
	Messages []Message `json:"messages"`
	Count    int       `json:"count"`
}

func (s *server) checkMessages(ctx context.Context, in CheckInput) (CheckOutput, error) {
	res, err := (&s.deps).Inbox(ctx, service.InboxRequest{Peek: in.Peek})
	if err != nil {
		return CheckOutput{}, s.toolErr("check_messages", err)
	}
	out := CheckOutput{Messages: []Message{}, Count: len(res.Messages)}
	for _, e := range res.Messages {
		out.Messages = append(out.Messages, toMessage(e))
	}
	return out, nil
}

// WaitInput is wait_for_message's input.
type WaitInput struct {
	From           string  `json:"from,omitempty" jsonschema:"only a message from this agent"`
	Type           string  `json:"type,omitempty" jsonschema:"only a message of this type (text, status, task, request, claim, shutdown-request, ...)"`
	ReplyTo        string  `json:"reply_to,omitempty" jsonschema:"only a reply to this message_id"`
	TimeoutSeconds float64 `json:"timeout_seconds,omitempty" jsonschema:"how long to wait: default 30, at most 120"`
}

// WaitOutput is the message waited for, or timed_out.
type WaitOutput struct {
	Message  *Message `json:"message,omitempty"`
	TimedOut bool     `json:"timed_out"`
	// Waited is how long the call waited, in seconds.
	Waited float64 `json:"waited_seconds"`
}

func (s *server) waitForMessage(ctx context.Context, in WaitInput) (WaitOutput, error) {
	limit, err := seconds(in.TimeoutSeconds, DefaultWait, MaxWait)
	if err != nil {
		return WaitOutput{}, fmt.Errorf("timeout_seconds: %w", err)
	}
	release, err := s.openWait()
	if err != nil {
		return WaitOutput{}, err
	}
	defer release()
	fl := service.Filter{Sender: in.From, Type: mailbox.Type(in.Type), ReplyTo: message.ID(in.ReplyTo)}
	res, err := (&s.deps).Wait(ctx, service.WaitRequest{Filter: fl, Timeout: limit})
	if err != nil {
		return WaitOutput{}, s.toolErr("wait_for_message", err)
	}
	out := WaitOutput{TimedOut: res.TimedOut, Waited: res.Waited.Seconds()}
	if !res.TimedOut {
		m := toMessage(res.Message)
		out.Message = &m
	}
	return out, nil
}

// openWait takes one of the server's wait slots, or says that all are
// taken; release gives it back.
func (s *server) openWait() (release func(), err error) {
	select {
	case s.waits <- struct{}{}:
		return func() { <-s.waits }, nil
	default:
		return nil, fmt.Errorf("%d waits are open for you already, the most one server keeps; let one end (or cancel it) before starting another", cap(s.waits))
	}
}

// filterFields are the tool fields that set each service.Filter field.
var filterFields = map[string]string{"sender": "from", "type": "type", "reply_to": "reply_to"}

// toolErr words the service's errors for the caller of tool.
func (s *server) toolErr(tool string, err error) error {
	var fe *service.FilterError
	switch {
	case errors.As(err, &fe):
		return fmt.Errorf("%s %q: %w", filterFields[fe.Field], fe.Value, fe.Err)
	case errors.Is(err, service.ErrTeamNeeded):
		if _, terr := s.team(); terr != nil {
			return terr // says how to give a team
		}
	case errors.Is(err, service.ErrInterrupted):
		return fmt.Errorf("%s was cancelled: %w", tool, errors.Unwrap(err))
	}
	return err
}
