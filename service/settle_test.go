package service

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/courier"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/tmux/tmuxtest"
)

// waiting is the one message in ana's inbox.
func waiting(t *testing.T, s *Service) mailbox.Envelope {
	t.Helper()
	b, err := s.Store.Read("alpha", "ana")
	if err != nil || len(b.Envelopes) != 1 {
		t.Fatalf("ana's inbox: %+v, %v; want one message", b.Envelopes, err)
	}
	return b.Envelopes[0]
}

// A message a person handled stays out of every later pass.
func TestHandle(t *testing.T) {
	srv := tmuxtest.New("agent-alpha-ana")
	s, _ := deliverService(t, srv, "lead", "", 50*time.Millisecond)
	defer_(t, s, srv)
	srv.SetDialog("agent-alpha-ana", false)
	ref := MessageRef{Team: "alpha", Agent: "ana", ID: waiting(t, s).ID}
	d, err := s.Handle(context.Background(), ref)
	if err != nil || d.State != mailbox.StateHandled {
		t.Fatalf("Handle = %+v, %v", d, err)
	}
	if res, err := s.Deliver(context.Background(), DeliverRequest{Team: "alpha"}); err != nil || len(res.Typed) != 0 {
		t.Fatalf("a pass after Handle: %+v, %v; want nothing typed", res, err)
	}
	var se *courier.StateError
	if _, err := s.Handle(context.Background(), ref); !errors.As(err, &se) {
		t.Errorf("Handle twice: %v; want a *courier.StateError", err)
	}
	if _, err := s.Handle(context.Background(), MessageRef{Team: "alpha", Agent: "ana", ID: "MSG_x"}); !errors.Is(err, ErrNotMessageID) {
		t.Errorf("Handle of a bad id: %v; want ErrNotMessageID", err)
	}
}

// A retried message is typed in the pass that Retry runs, once.
func TestRetry(t *testing.T) {
	srv := tmuxtest.New("agent-alpha-ana")
	s, _ := deliverService(t, srv, "lead", "", 50*time.Millisecond)
	defer_(t, s, srv)
	srv.SetDialog("agent-alpha-ana", false)
	env := waiting(t, s)
	box, err := s.Store.Box("alpha", "ana")
	if err != nil {
		t.Fatal(err)
	}
	// What a delivery that could not tell leaves: failed, unknown.
	if err := box.SetDelivery(env.ID, mailbox.Delivery{State: mailbox.StateFailed, Attempts: 1, Reached: "pressed", Reason: courier.ReasonUnknown}); err != nil {
		t.Fatal(err)
	}
	if res, _ := s.Deliver(context.Background(), DeliverRequest{Team: "alpha"}); len(res.Typed) != 0 {
		t.Fatalf("a failed message was typed without a retry: %+v", res)
	}
	res, err := s.Retry(context.Background(), MessageRef{Team: "alpha", Agent: "ana", ID: env.ID}, DeliverRequest{})
	if err != nil || res.Delivery.State != mailbox.StatePending || res.Pass.Delivered() != 1 {
		t.Fatalf("Retry = %+v, %v; want it pending, then delivered in the pass", res, err)
	}
	if got := srv.Received("agent-alpha-ana"); len(got) != 1 {
		t.Errorf("ana received %q; want the message once", got)
	}
	if d := waiting(t, s).Delivery; d.State != mailbox.StateSubmitted {
		t.Errorf("record %+v, want submitted", d)
	}
}
