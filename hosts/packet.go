package hosts

import (
	"crypto/rand"
	"encoding/hex"
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

	// nonce is this packet's part of its Nats-Msg-Id (dedupID), drawn
	// once: by RecordSent, which keeps it with the packet, or by Send. It
	// never travels.
	nonce string
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

// dedupID is the packet's Nats-Msg-Id: its sending host, its copy, for an
// event its sequence, and nonce, drawn once per packet (Send) and kept
// with it in the outbox, so that a publish retried after a lost answer is
// recognised by the stream. The stream's de-duplication is shared by
// every host that publishes to it, and takes the first packet with an id:
// an id another host could guess would let it publish first and have the
// real packet dropped as a copy, unseen.
func (p Packet) dedupID(nonce string) string {
	c := p.Copy()
	switch {
	case p.Kind == KindEvent && p.Event != nil:
		return fmt.Sprintf("%s.ev%d.%s", c.Key(), p.Event.Seq, nonce)
	case p.Message != nil:
		return c.Key() + ".msg." + nonce
	}
	return p.ID + "." + nonce
}

// Copy is one copy of a message: the one for team/agent on host Host. A
// broadcast's copies share the message's id; so may two hosts' messages,
// so a copy is named by all four.
type Copy struct {
	ID, Host, Team, Agent string
}

// Copy is the copy p is about: for a message, the copy this host (From)
// sends to To; for an event, the copy its sender (From) holds.
func (p Packet) Copy() Copy {
	switch {
	case p.Kind == KindEvent && p.Event != nil:
		return Copy{ID: p.ID, Host: p.From, Team: p.Event.Team, Agent: p.Event.Agent}
	case p.Message != nil:
		return Copy{ID: p.ID, Host: p.To, Team: p.Message.Team, Agent: p.Message.Agent}
	}
	return Copy{ID: p.ID}
}

// Key names c in a key-value bucket and a subject: its id, host, team
// ("-" for a team-less agent) and agent.
func (c Copy) Key() string {
	team := c.Team
	if team == "" {
		team = "-"
	}
	return c.ID + "." + c.Host + "." + team + "." + c.Agent
}

// nonce is a packet's part of its Nats-Msg-Id: 64 random bits.
func nonce() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
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
