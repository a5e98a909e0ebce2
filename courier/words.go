package courier

import "github.com/agentmsg/agentmsg/delivery"

// Word is one value of an enumeration a program reads (a verdict, a
// reason), with what it means for a person: the API's document lists
// them from here.
type Word struct {
	Word, Doc string
}

// Verdicts are every verdict of one message to one target.
var Verdicts = []Word{
	{string(delivery.Submitted), "the agent took it"},
	{string(delivery.Queued), "the agent took it while busy and runs it after its turn"},
	{string(delivery.Deferred), "kept in the inbox: the agent was not ready (reason says why); a deliver types it later, once"},
	{string(delivery.Recorded), "recorded in the inbox only (mailbox_only, or an agent with no session)"},
	{string(delivery.Skipped), "not typed: the request it was about was claimed or expired, or a person settled it by hand"},
	{string(delivery.Typed), "left in the agent's box, submission not confirmed: look at the pane"},
	{string(delivery.VerdictUnknown), "it may have reached the agent; nothing shows whether (never typed again)"},
	{string(delivery.NotReady), "never typed: the agent was not ready in time and the sender would not have it kept (no_queue)"},
	{string(delivery.NotFound), "no such agent, or its pane cannot be told"},
	{string(delivery.Failed), "tmux or the pane failed"},
}

// BroadcastVerdicts are every verdict of a broadcast over its targets.
var BroadcastVerdicts = []Word{
	{string(AllDelivered), "every target took it (or it was only to be recorded, and was)"},
	{string(SomeDeferred), "nothing failed; some targets keep it until they are ready"},
	{string(Partial), "some targets failed, the others took or keep it"},
	{string(NoneTook), "every target failed"},
}

// Reasons are every reason, with what it means for a person.
var Reasons = []Word{
	{ReasonBehindOlder, "older messages to the agent still wait: this one waits behind them, and goes after them in order"},
	{ReasonBusy, "the agent was working the whole time"},
	{ReasonDialog, "a dialog stayed open in the agent's pane: someone must answer it"},
	{ReasonDraft, "a person's text stayed in the agent's input box"},
	{ReasonNoBox, "no input box the agent's profile knows was on screen"},
	{ReasonLocked, "another sender held the pane the whole time"},
	{ReasonGone, "the pane went away before anything was typed"},
	{ReasonShell, "the pane shows a shell prompt: the agent has exited"},
	{ReasonInterrupted, "the sender was stopped (a signal, a time limit) before anything was typed"},
	{ReasonNotFound, "no such agent, or which of its panes is the agent's cannot be told"},
	{ReasonTimeout, "not typed within the time its sender gave"},
	{ReasonInBox, "typed, and left in the box unsubmitted"},
	{ReasonUnknown, "it may have reached the agent; nothing shows whether"},
	{ReasonError, "tmux or the pane failed"},
}
