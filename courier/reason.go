package courier

import (
	"errors"

	"github.com/agentmsg/agentmsg/delivery"
	"github.com/agentmsg/agentmsg/dispatch"
)

// Reasons say in one word why a message was not taken (or waits), for a
// program to act on: the inbox records it beside the verdict's words, and
// every event and front end carries it.
const (
	ReasonBehindOlder = "behind_older" // older messages to the agent wait, so this one waits behind them
	ReasonBusy        = "busy"         // the agent worked the whole ready timeout
	ReasonDialog      = "dialog"       // a dialog stayed open
	ReasonDraft       = "draft"        // a person's text stayed in the box
	ReasonNoBox       = "no_box"       // no input box was recognised on screen
	ReasonLocked      = "locked"       // another sender held the pane the whole time
	ReasonGone        = "gone"         // the pane went away before anything was typed
	ReasonShell       = "shell"        // the pane shows a shell prompt: the agent has exited
	ReasonInterrupted = "interrupted"  // the sender was stopped (a signal, a time limit)
	ReasonNotFound    = "not_found"    // no such agent, or its pane cannot be told
	ReasonTimeout     = "timeout"      // not typed within the time its sender gave (a --no-queue message from another host)
	ReasonInBox       = "in_box"       // typed, and left in the box unsubmitted
	ReasonUnknown     = "unknown"      // it may have reached the agent; nothing shows whether
	ReasonError       = "error"        // tmux or the pane failed
)

// Reason is out's reason in one word, "" for a message taken.
func Reason(out dispatch.Outcome) string {
	var nr *delivery.NotReadyError
	switch {
	case out.OK():
		return ""
	case errors.Is(out.Err, delivery.ErrInterrupted):
		return ReasonInterrupted
	case out.Verdict == delivery.NotFound:
		return ReasonNotFound
	case errors.Is(out.Err, delivery.ErrNotAgent):
		return ReasonShell
	case errors.As(out.Err, &nr):
		return stateReason(nr.State)
	case out.Verdict == delivery.Typed:
		return ReasonInBox
	case out.Verdict == delivery.VerdictUnknown:
		return ReasonUnknown
	}
	return ReasonError
}

// stateReason is why a delivery waits for an agent in state st.
func stateReason(st delivery.State) string {
	switch st {
	case delivery.Busy:
		return ReasonBusy
	case delivery.Dialog:
		return ReasonDialog
	case delivery.Draft:
		return ReasonDraft
	case delivery.Locked:
		return ReasonLocked
	case delivery.Gone:
		return ReasonGone
	}
	return ReasonNoBox
}
