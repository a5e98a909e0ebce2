package hosts

import (
	"encoding/json"
	"fmt"
	"time"
)

// Packet is what travels between hosts: a message to one of the receiving
// host's agents, or a state change of a message the receiving host sent.
type Packet struct {
	Kind string `json:"kind"`
	// From is the sending host. The receiver checks it against the
	// subject, which the sender's permissions prove.
	From string `json:"from"`
	// To is the receiving host.
	To string `json:"to"`
	// ID is the message's id (MSG_<SENDER>_<8 hex>).
	ID string `json:"id"`

	// A message (KindMessage).
	Message *RemoteMessage `json:"message,omitempty"`
	// A state change (KindEvent).
	Event *RemoteEvent `json:"event,omitempty"`
}

// RemoteMessage is a message to an agent on another host, with what its
// sender chose for its delivery.
type RemoteMessage struct {
	Team  string `json:"team"`
	Agent string `json:"agent"`
	// Sender is the sender's name on its host ("lead"); Tag is the
	// upper-case name in the id ("LEAD").
	Sender    string            `json:"sender"`
	Tag       string            `json:"tag"`
	Type      string            `json:"type,omitempty"`
	Text      string            `json:"text"`
	Meta      map[string]string `json:"meta,omitempty"`
	ReplyTo   string            `json:"reply_to,omitempty"`
	RequestID string            `json:"request_id,omitempty"`
	Sent      time.Time         `json:"sent"`
	// Delivery options, as the sender's flags.
	Queue       bool `json:"queue"`
	MailboxOnly bool `json:"mailbox_only,omitempty"`
	WhileBusy   bool `json:"while_busy,omitempty"`
	Force       bool `json:"force,omitempty"`
	Create      bool `json:"create,omitempty"`
	// Profile names the profile to read the agent's screen with (--agent),
	// looked up among the receiving host's; Pane is --pane.
	Profile string `json:"profile,omitempty"`
	Pane    string `json:"pane,omitempty"`
	// InboxIfAbsent: an agent with no session gets it in its inbox (a
	// reply to a sender that has none), not not_found.
	InboxIfAbsent bool          `json:"inbox_if_absent,omitempty"`
	ReadyTimeout  time.Duration `json:"ready_timeout,omitempty"`
}

// RemoteEvent is how far a message got on the host it was sent to.
type RemoteEvent struct {
	Team  string `json:"team"`
	Agent string `json:"agent"`
	// State is the message's delivery state in the agent's inbox there
	// (pending, typing, submitted, queued, deferred, typed, unknown,
	// failed, inbox, read, ...), or not_found when no such agent is there.
	State  string    `json:"state"`
	Reason string    `json:"reason,omitempty"`
	Detail string    `json:"detail,omitempty"`
	At     time.Time `json:"at"`
	// Seq orders the events of one message: a later one replaces an
	// earlier one, never the reverse.
	Seq int `json:"seq"`
}

// dedupID is the packet's Nats-Msg-Id: the message's id, and for an event
// also its sequence, so a publish retried is recognised by the stream.
func (p Packet) dedupID() string {
	switch {
	case p.Kind == KindEvent && p.Event != nil:
		return fmt.Sprintf("%s.%s.%s.ev%d", p.ID, p.Event.Team, p.Event.Agent, p.Event.Seq)
	case p.Message != nil:
		// A broadcast's copies share the message's id: one per inbox.
		return CopyKey(p.ID, p.Message.Team, p.Message.Agent)
	}
	return p.ID
}

// CopyKey names one copy of message id: the one for team/agent ("" team:
// a team-less agent).
func CopyKey(id, team, agent string) string {
	if team == "" {
		team = "-"
	}
	return id + "." + team + "." + agent
}

// check refuses a packet that is not whole.
func (p Packet) check() error {
	switch {
	case p.ID == "" || p.From == "" || p.To == "":
		return fmt.Errorf("packet without id, sending or receiving host")
	case p.Kind == KindMessage && p.Message == nil:
		return fmt.Errorf("message packet %s without its message", p.ID)
	case p.Kind == KindEvent && p.Event == nil:
		return fmt.Errorf("event packet %s without its event", p.ID)
	case p.Kind != KindMessage && p.Kind != KindEvent:
		return fmt.Errorf("packet %s of unknown kind %q", p.ID, p.Kind)
	}
	return nil
}

func encode(p Packet) ([]byte, error) { return json.Marshal(p) }

func decode(data []byte) (Packet, error) {
	var p Packet
	if err := json.Unmarshal(data, &p); err != nil {
		return p, err
	}
	return p, p.check()
}
