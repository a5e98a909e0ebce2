package courier

import (
	"fmt"

	"github.com/agentmsg/agentmsg/delivery"
	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/mailbox"
)

// VerdictOf is what a message's recorded delivery state (with its reason)
// tells its sender, and the error that says why when it is not plainly
// taken; why is what the record says (its last verdict, or its state).
// It is the one mapping from stored states to verdicts: a retried send
// answers from its message's record (SendOnce), and a send to another host
// from the state that host reports (package relay), the same way.
//
//   - submitted, queued: taken.
//   - typed: left in the box (unconfirmed), or unknown when the record
//     says it may have reached the agent without anything showing it.
//     Both exit 5 (their errors wrap delivery.ErrUnconfirmed), as a live
//     send's do.
//   - failed: not ready (exit 4, never typed) when its reason says nothing
//     was typed (notTyped); not found; unknown when it may have reached
//     the agent; else failed.
//   - not_found (a host that recorded nothing), unknown: as they say.
//   - skipped, handled: skipped (it no longer applies, or a person
//     settled it).
//   - inbox, read: recorded.
//   - pending, deferred, typing: deferred: kept, and deliver types it.
func VerdictOf(state mailbox.DeliveryState, reason string, why error) (delivery.Verdict, error) {
	// unknown is what a live send says of one that may have reached the
	// agent (exit 5, as typed): the record's words between the two.
	unknown := func() (delivery.Verdict, error) {
		return delivery.VerdictUnknown, fmt.Errorf("%w: %w; %w", delivery.ErrUnconfirmed, why, delivery.ErrUnknown)
	}
	switch state {
	case mailbox.StateSubmitted:
		return delivery.Submitted, nil
	case mailbox.StateQueued:
		return delivery.Queued, nil
	case mailbox.StateTyped:
		if reason == ReasonUnknown {
			return unknown()
		}
		return delivery.Typed, fmt.Errorf("%w: %w", delivery.ErrUnconfirmed, why)
	case mailbox.StateFailed:
		switch {
		case reason == ReasonUnknown:
			return unknown()
		case reason == ReasonNotFound:
			return delivery.NotFound, fmt.Errorf("%w: %w", dispatch.ErrTargetNotFound, why)
		case notTyped(reason):
			return delivery.NotReady, fmt.Errorf("%w: %w", delivery.ErrNotReady, why)
		}
		return delivery.Failed, why
	case mailbox.DeliveryState(delivery.NotFound):
		return delivery.NotFound, fmt.Errorf("%w: %w", dispatch.ErrTargetNotFound, why)
	case mailbox.DeliveryState(delivery.VerdictUnknown):
		return unknown()
	case mailbox.StateSkipped, mailbox.StateHandled:
		return delivery.Skipped, why
	case mailbox.StateInbox, mailbox.StateRead:
		return delivery.Recorded, nil
	case mailbox.StateDeferred:
		return delivery.Deferred, why
	case mailbox.StatePending, mailbox.StateTyping, "":
		return delivery.Deferred, nil
	}
	return delivery.Failed, why // a state this build does not know
}

// notTyped reports whether a failed message's reason says nothing of it
// was typed: its sender was told not ready (exit 4), as a send that found
// the agent so would have said; a retry cannot double it.
func notTyped(reason string) bool {
	switch reason {
	case ReasonBusy, ReasonDialog, ReasonDraft, ReasonNoBox, ReasonLocked, ReasonGone, ReasonShell,
		ReasonBehindOlder, ReasonInterrupted, ReasonTimeout:
		return true
	}
	return false
}
