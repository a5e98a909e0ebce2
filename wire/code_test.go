package wire

import (
	"errors"
	"testing"

	"github.com/agentmsg/agentmsg/courier"
	"github.com/agentmsg/agentmsg/delivery"
	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/mailbox"
)

// A verdict read back from a record (a retried send, another host's
// report: courier.VerdictOf) exits as a live send with that verdict does.
func TestARecordedVerdictExitsAsALiveOne(t *testing.T) {
	why := errors.New("the record's words")
	cases := []struct {
		state  mailbox.DeliveryState
		reason string
		want   int
	}{
		{mailbox.StateSubmitted, "", ExitOK},
		{mailbox.StateQueued, "", ExitOK},
		{mailbox.StateDeferred, courier.ReasonBusy, ExitOK},
		{mailbox.StateInbox, "", ExitOK},
		{mailbox.StateSkipped, "", ExitOK},
		{mailbox.StateTyped, courier.ReasonInBox, ExitUnconfirmed},
		{mailbox.StateTyped, courier.ReasonUnknown, ExitUnconfirmed},
		{mailbox.StateFailed, courier.ReasonUnknown, ExitUnconfirmed},
		{mailbox.DeliveryState(delivery.VerdictUnknown), "", ExitUnconfirmed},
		{mailbox.StateFailed, courier.ReasonBusy, ExitNotReady},
		{mailbox.StateFailed, courier.ReasonNotFound, ExitNotFound},
		{mailbox.DeliveryState(delivery.NotFound), "", ExitNotFound},
		{mailbox.StateFailed, courier.ReasonError, ExitError},
	}
	for _, c := range cases {
		v, err := courier.VerdictOf(c.state, c.reason, why)
		r := courier.Result{Outcome: dispatch.Outcome{Verdict: v, Err: err}}
		if got := ResultCode(r); got != c.want {
			t.Errorf("%s (%s): verdict %s exits %d, want %d", c.state, c.reason, v, got, c.want)
		}
	}
}
