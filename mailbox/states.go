package mailbox

import (
	"fmt"
	"slices"
	"strings"
)

// The message state machine: every delivery state a copy of a message can
// be in (one inbox's copy; a broadcast has one per inbox), which of them
// are final, and every change between them that agentmsg makes, with what
// makes it. docs/api.md's diagram is drawn from this table
// (StateDiagram), and a store that checks transitions (tests set
// CheckTransitions) refuses any change the table does not list, so the
// code and the document cannot part.

// StateInfo is one delivery state, for a person and a program.
type StateInfo struct {
	State DeliveryState
	// Final: no delivery will change it by itself (a person may still:
	// retry a failed message, mark one handled).
	Final bool
	Doc   string
}

// States are every delivery state, in the order a message meets them.
var States = []StateInfo{
	{StatePending, false, "recorded, not tried yet (a broadcast's copy, a request, a message from another host): the next deliver types it"},
	{StateTyping, false, "being typed now, or its typist stopped part way (the next deliver looks at the pane before it types anything again)"},
	{StateDeferred, false, "kept: its agent was not ready (reason says why); a deliver types it once the agent is ready. It never expires by itself, but one whose sender would not have it kept (no_queue) fails once that sender's time is up"},
	{StateTyped, false, "in the agent's input box, submission not confirmed (or nothing shows whether it arrived): the next deliver submits it if the box still holds exactly it; a person may retry or mark it handled"},
	{StateSubmitted, true, "the agent took it: submitted, seen in its pane or confirmed by its hook"},
	{StateQueued, true, "the agent took it while busy and runs it after its current turn"},
	{StateFailed, true, "given up (last_verdict and reason say why); only a person's retry sends it back to deliver"},
	{StateInbox, true, "only for the agent to read from its inbox (a mailbox-only message); never typed"},
	{StateRead, true, "the agent has it by another way: a task that carried it in its text"},
	{StateSkipped, true, "no longer to be typed: the request it was about was claimed or expired first"},
	{StateHandled, true, "a person dealt with it by hand; never typed again"},
}

// Recorded stands for a message not yet in the inbox in Transitions: the
// state a message is first recorded in.
const Recorded DeliveryState = ""

// Transition is one change of a message's delivery state, and what makes it.
type Transition struct {
	From, To DeliveryState
	By       string
}

// Transitions are every change of state the code makes (Box.Append for
// From Recorded, Box.SetDelivery for the rest).
var Transitions = []Transition{
	{Recorded, StateTyping, "a sender records it and types it at once"},
	{Recorded, StateDeferred, "recorded behind older messages that still wait"},
	{Recorded, StatePending, "a broadcast, request or message from another host is recorded before it is typed"},
	{Recorded, StateInbox, "a mailbox-only message"},
	{StatePending, StateTyping, "a deliver (or the broadcast) types it"},
	{StatePending, StateDeferred, "its agent is not ready"},
	{StatePending, StateSubmitted, "a deliver finds it taken already (a person retried a message that had arrived)"},
	{StatePending, StateQueued, "a deliver finds it queued already (a person retried a message that had arrived)"},
	{StatePending, StateTyped, "a deliver finds it in the box already (a person retried it)"},
	{StateDeferred, StateTyping, "a deliver types it: the agent is ready"},
	{StateTyping, StateTyping, "each step of typing (pasted, pressed), or why it waits"},
	{StateTyping, StateSubmitted, "the agent took it"},
	{StateTyping, StateQueued, "the agent queued it behind its turn"},
	{StateTyping, StateDeferred, "its agent was not ready in time; nothing of it in the pane"},
	{StateTyping, StateTyped, "left in the box, not confirmed"},
	{StateTyping, StateFailed, "tmux or the pane failed, or its agent is gone"},
	{StatePending, StateFailed, "not typed: its agent is gone, or its sender would not have it kept past its time (no_queue)"},
	{StateDeferred, StateFailed, "not typed: its agent is gone, or its sender would not have it kept past its time (no_queue)"},
	{StatePending, StateSkipped, "the request it was about was claimed or expired"},
	{StateDeferred, StateSkipped, "the request it was about was claimed or expired"},
	{StateTyped, StateTyped, "an attempt that could touch nothing leaves it in the box"},
	{StateTyped, StateTyping, "a deliver resumes it (submits it if the box still holds it)"},
	{StateTyped, StateSubmitted, "a deliver finds it taken"},
	{StateTyped, StatePending, "a person retries it after looking at the pane"},
	{StateFailed, StatePending, "a person retries it after looking at the pane"},
	{StatePending, StateHandled, "a person dealt with it"},
	{StateDeferred, StateHandled, "a person dealt with it"},
	{StateTyping, StateHandled, "a person dealt with it (its typist had stopped)"},
	{StateTyped, StateHandled, "a person dealt with it"},
	{StateFailed, StateHandled, "a person dealt with it"},
	{StatePending, StateRead, "a task carries it in its text"},
	{StateDeferred, StateRead, "a task carries it in its text"},
	{StateTyping, StateRead, "a task carries it in its text"},
	{StateTyped, StateRead, "a task carries it in its text"},
	{StateRead, StatePending, "the task that carried it was refused: put back"},
	{StateRead, StateDeferred, "the task that carried it was refused: put back"},
	{StateRead, StateTyping, "the task that carried it was refused: put back"},
	{StateRead, StateTyped, "the task that carried it was refused: put back"},
}

// Final reports whether s is a state no delivery leaves by itself.
func (s DeliveryState) Final() bool {
	i := slices.IndexFunc(States, func(i StateInfo) bool { return i.State == s })
	return i >= 0 && States[i].Final
}

// Allowed reports whether the table lists a change from one state to
// another (from Recorded: the state a message is recorded in).
func Allowed(from, to DeliveryState) bool {
	return slices.ContainsFunc(Transitions, func(t Transition) bool { return t.From == from && t.To == to })
}

// TransitionError: a change of state the table does not list (only a
// store that checks them says so).
type TransitionError struct {
	ID       string
	From, To DeliveryState
}

func (e *TransitionError) Error() string {
	from := string(e.From)
	if e.From == Recorded {
		from = "(new)"
	}
	return fmt.Sprintf("%s: %s -> %s is not a transition of mailbox.Transitions", e.ID, from, e.To)
}

// StateDiagram is the state machine as a Mermaid diagram: each state,
// each transition (several causes of one change on one arrow), the final
// states marked.
func StateDiagram() string {
	var b strings.Builder
	b.WriteString("stateDiagram-v2\n")
	node := func(s DeliveryState) string {
		if s == Recorded {
			return "[*]"
		}
		return string(s)
	}
	type edge struct{ from, to DeliveryState }
	var order []edge
	labels := map[edge][]string{}
	for _, t := range Transitions {
		e := edge{t.From, t.To}
		if _, seen := labels[e]; !seen {
			order = append(order, e)
		}
		labels[e] = append(labels[e], t.By)
	}
	for _, e := range order {
		// Mermaid takes no colon or semicolon in a label.
		label := strings.NewReplacer(":", " -", ";", ",").Replace(strings.Join(labels[e], " / "))
		fmt.Fprintf(&b, "    %s --> %s: %s\n", node(e.from), node(e.to), label)
	}
	for _, s := range States {
		if s.Final {
			fmt.Fprintf(&b, "    %s --> [*]\n", s.State)
		}
	}
	return b.String()
}
