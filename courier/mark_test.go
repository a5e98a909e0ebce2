package courier

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/mailbox"
)

// stored appends a message to ana's inbox with delivery record d, as an
// earlier send left it.
func stored(t *testing.T, c *Courier, text string, d mailbox.Delivery) mailbox.Envelope {
	t.Helper()
	env := envelope(t, text)
	env.To, env.Delivery = "ana", &d
	box, err := c.Store.Box("alpha", "ana")
	if err != nil {
		t.Fatal(err)
	}
	if err := box.Append(env); err != nil {
		t.Fatal(err)
	}
	return env
}

// A message marked handled is never typed, whatever state it waited in;
// one the agent took already cannot be marked.
func TestMarkHandled(t *testing.T) {
	for _, tt := range []struct {
		state mailbox.DeliveryState
		ok    bool
	}{
		{mailbox.StatePending, true},
		{mailbox.StateDeferred, true},
		{mailbox.StateTyped, true},
		{mailbox.StateFailed, true},
		{mailbox.StateTyping, true}, // its typist died: no one holds its lock
		{mailbox.StateSubmitted, false},
		{mailbox.StateQueued, false},
		{mailbox.StateInbox, false},
		{mailbox.StateHandled, false},
	} {
		t.Run(string(tt.state), func(t *testing.T) {
			c, tm := newCourier(t, "agent-alpha-ana")
			env := stored(t, c, "settle me", mailbox.Delivery{State: tt.state, Attempts: 1, Reached: "pasted"})
			d, err := c.MarkHandled(context.Background(), "alpha", "ana", env.ID)
			var se *StateError
			switch {
			case tt.ok && err != nil:
				t.Fatalf("MarkHandled: %v", err)
			case !tt.ok && !errors.As(err, &se):
				t.Fatalf("MarkHandled = %+v, %v; want a *StateError", d, err)
			case !tt.ok:
				if got := delivery1(t, c, env.ID); got.State != tt.state {
					t.Errorf("a refused mark changed the record to %+v", got)
				}
				return
			}
			got := delivery1(t, c, env.ID)
			if got.State != mailbox.StateHandled || got.Attempts != 1 || got.Reached != "pasted" {
				t.Errorf("record %+v, want handled with the attempts and step kept", got)
			}
			if done, err := c.Deliver(context.Background(), "", dispatch.Call{}); err != nil || len(done) != 0 {
				t.Errorf("deliver after handled: %+v, %v; want nothing", done, err)
			}
			if got := tm.Received("agent-alpha-ana"); len(got) != 0 {
				t.Errorf("a handled message was typed: %q", got)
			}
		})
	}
}

// A message a live sender is typing is not marked: that sender records
// its outcome next.
func TestMarkWaitsForNoTypist(t *testing.T) {
	c, _ := newCourier(t, "agent-alpha-ana")
	env := stored(t, c, "in flight", mailbox.Delivery{State: mailbox.StateTyping, Attempts: 1})
	unlock, err := c.holdTyping(context.Background(), env.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	if _, err := c.MarkHandled(context.Background(), "alpha", "ana", env.ID); !errors.Is(err, ErrBeingTyped) {
		t.Fatalf("MarkHandled while typed: %v; want ErrBeingTyped", err)
	}
	if d := delivery1(t, c, env.ID); d.State != mailbox.StateTyping {
		t.Errorf("record %+v, want typing still", d)
	}
}

// A message whose delivery ended without proof goes back to deliver once
// a person has looked: typed again when nothing of it shows (even after
// a press, which alone would make deliver refuse), only submitted when
// its text waits in the box, and never typed when it arrived after all.
func TestReopen(t *testing.T) {
	for _, tt := range []struct {
		name   string
		state  mailbox.DeliveryState
		reason string
		screen string // what the pane shows: "", "box" (our text in the box), "above" (submitted)
		typed  int    // pastes of it the pane took in the pass
	}{
		{"unknown, nothing on screen", mailbox.StateFailed, ReasonUnknown, "", 1},
		{"typed, still in the box", mailbox.StateTyped, ReasonInBox, "box", 0},
		{"unknown, submitted after all", mailbox.StateFailed, ReasonUnknown, "above", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, spy := newSpyCourier(t)
			env := stored(t, c, "try again", mailbox.Delivery{State: tt.state, Attempts: 1, Reached: "pressed", Reason: tt.reason})
			text := string(env.ID) + ": try again"
			pane := spy.fake.PaneID("agent-alpha-ana")
			switch tt.screen {
			case "box":
				_ = spy.fake.Paste(context.Background(), pane, text)
			case "above":
				_ = spy.fake.Paste(context.Background(), pane, text)
				_ = spy.fake.SendBytes(context.Background(), pane, '\r')
			}
			pastes := 0
			spy.before = func(what string) {
				if what == "paste" {
					pastes++
				}
			}
			d, err := c.Reopen(context.Background(), "alpha", "ana", env.ID)
			if err != nil || d.State != mailbox.StatePending || d.Reached != "" || d.Attempts != 1 {
				t.Fatalf("Reopen = %+v, %v; want pending, no step, attempts kept", d, err)
			}
			done, err := c.Deliver(context.Background(), "", dispatch.Call{})
			if err != nil || len(done) != 1 || !done[0].OK() {
				t.Fatalf("deliver: %+v, %v; want it taken", done, err)
			}
			if pastes != tt.typed {
				t.Errorf("pasted %d times, want %d", pastes, tt.typed)
			}
			if got := spy.fake.Received("agent-alpha-ana"); !slices.Equal(got, []string{text}) {
				t.Errorf("the agent received %q, want the message once", got)
			}
		})
	}
}

// Only a delivery that ended without proof is retried: one waiting still
// is deliver's, and one taken is done.
func TestReopenRefusesOtherStates(t *testing.T) {
	for _, st := range []mailbox.DeliveryState{mailbox.StatePending, mailbox.StateDeferred, mailbox.StateSubmitted, mailbox.StateHandled} {
		c, _ := newCourier(t, "agent-alpha-ana")
		env := stored(t, c, "x", mailbox.Delivery{State: st})
		var se *StateError
		if _, err := c.Reopen(context.Background(), "alpha", "ana", env.ID); !errors.As(err, &se) || se.State != st {
			t.Errorf("Reopen of a %s message: %v; want a *StateError", st, err)
		}
	}
	c, _ := newCourier(t, "agent-alpha-ana")
	if _, err := c.Reopen(context.Background(), "alpha", "ana", envelope(t, "never stored").ID); !errors.Is(err, mailbox.ErrNoMessage) {
		t.Errorf("Reopen of a message not there: %v; want ErrNoMessage", err)
	}
}
