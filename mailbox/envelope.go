package mailbox

import (
	"maps"
	"slices"
	"time"

	"github.com/agentmsg/agentmsg/message"
)

// Type says what a message is for; receivers dispatch on it.
type Type string

// Message types. The set is open: an unknown type is stored and read back
// unchanged, so a newer sender does not break an older reader.
const (
	TypeText             Type = "text"
	TypeStatus           Type = "status"
	TypeShutdownRequest  Type = "shutdown-request"
	TypeShutdownResponse Type = "shutdown-response"
	TypePlan             Type = "plan"
	TypePlanApproval     Type = "plan-approval"
	TypeTask             Type = "task"
	TypeBroadcast        Type = "broadcast"
	TypeRequest          Type = "request"
	TypeClaim            Type = "claim"
)

// Broadcast is the To of a message sent to every agent of a team.
const Broadcast = "*"

// Envelope is one message as stored, one JSON object per inbox line.
type Envelope struct {
	ID   message.ID `json:"id"`
	From string     `json:"from"`
	// FromHost is the host the sender is on, for a message from another
	// host (agentmsg serve's link); "" is this one.
	FromHost  string            `json:"from_host,omitempty"`
	To        string            `json:"to"`
	Type      Type              `json:"type"`
	Content   string            `json:"content,omitempty"`
	Metadata  map[string]string `json:"metadata,omitempty"`
	ReplyTo   message.ID        `json:"reply_to,omitempty"`
	RequestID string            `json:"request_id,omitempty"`
	// Asked is what the sender chose for its typing, kept for a message
	// that a deliver pass types first: one from another host, whose
	// sender's choices travelled with it (a sender here applies its own
	// as it types). Before Timestamp: see Summarize's whole.
	Asked *Asked `json:"asked,omitempty"`
	// Timestamp is set by Append when zero and always stored in UTC;
	// encoding/json writes it as RFC 3339 with nanoseconds.
	Timestamp time.Time `json:"timestamp"`
	// Delivery is the latest delivery record: the one appended with the
	// message, replaced by each later update for its id.
	Delivery *Delivery `json:"delivery,omitempty"`
}

// Asked is a sender's choices for typing its message: send's flags.
type Asked struct {
	// NoQueue: an agent not ready by Until fails it (not_ready), rather
	// than it being kept for later (--no-queue, with the sender's ready
	// timeout counted from its arrival).
	NoQueue bool      `json:"no_queue,omitempty"`
	Until   time.Time `json:"until,omitzero"`
	// WhileBusy and Force are --while-busy and --force.
	WhileBusy bool `json:"while_busy,omitempty"`
	Force     bool `json:"force,omitempty"`
	// Agent names the profile to read the agent's screen with (--agent);
	// Pane is the agent's pane in its session (--pane).
	Agent string `json:"agent,omitempty"`
	Pane  string `json:"pane,omitempty"`
}

// MetaPairs is the metadata as "key=value" words, sorted by key: the way
// it is shown, to the receiver and to a person.
func (e Envelope) MetaPairs() []string {
	out := make([]string, 0, len(e.Metadata))
	for _, k := range slices.Sorted(maps.Keys(e.Metadata)) {
		out = append(out, k+"="+e.Metadata[k])
	}
	return out
}

// DeliveryState is how far a message has got into the agent's pane.
type DeliveryState string

// Delivery states.
const (
	StatePending   DeliveryState = "pending"   // stored, not yet tried
	StateTyping    DeliveryState = "typing"    // a deliverer is typing it (or died doing so)
	StateTyped     DeliveryState = "typed"     // text is in the input box
	StateSubmitted DeliveryState = "submitted" // Enter pressed and confirmed
	StateQueued    DeliveryState = "queued"    // the agent queued it behind its current turn
	StateDeferred  DeliveryState = "deferred"  // agent busy or in a dialog; retry later
	StateFailed    DeliveryState = "failed"    // gave up; LastVerdict says why
	StateRead      DeliveryState = "read"      // the agent pulled it from its inbox
	StateInbox     DeliveryState = "inbox"     // only for the agent to read (a mailbox-only send); never typed
	StateSkipped   DeliveryState = "skipped"   // no longer to be typed (a request claimed or expired); LastVerdict says why
	StateHandled   DeliveryState = "handled"   // a person dealt with it by hand (agentmsg top); never typed again
)

