package eventlog

import "slices"

// Type is what an event is about: "message.<what>", "agent.<what>" or
// "events.lost". The list is closed (Kinds): the API describes each type
// with the fields it carries, and a test fails when the code writes a type
// it does not list.
type Type string

// Message events: a message recorded, answered, claimed or read, and each
// change of a copy's delivery state (mailbox.DeliveryState), with the
// steps of typing (pasted, unseen, pressed) and what another host reports
// of a message sent there (not_found, unknown).
const (
	MessageRecorded  Type = "message.recorded"
	MessageReplied   Type = "message.replied"
	MessageClaimed   Type = "message.claimed"
	MessagePending   Type = "message.pending"
	MessageTyping    Type = "message.typing"
	MessagePasted    Type = "message.pasted"
	MessageUnseen    Type = "message.unseen"
	MessagePressed   Type = "message.pressed"
	MessageDeferred  Type = "message.deferred"
	MessageTyped     Type = "message.typed"
	MessageSubmitted Type = "message.submitted"
	MessageQueued    Type = "message.queued"
	MessageFailed    Type = "message.failed"
	MessageInbox     Type = "message.inbox"
	MessageRead      Type = "message.read"
	MessageSkipped   Type = "message.skipped"
	MessageHandled   Type = "message.handled"
	MessageNotFound  Type = "message.not_found"
	MessageUnknown   Type = "message.unknown"
)

// Agent events: the daemon's watcher sees an agent come, change state
// (its screen, as its profile reads it) and go.
const (
	AgentAppeared Type = "agent.appeared"
	AgentReady    Type = "agent.ready"
	AgentBusy     Type = "agent.busy"
	AgentDialog   Type = "agent.dialog"
	AgentDraft    Type = "agent.draft"
	AgentUnknown  Type = "agent.unknown"
	AgentExited   Type = "agent.exited"
	AgentGone     Type = "agent.gone"
)

// TypeLost is the type of the event that stands where events that could
// not be written would have been.
const TypeLost Type = "events.lost"

// Kind is one type of event: what it means and which fields it always
// carries (besides id, time and type); the others may come too.
type Kind struct {
	Type    Type
	Doc     string
	Carries []string
	May     []string
}

var (
	messageFields = []string{"place", "team", "agent", "message_id"}
	messageMay    = []string{"from", "state", "reason", "detail"}
	agentFields   = []string{"place", "team", "agent", "pane", "state"}
	agentMay      = []string{"detail"}
)

func messageKind(t Type, doc string) Kind {
	return Kind{Type: t, Doc: doc, Carries: messageFields, May: messageMay}
}

func agentKind(t Type, doc string) Kind {
	return Kind{Type: t, Doc: doc, Carries: agentFields, May: agentMay}
}

// Kinds are every type of event the code writes.
var Kinds = []Kind{
	messageKind(MessageRecorded, "a message was recorded in an inbox (the first event of each copy); state is what it was recorded in"),
	messageKind(MessageReplied, "an answer to message_id was recorded; agent is who answered, detail the answer's id"),
	messageKind(MessageClaimed, "the request of message_id was claimed by agent"),
	messageKind(MessagePending, "recorded, not tried yet"),
	messageKind(MessageTyping, "a sender is typing it (reason, when set: why it waits for its agent)"),
	messageKind(MessagePasted, "its text is being pasted into the agent's box (recorded before the paste)"),
	messageKind(MessageUnseen, "a paste that never showed in the box, which may still arrive"),
	messageKind(MessagePressed, "submit is being pressed (recorded before the key)"),
	messageKind(MessageDeferred, "kept: its agent was not ready (reason says why); a deliver types it later"),
	messageKind(MessageTyped, "left in the agent's box, submission not confirmed (reason in_box or unknown)"),
	messageKind(MessageSubmitted, "the agent took it"),
	messageKind(MessageQueued, "the agent took it while busy and runs it after its turn"),
	messageKind(MessageFailed, "given up; reason and detail say why"),
	messageKind(MessageInbox, "recorded for the agent to read; never typed"),
	messageKind(MessageRead, "the agent read it (from its inbox: detail says by whom), or a task carried it"),
	messageKind(MessageSkipped, "not typed: the request it was about was claimed or expired"),
	messageKind(MessageHandled, "a person dealt with it; never typed again"),
	messageKind(MessageNotFound, "another host reports that it has no such agent"),
	messageKind(MessageUnknown, "another host reports that nothing shows whether it arrived"),
	agentKind(AgentAppeared, "an agent's session appeared; an event of its state follows"),
	agentKind(AgentReady, "its input box is empty and on screen: what waits for it is typed now"),
	agentKind(AgentBusy, "it is working"),
	agentKind(AgentDialog, "a dialog is open in its pane"),
	agentKind(AgentDraft, "a person's text is in its box"),
	agentKind(AgentUnknown, "its screen shows no input box its profile knows"),
	agentKind(AgentExited, "its program has exited: the pane shows a shell"),
	agentKind(AgentGone, "its session is gone (state says what it was last seen as)"),
	{Type: TypeLost, Doc: "events that could not be written (a full disk) stand here: read again what you follow",
		Carries: []string{"reason", "detail", "lost", "since"}},
}

// Known reports whether the code may write events of type t.
func Known(t Type) bool {
	return slices.ContainsFunc(Kinds, func(k Kind) bool { return k.Type == t })
}

// MessageState is the type of the event of a message's copy reaching
// state: a delivery state, a step of typing, or a verdict another host
// reports.
func MessageState(state string) Type { return "message." + Type(state) }

// AgentState is the type of the event of an agent's screen reading
// state, or of its program exiting ("exited").
func AgentState(state string) Type { return "agent." + Type(state) }
