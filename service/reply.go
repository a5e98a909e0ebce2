package service

import (
	"context"
	"fmt"

	"github.com/agentmsg/agentmsg/courier"
	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/message"
	"github.com/agentmsg/agentmsg/target"
)

// ReplyRequest answers a message in the caller's inbox, to its sender.
type ReplyRequest struct {
	To message.ID // the message answered
	Draft
	// Queue: a sender's agent not ready in time keeps the reply for deliver.
	Queue bool
	Call  dispatch.Call
}

// NoReplyNameError: the sender of a message has no name an inbox can have.
type NoReplyNameError struct {
	ID   message.ID
	From string
}

func (e *NoReplyNameError) Error() string {
	return fmt.Sprintf("the sender of %s, %q, has no inbox name agentmsg can reply to", e.ID, e.From)
}

// Reply sends a message to whoever sent message To (found in the caller's
// inbox), with reply_to set and the request it was about carried over. It
// is typed into the sender's pane when the sender is an agent on this
// server, and only recorded in the sender's inbox when it has no session
// or there is no tmux server (a person, an agent outside tmux). Any other
// failure to look for the session is an error, never a quiet mailbox-only
// reply: the sender may be an agent that is there and would never see it.
func (s *Service) Reply(ctx context.Context, req ReplyRequest) (SendResult, error) {
	out := SendResult{From: s.Name}
	if s.Team == "" {
		return out, ErrNoCallerTeam
	}
	orig, err := s.ownMessage(req.To)
	if err != nil {
		return out, err
	}
	env, err := Envelope(req.Draft)
	if err != nil {
		return out, err
	}
	env.ReplyTo, env.RequestID = req.To, orig.RequestID
	t, ok := target.InboxOwner(s.Team, orig.From)
	if !ok {
		return out, &NoReplyNameError{ID: req.To, From: orig.From}
	}
	if !s.local(orig.FromHost) {
		// To the sender's host, in the same team there; a sender with no
		// session there gets it in its inbox, as here.
		return s.sendRemote(ctx, SendRequest{To: t, Draft: req.Draft, ReplyTo: req.To, InboxIfAbsent: true,
			Delivery: Delivery{Queue: req.Queue, Call: req.Call}, Host: orig.FromHost})
	}
	d, err := s.Dispatcher()
	if err != nil && !noTmux(err) {
		return out, err
	}
	there, err := present(ctx, d, t)
	if err != nil {
		return out, err
	}
	mode := courier.Mode{Queue: req.Queue, Call: req.Call, MailboxOnly: !there}
	return s.sendEnvelope(ctx, d, t, env, mode)
}
