package courier

import (
	"errors"
	"testing"

	"github.com/agentmsg/agentmsg/delivery"
	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/mailbox"
)

// Every stored state, with the reasons that change its meaning, tells its
// sender one verdict, whether a retried send reads it here or a host
// reports it from there; the errors keep what their callers test with
// errors.Is.
func TestVerdictOfEveryStoredState(t *testing.T) {
	why := errors.New("the record's words")
	cases := []struct {
		state  mailbox.DeliveryState
		reason string
		want   delivery.Verdict
		is     error // the error wraps it, when set
		noErr  bool
	}{
		{mailbox.StateSubmitted, "", delivery.Submitted, nil, true},
		{mailbox.StateQueued, "", delivery.Queued, nil, true},
		{mailbox.StateTyped, ReasonInBox, delivery.Typed, delivery.ErrUnconfirmed, false},
		{mailbox.StateTyped, ReasonUnknown, delivery.VerdictUnknown, delivery.ErrUnconfirmed, false},
		{mailbox.StateFailed, ReasonError, delivery.Failed, why, false},
		{mailbox.StateFailed, ReasonUnknown, delivery.VerdictUnknown, delivery.ErrUnconfirmed, false},
		{mailbox.StateFailed, ReasonNotFound, delivery.NotFound, dispatch.ErrTargetNotFound, false},
		{mailbox.StateFailed, ReasonBusy, delivery.NotReady, delivery.ErrNotReady, false},
		{mailbox.StateFailed, ReasonGone, delivery.NotReady, delivery.ErrNotReady, false},
		{mailbox.StateFailed, ReasonTimeout, delivery.NotReady, delivery.ErrNotReady, false},
		{mailbox.StateFailed, ReasonBehindOlder, delivery.NotReady, delivery.ErrNotReady, false},
		{mailbox.DeliveryState(delivery.NotFound), ReasonNotFound, delivery.NotFound, dispatch.ErrTargetNotFound, false},
		{mailbox.DeliveryState(delivery.VerdictUnknown), "", delivery.VerdictUnknown, delivery.ErrUnconfirmed, false},
		{mailbox.StateSkipped, "", delivery.Skipped, why, false},
		{mailbox.StateHandled, "", delivery.Skipped, why, false},
		{mailbox.StateInbox, "", delivery.Recorded, nil, true},
		{mailbox.StateRead, "", delivery.Recorded, nil, true},
		{mailbox.StateDeferred, ReasonBusy, delivery.Deferred, why, false},
		{mailbox.StatePending, "", delivery.Deferred, nil, true},
		{mailbox.StateTyping, "", delivery.Deferred, nil, true},
	}
	for _, c := range cases {
		got, err := VerdictOf(c.state, c.reason, why)
		if got != c.want {
			t.Errorf("%s (%s): verdict %s, want %s", c.state, c.reason, got, c.want)
		}
		switch {
		case c.noErr && err != nil:
			t.Errorf("%s (%s): error %v, want none", c.state, c.reason, err)
		case !c.noErr && !(errors.Is(err, c.is) && errors.Is(err, why)):
			t.Errorf("%s (%s): error %v, want one wrapping %v and the record's words", c.state, c.reason, err, c.is)
		}
	}
}
