package service

import (
	"context"
	"fmt"

	"github.com/agentmsg/agentmsg/courier"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
)

// MessageRef names one copy of a message: the inbox it is in and its id
// (a message to a whole team is in each of its inboxes).
type MessageRef struct {
	Team, Agent string
	ID          message.ID
}

func (r MessageRef) String() string { return fmt.Sprintf("%s in %s/%s", r.ID, r.Team, r.Agent) }

// check refuses a reference no inbox can hold.
func (r MessageRef) check() error {
	if !message.Valid(string(r.ID)) {
		return &FilterError{"id", string(r.ID), ErrNotMessageID}
	}
	return nil
}

// Handle records that a person dealt with a message by hand: it is never
// typed again (delivery state handled). Only a message not taken yet can
// be (pending, deferred, typing, typed or failed: a *courier.StateError
// otherwise); one a sender is typing right now is courier.ErrBeingTyped.
func (s *Service) Handle(ctx context.Context, ref MessageRef) (mailbox.Delivery, error) {
	if err := ref.check(); err != nil {
		return mailbox.Delivery{}, err
	}
	c, err := s.settler()
	if err != nil {
		return mailbox.Delivery{}, err
	}
	return c.MarkHandled(ctx, ref.Team, ref.Agent, ref.ID)
}

// RetryResult is a retried message's new record and the deliver pass that
// followed it.
type RetryResult struct {
	Delivery mailbox.Delivery
	Pass     DeliverResult
}

// Retry sends a message whose delivery ended typed or failed (an unknown
// verdict among them) back to deliver, after a person has looked at the
// agent's pane, and runs a deliver pass over its team at once (waiting at
// most readyTimeout per agent; 0 is the configured wait). The pass still
// looks for the message before typing it: see courier.Reopen. A pass that
// could not run leaves the message pending for the next one, and says so
// in the error.
func (s *Service) Retry(ctx context.Context, ref MessageRef, pass DeliverRequest) (RetryResult, error) {
	var out RetryResult
	if err := ref.check(); err != nil {
		return out, err
	}
	c, err := s.settler()
	if err != nil {
		return out, err
	}
	if out.Delivery, err = c.Reopen(ctx, ref.Team, ref.Agent, ref.ID); err != nil {
		return out, err
	}
	pass.Team = ref.Team
	if out.Pass, err = s.Deliver(ctx, pass); err != nil {
		return out, fmt.Errorf("%s is pending again, but the deliver pass failed: %w", ref.ID, err)
	}
	return out, nil
}

// settler is the courier that records a person's settling of a message.
func (s *Service) settler() (*courier.Courier, error) {
	if s.Dispatcher == nil {
		return nil, errNoDispatcher
	}
	d, err := s.Dispatcher()
	if err != nil {
		return nil, err
	}
	return s.carrier(d), nil
}