// Outstanding reports whether a delivery still has work to do; compaction
// never drops such a message.
func (s DeliveryState) Outstanding() bool {
	// typed: left in the box, not confirmed; a deliverer presses submit
	// on it (or types it again if it is provably gone).
	return s == StatePending || s == StateDeferred || s == StateTyping || s == StateTyped
}

// Seen reports whether the agent has seen the message in its pane: it was
// submitted there, or queued behind the agent's turn, or the agent pulled
// it. Compaction may drop a seen message the agent's cursor has not passed;
// never an unseen one.
func (s DeliveryState) Seen() bool {
	return s == StateSubmitted || s == StateQueued || s == StateRead
}

// Delivery records the progress of one message to its receiver.
type Delivery struct {
	State       DeliveryState `json:"state"`
	Attempts    int           `json:"attempts,omitempty"`
	LastVerdict string        `json:"last_verdict,omitempty"`
	// Reason says why in one word, for a program: why a message waits
	// (timeout, behind_older, dialog, draft, busy, gone, locked, ...) or
	// did not go through.
	Reason  string    `json:"reason,omitempty" enum:"Reason" jsonschema:"why it waits or did not go through, in one word"`
	Updated time.Time `json:"updated,omitzero"`
	// Reached is how far typing it may have got in the agent's pane (see
	// delivery.Step), recorded before each step: "pasted" (the text may be
	// in the box), "unseen" (a paste never showed and may still arrive) or
	// "pressed" (submit may have reached it). A deliverer that finds no
	// trace of it types it again only when empty or "pasted".
	Reached string `json:"reached,omitempty"`
}

// UnderWay reports whether a deliverer is typing the message into the
// agent's pane, or about to, and has not yet recorded how that ended. One
// that recorded that it waits for the agent (a Reason, nothing Reached:
// the agent is busy, say) has nothing of the message in the pane yet.
func (d *Delivery) UnderWay() bool {
	return d != nil && d.State == StateTyping && (d.Reached != "" || d.Reason == "")
}

// Position is a place in an inbox: just after the line ending at Offset in
// the inbox generation Gen, which is just after message LastID.
//
// Offsets are only meaningful within one generation, because compaction
// rewrites the file. When the generation has changed, the position is
// found again from LastID (compaction keeps every message a saved cursor
// points at, see Compact). The zero Position is the start of the inbox.
type Position struct {
	Gen    string     `json:"gen,omitempty"`
	Offset int64      `json:"offset"`
	LastID message.ID `json:"last_id,omitempty"`
}

// record is any inbox line: an envelope, an update ({"update": id,
// "delivery": {...}}), or the header that starts every inbox file
// ({"gen": ...}). Embedding makes an envelope decode unchanged.
type record struct {
	Envelope
	Update message.ID `json:"update,omitempty"`
	Gen    string     `json:"gen,omitempty"`
}

// updateRecord is written for a delivery change; a separate type so that
// it does not carry the envelope's empty, non-omitempty fields.
type updateRecord struct {
	Update   message.ID `json:"update"`
	Delivery *Delivery  `json:"delivery"`
}

// headerRecord is the first line of every inbox file. Each new file (the
// first append, or a compaction) gets a fresh random generation, so a
// Position taken in an older file is recognised as such even when its
// offset happens to fit the new one.
type headerRecord struct {
	Gen     string    `json:"gen"`
	Created time.Time `json:"created"`
}
