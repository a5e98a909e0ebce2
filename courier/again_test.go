package courier

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/agentmsg/agentmsg/delivery"
	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/mailbox"
)

var alpha = []string{"agent-alpha-ana", "agent-alpha-bob", "agent-alpha-cy"}

// leftPartWay is what a broadcast's sender SIGKILLed while it recorded
// leaves: its intent for ana, bob and cy, and ana's copy alone, marked
// typing (nothing typed yet). Leave is what the kernel does for a dead
// writer: the intent's lock goes.
func leftPartWay(t *testing.T, c *Courier) mailbox.Envelope {
	t.Helper()
	env := envelope(t, "all hands")
	env.To = mailbox.Broadcast
	env.Timestamp = c.now()
	in := mailbox.Intent{Env: env}
	for _, a := range []string{"ana", "bob", "cy"} {
		in.To = append(in.To, mailbox.Inbox{Team: "alpha", Agent: a})
	}
	in.Env.Delivery = &mailbox.Delivery{State: mailbox.StatePending}
	held, err := c.Store.Intend(in)
	if err != nil {
		t.Fatal(err)
	}
	box, err := c.Store.Box("alpha", "ana")
	if err != nil {
		t.Fatal(err)
	}
	mine := env
	mine.Delivery = &mailbox.Delivery{State: mailbox.StateTyping, Attempts: 1}
	if err := box.Append(mine); err != nil {
		t.Fatal(err)
	}
	held.Leave()
	return env
}

func wantOnce(t *testing.T, tm *fakeServer, sessions ...string) {
	t.Helper()
	for _, s := range sessions {
		if got := tm.Received(s); len(got) != 1 {
			t.Errorf("%s received %q, want the broadcast once", s, got)
		}
	}
}

// The next deliver pass records what a dead sender's broadcast lacks, and
// types every copy once (issue 29: a crash mid-broadcast lost 3 of 12).
func TestDeliverFinishesABroadcastLeftPartWay(t *testing.T) {
	c, tm := newCourier(t, alpha...)
	leftPartWay(t, c)
	typed, err := c.Deliver(context.Background(), "", dispatch.Call{})
	if err != nil {
		t.Fatal(err)
	}
	if len(typed) != 3 {
		t.Errorf("the pass typed %d, want 3: %+v", len(typed), typed)
	}
	wantOnce(t, tm, alpha...)
	if typed, _ := c.Deliver(context.Background(), "", dispatch.Call{}); len(typed) != 0 {
		t.Errorf("a second pass typed %+v", typed)
	}
}

// A retry of the same broadcast (same id, same message) finishes it and
// answers for every copy; asked again, it types nothing and answers from
// the inboxes. Another message with that id is refused, nothing recorded.
func TestBroadcastOnceFinishesARetry(t *testing.T) {
	c, tm := newCourier(t, alpha...)
	env := leftPartWay(t, c)
	for try := range 2 {
		results, err := c.BroadcastOnce(context.Background(), "alpha", env, Mode{Queue: true})
		if err != nil || len(results) != 3 {
			t.Fatalf("try %d: %+v, %v", try, results, err)
		}
		for _, r := range results {
			if r.Verdict != delivery.Submitted || r.State != mailbox.StateSubmitted || r.ID != env.ID {
				t.Errorf("try %d: %s: %s (%s), %v", try, r.Target.Session, r.Verdict, r.State, r.Err)
			}
		}
		wantOnce(t, tm, alpha...)
	}
	other := env
	other.Content = "something else"
	_, err := c.BroadcastOnce(context.Background(), "alpha", other, Mode{Queue: true})
	var taken *IDTakenError
	if !errors.As(err, &taken) {
		t.Fatalf("another text with the id: %v, want *IDTakenError", err)
	}
	wantOnce(t, tm, alpha...)
	for _, a := range []string{"ana", "bob", "cy"} {
		if b, _ := c.Store.Read("alpha", a); len(b.Envelopes) != 1 {
			t.Errorf("%s's inbox: %+v", a, b.Envelopes)
		}
	}
}

// A first broadcast with the writer's id is an ordinary one; its copy for
// an agent not ready stays deferred, and a retry at once (the first still
// at work: the same lock) never types anything twice.
func TestBroadcastOnceAtOnce(t *testing.T) {
	c, tm := newCourier(t, alpha...)
	tm.SetDialog("agent-alpha-bob", true)
	env := envelope(t, "twice at once")
	var wg sync.WaitGroup
	results := make([][]Result, 2)
	for i := range results {
		wg.Go(func() {
			var err error
			if results[i], err = c.BroadcastOnce(context.Background(), "alpha", env, Mode{Queue: true}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for i, rs := range results {
		for _, r := range rs {
			want := delivery.Submitted
			if r.Target.Name == "bob" {
				want = delivery.Deferred
			}
			if r.Verdict != want {
				t.Errorf("call %d: %s: %s, want %s", i, r.Target.Session, r.Verdict, want)
			}
		}
	}
	wantOnce(t, tm, "agent-alpha-ana", "agent-alpha-cy")
	if got := tm.Received("agent-alpha-bob"); len(got) != 0 {
		t.Errorf("bob received %q through his dialog", got)
	}
	tm.SetDialog("agent-alpha-bob", false)
	if _, err := c.BroadcastOnce(context.Background(), "alpha", env, Mode{Queue: true}); err != nil {
		t.Fatal(err)
	}
	wantOnce(t, tm, alpha...)
}
