package courier

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentmsg/agentmsg/delivery"
	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/mailbox"
)

// A paste whose tmux call fails after the server ran it (a server stopped
// by SIGSTOP for 12 s answered nothing, and the text landed when it went
// on) may be in the box: the send says unknown, never failed, and the
// inbox says typed, so the next deliver finds exactly our text in the box
// and submits it, once. Recorded failed, it stayed in the box, every later
// message to the agent waited behind what read as a person's draft, and
// none was typed again (e2e/multihost, seed 212175469: 105 messages to one
// agent on h2).
func TestAPasteWhoseAnswerWasLostIsFinishedNotFailed(t *testing.T) {
	c, tm := newCourier(t, "agent-alpha-ana")
	tm.FailPastesAfterLanding(1, errors.New("tmux paste-buffer: timed out after 5s"))
	first := envelope(t, "the first")
	res := c.Send(context.Background(), ana(t), first, Mode{Queue: true})
	if res.Verdict != delivery.VerdictUnknown {
		t.Fatalf("send whose paste's answer was lost: %s (%v), want unknown", res.Verdict, res.Err)
	}
	if st := state(t, c, first.ID); st != mailbox.StateTyped {
		t.Fatalf("its record says %s, want typed (it may be in the box)", st)
	}
	second := envelope(t, "the second")
	if res := c.Send(context.Background(), ana(t), second, Mode{Queue: true}); !res.OK() && res.Verdict != delivery.Deferred {
		t.Fatalf("the next send: %s (%v)", res.Verdict, res.Err)
	}
	if _, err := c.Deliver(context.Background(), "alpha", dispatch.Call{}); err != nil {
		t.Fatal(err)
	}
	got := tm.Received("agent-alpha-ana")
	if len(got) != 2 || !strings.Contains(got[0], string(first.ID)) || !strings.Contains(got[1], string(second.ID)) {
		t.Fatalf("the agent received %q, want the first once, then the second", got)
	}
	for _, e := range []mailbox.Envelope{first, second} {
		if st := state(t, c, e.ID); st != mailbox.StateSubmitted {
			t.Errorf("%s is %s, want submitted", e.ID, st)
		}
	}
}

// A paste whose call failed and that never landed (the command never
// reached the server) is not pasted again (it may still arrive, as far as
// anyone can tell): its sender was told unknown. It does not hold back the
// messages after it.
func TestAPasteThatNeverLandedHoldsNothingBack(t *testing.T) {
	c, tm := newCourier(t, "agent-alpha-ana")
	tm.LosePastes(1, errors.New("tmux paste-buffer: timed out after 5s"))
	first := envelope(t, "the first")
	if res := c.Send(context.Background(), ana(t), first, Mode{Queue: true}); res.Verdict != delivery.VerdictUnknown {
		t.Fatalf("send whose paste was lost: %s (%v), want unknown", res.Verdict, res.Err)
	}
	second := envelope(t, "the second")
	c.Send(context.Background(), ana(t), second, Mode{Queue: true})
	for range 3 {
		if _, err := c.Deliver(context.Background(), "alpha", dispatch.Call{}); err != nil {
			t.Fatal(err)
		}
	}
	got := tm.Received("agent-alpha-ana")
	if len(got) != 1 || !strings.Contains(got[0], string(second.ID)) {
		t.Fatalf("the agent received %q, want the second once (the first never pasted again)", got)
	}
	if st := state(t, c, second.ID); st != mailbox.StateSubmitted {
		t.Errorf("the second is %s, want submitted", st)
	}
	t.Logf("the first ends %s", state(t, c, first.ID))
}
