package service

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/eventlog"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
)

// kept records a message deferred in alpha/ana's inbox, and returns it
// with its inbox.
func kept(t *testing.T, s *Service) (message.ID, *mailbox.Box) {
	t.Helper()
	s.Store.CheckTransitions = false // the test moves it to submitted itself
	b, err := s.Store.Box("alpha", "ana")
	if err != nil {
		t.Fatal(err)
	}
	id := message.ID("MSG_LEAD_0000c0de")
	env := mailbox.Envelope{ID: id, From: "lead", To: "ana", Type: "text", Content: "hi",
		Delivery: &mailbox.Delivery{State: mailbox.StateDeferred}}
	if err := b.Append(env); err != nil {
		t.Fatal(err)
	}
	return id, b
}

// The verdict a waiter gets comes from the message's event when there is
// one (with its id), and from its inbox when the event could not be
// written: before, a send --wait-delivered whose events were lost to a
// full disk said "not delivered" (exit 7) about a message the agent had.
func TestWaitDeliveredReadsTheInboxWhenTheEventIsLost(t *testing.T) {
	for _, lost := range []bool{false, true} {
		s := testService(t, nil)
		dir := filepath.Join(t.TempDir(), "events")
		s.Store.Events = &eventlog.Log{Dir: dir}
		if lost {
			// A file where its directory goes: no event can be written.
			if err := os.WriteFile(dir, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		before, _ := s.LastEvent()
		id, b := kept(t, s)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		got := make(chan eventlog.Event, 1)
		go func() {
			e, err := s.WaitDelivered(ctx, before, id, "alpha", "ana")
			if err != nil {
				t.Error(err)
			}
			got <- e
		}()
		if err := b.SetDelivery(id, mailbox.Delivery{State: mailbox.StateSubmitted, LastVerdict: "submitted"}); err != nil {
			t.Fatal(err)
		}
		e := <-got
		cancel()
		if e.Type != "message.submitted" || e.Message != string(id) || (e.ID < 0) != lost {
			t.Errorf("lost %v: WaitDelivered = %+v; want submitted, with an event id only when it was written", lost, e)
		}
	}
}
