package service

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentmsg/agentmsg/courier"
	"github.com/agentmsg/agentmsg/delivery"
	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/hosts"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
	"github.com/agentmsg/agentmsg/target"
)

// Hosts is this host among others: the daemon's link (package hosts). It
// is nil where no daemon serves the caller; a message to another host is
// then refused (ErrNoLink).
type Hosts interface {
	// Name is this host's.
	Name() string
	// Send carries a stamped message to an agent on another host and
	// waits for its verdict there, within the sender's timeouts.
	Send(ctx context.Context, req RemoteRequest) (courier.Result, error)
	// List is every host on the bus, this one first.
	List(ctx context.Context) ([]hosts.HostInfo, error)
	// Sent is what this host keeps of the copies of message id it sent
	// to other hosts ("": of every message), oldest first.
	Sent(ctx context.Context, id message.ID) ([]hosts.Sent, error)
}

// ErrNoLink: a message to another host, and no daemon to carry it.
var ErrNoLink = errors.New("this agentmsg has no link to other hosts")

// ErrUnknownHost: a host name no host on the bus has.
var ErrUnknownHost = errors.New("no such host")

// RemoteRequest is a message to an agent on another host: its envelope
// stamped here (id, sender, cleaned text), and how its sender wants it
// delivered there.
type RemoteRequest struct {
	Host string
	To   target.Target
	Env  mailbox.Envelope
	// Tag is the sender's upper-case name, as in the id.
	Tag string
	Delivery
	// Create lets a mailbox-only message start an unknown name's inbox.
	Create bool
	// InboxIfAbsent: to an agent with no session there, recorded in its
	// inbox (a reply to a sender without one).
	InboxIfAbsent bool
}

// local reports whether host names this host ("" does).
func (s *Service) local(host string) bool {
	return host == "" || (s.Hosts != nil && host == s.Hosts.Name())
}

// sendRemote is Send to an agent on another host.
func (s *Service) sendRemote(ctx context.Context, req SendRequest) (SendResult, error) {
	out := SendResult{From: s.Name}
	if s.Hosts == nil {
		return out, fmt.Errorf("%w: a message to host %s travels through agentmsg serve, which links this host to the others; start it (agentmsg serve), or leave --host out for an agent on this machine", ErrNoLink, req.Host)
	}
	env, err := Envelope(req.Draft)
	if err != nil {
		return out, err
	}
	if err := s.stamp(nil, &env); err != nil {
		return out, err
	}
	if req.ReplyTo != "" {
		env.ReplyTo = req.ReplyTo
		if orig, err := s.ownMessage(req.ReplyTo); err == nil {
			env.RequestID = orig.RequestID
		}
	}
	req.Delivery = s.remoteDelivery(req.Delivery)
	out.Result, err = s.Hosts.Send(ctx, RemoteRequest{Host: req.Host, To: req.To, Env: env, Tag: s.Sender, Delivery: req.Delivery, Create: !req.RefuseUnknown, InboxIfAbsent: req.InboxIfAbsent})
	return out, err
}

// remoteDelivery is del for a message to another host: with the caller's
// own ready timeout (its flag or configuration), which the other host
// applies and this one waits by.
func (s *Service) remoteDelivery(del Delivery) Delivery {
	if del.Call.ReadyTimeout <= 0 && s.Dispatcher != nil {
		if d, err := s.Dispatcher(); err == nil {
			del.Call.ReadyTimeout = d.ReadyTimeout(del.Call)
		}
	}
	return del
}

// Hostlist is every host on the bus, this one first.
func (s *Service) Hostlist(ctx context.Context) ([]hosts.HostInfo, error) {
	if s.Hosts == nil {
		return nil, fmt.Errorf("%w: hosts are linked by agentmsg serve; start it (agentmsg serve) and ask again", ErrNoLink)
	}
	return s.Hosts.List(ctx)
}

// Received is what became at once of a message from another host.
type Received struct {
	Target target.Target
	// State is its state in the inbox (pending: to be typed; inbox: to
	// be read), or not_found/failed when it was not recorded.
	State  string
	Reason string
	Detail string
	// Fresh: recorded by this call (not by an earlier hand-over);
	// Refused: not recorded at all (State says why).
	Fresh, Refused bool
	// Until, when set, is when it fails unless typed (--no-queue): a
	// deliver pass then says so.
	Until time.Time
}

// Receiver records the messages that other hosts sent to this host's
// agents, a batch at a time: each inbox is read once and each agent looked
// up once per batch, and Flush makes the whole batch durable at once (an
// fsync per message made a thousand messages a ten-second wait).
type Receiver struct {
	s *Service
	// sessions are the agent sessions on the server, listed once per
	// batch (nil until then; sessions come and go between batches).
	sessions map[string]bool
	// Seen, when set, holds the sessions a listing found a moment ago
	// (SessionsSeen), shared by the batches: one found there needs no
	// listing of its own. A session not in it is always listed: a new
	// agent is never refused for an old listing, and an agent gone since
	// (seconds at most) leaves its message waiting in its inbox, as one
	// that left right after a listing would.
	Seen *SessionsSeen
	// seen are the sessions this batch took from Seen.
	seen    map[string]bool
	held    map[[2]string]map[message.ID]heldCopy // inbox -> id -> what holds it
	written map[[2]string]*mailbox.Box            // inboxes appended to
}

// NewReceiver starts a batch.
func (s *Service) NewReceiver() *Receiver {
	return &Receiver{s: s, held: map[[2]string]map[message.ID]heldCopy{}, written: map[[2]string]*mailbox.Box{}}
}

// Flush makes what the batch recorded durable; only then may its packets
// be acknowledged, and its messages typed.
func (r *Receiver) Flush() error {
	r.held = map[[2]string]map[message.ID]heldCopy{}
	written := r.written
	r.written = map[[2]string]*mailbox.Box{}
	if len(written) > syncEach {
		return r.s.Store.Sync()
	}
	for _, b := range written {
		if err := b.Sync(); err != nil {
			return err
		}
	}
	return nil
}

// syncEach is how many inboxes a batch syncs one by one; more are synced
// with one call for the whole file system.
const syncEach = 16

// Sessions are the agent sessions the batch found on the server, for the
// deliver pass that types its messages (DeliverRequest.Listed): a whole
// listing when it made one, else those it took from a listing a moment
// ago (Seen), which spares the pass a listing of its own, a tmux process
// before each message from another host was typed. Only whether to look:
// the pass finds the agent's pane by a look of its own.
func (r *Receiver) Sessions() courier.Listing {
	if r.sessions != nil {
		return courier.Listing{Sessions: slices.Collect(maps.Keys(r.sessions)), Complete: true}
	}
	return courier.Listing{Sessions: slices.Collect(maps.Keys(r.seen))}
}

// Receive records a message another host (from) sent to one of this
// host's agents, once by id, as waiting for delivery (Deliver types it),
// or refuses it (no such agent: nothing recorded). An error is one to
// retry (the disk, tmux): the packet is handed over again. The record is
// durable only after Flush.
func (r *Receiver) Receive(ctx context.Context, from string, id message.ID, m hosts.RemoteMessage) (Received, error) {
	s := r.s
	refuse := func(state, reason, detail string) (Received, error) {
		return Received{State: state, Reason: reason, Detail: detail, Refused: true}, nil
	}
	t, err := target.New(m.Team, m.Agent)
	if err != nil {
		return refuse("failed", courier.ReasonNotFound, err.Error())
	}
	out := Received{Target: t}
	team, agent := target.Inbox(t)
	box, err := s.Store.Box(team, agent)
	if err != nil {
		return refuse("failed", courier.ReasonNotFound, err.Error())
	}
	ids, err := r.inbox(team, agent)
	if err != nil {
		return out, err
	}
	if c, held := ids[id]; held {
		if c.host != from {
			// Another message, from another host or this one, has this
			// id here: recording this one too would make an id name two
			// messages, and taking it for the other would keep it from
			// its sender without a word. Its sender hears it failed.
			by := "this host"
			if c.host != "" {
				by = "host " + c.host
			}
			return refuse("failed", ReasonDuplicateID, fmt.Sprintf("%s/%s's inbox on host %s holds another message with id %s already, from %s: not recorded", team, agent, s.hostName(), id, by))
		}
		out.State = c.state
		return out, nil
	}
	env, err := Envelope(Draft{Text: m.Text, Type: m.Type, Meta: m.Meta})
	if err != nil {
		return refuse("failed", "protocol", err.Error())
	}
	sender, err := target.ParseName(m.Sender)
	if err != nil || !message.Valid(string(id)) || !strings.HasPrefix(string(id), "MSG_"+m.Tag+"_") {
		return refuse("failed", "protocol", fmt.Sprintf("sender %q or id %s is not valid", m.Sender, id))
	}
	env.ID, env.From, env.FromHost, env.To = id, sender, from, agent
	env.Content = message.Clean(env.Content)
	if message.Valid(m.ReplyTo) {
		env.ReplyTo = message.ID(m.ReplyTo)
	}
	if mailbox.ValidRequestID(m.RequestID) {
		env.RequestID = m.RequestID
	}
	state := mailbox.StatePending
	if m.MailboxOnly {
		state = mailbox.StateInbox
		if !m.Create {
			if err := s.refuseUnknown(ctx, t); err != nil {
				var unknown *UnknownAgentError
				if errors.As(err, &unknown) {
					return refuse(string(delivery.NotFound), courier.ReasonNotFound, err.Error())
				}
				return out, err
			}
		}
	} else {
		there, err := r.there(ctx, t, m.InboxIfAbsent)
		if err != nil {
			return out, err
		}
		if !there && m.InboxIfAbsent {
			state = mailbox.StateInbox
		} else if !there {
			return refuse(string(delivery.NotFound), courier.ReasonNotFound, fmt.Sprintf("no tmux session %s on host %s's server", t.Session, s.hostName()))
		}
	}
	if state == mailbox.StatePending {
		asked, refused, err := r.asked(m)
		switch {
		case err != nil:
			return out, err
		case refused != nil:
			return refuse("failed", courier.ReasonError, refused.Error())
		}
		env.Asked = asked
		if asked != nil {
			out.Until = asked.Until
		}
	}
	env.Delivery = &mailbox.Delivery{State: state, Updated: s.mailboxNow(), LastVerdict: "from host " + from}
	if err := box.AppendBatched(env); err != nil {
		return out, fmt.Errorf("recording %s in %s/%s's inbox: %w", id, team, agent, err)
	}
	r.written[[2]string{team, agent}] = box
	ids[id] = heldCopy{string(state), from}
	out.State, out.Fresh = string(state), true
	return out, nil
}

// asked is what m's sender chose for its typing, kept with it for the pass
// that types it here; nil for the defaults. With --no-queue, its ready
// timeout counts from now. A profile this host does not have is refused
// now, not when its turn comes (err: refused, with why); fail is an error
// to retry.
func (r *Receiver) asked(m hosts.RemoteMessage) (a *mailbox.Asked, refused, fail error) {
	ask := mailbox.Asked{NoQueue: !m.Queue, WhileBusy: m.WhileBusy, Force: m.Force, Agent: m.Profile, Pane: m.Pane}
	if ask == (mailbox.Asked{}) {
		return nil, nil, nil
	}
	if ask.NoQueue || ask.Agent != "" {
		d, err := r.s.Dispatcher()
		if err != nil {
			return nil, nil, err
		}
		if ask.NoQueue {
			ask.Until = r.s.mailboxNow().Add(d.ReadyTimeout(dispatch.Call{ReadyTimeout: m.ReadyTimeout}))
		}
		if ask.Agent != "" {
			if _, err := d.ProfileNamed(ask.Agent); err != nil {
				return nil, fmt.Errorf("its sender chose profile %s, on host %s: %w", ask.Agent, r.s.hostName(), err), nil
			}
		}
	}
	return &ask, nil, nil
}

// ReasonDuplicateID: a message from another host whose id a message in
// its inbox here has already (from another host, or from this one).
const ReasonDuplicateID = "duplicate_id"

// heldCopy is a message an inbox holds: its state, and the host it came
// from ("" this one).
type heldCopy struct{ state, host string }

// inbox is the ids in team/agent's inbox, their states and hosts, read
// once per batch; an inbox that cannot be read is an error, never "not
// there" (that would record twice).
func (r *Receiver) inbox(team, agent string) (map[message.ID]heldCopy, error) {
	k := [2]string{team, agent}
	if ids, ok := r.held[k]; ok {
		return ids, nil
	}
	b, err := r.s.Store.Read(team, agent)
	if err != nil {
		return nil, err
	}
	ids := make(map[message.ID]heldCopy, len(b.Envelopes))
	for _, e := range b.Envelopes {
		st := ""
		if e.Delivery != nil {
			st = string(e.Delivery.State)
		}
		ids[e.ID] = heldCopy{st, e.FromHost}
	}
	r.held[k] = ids
	return ids, nil
}

// there reports whether t has a session on this host's server, from one
// listing of the server per batch, or from a listing a moment ago that
// found it (Seen).
//
// absentToInbox: a message that goes to the inbox of an agent not there
// (a reply) is decided on a listing of its own.
func (r *Receiver) there(ctx context.Context, t target.Target, absentToInbox bool) (bool, error) {
	if r.sessions == nil && !absentToInbox && r.Seen.has(t.Session, r.s.mailboxNow()) {
		if r.seen == nil {
			r.seen = map[string]bool{}
		}
		r.seen[t.Session] = true
		return true, nil
	}
	if r.sessions == nil {
		d, err := r.s.Dispatcher()
		if err != nil && !noTmux(err) {
			return false, err
		}
		var on []target.Target
		if d != nil {
			if on, err = d.Targets(ctx, ""); err != nil && !noTmux(err) {
				return false, fmt.Errorf("listing the agents' sessions: %w", err)
			}
		}
		r.sessions = make(map[string]bool, len(on))
		for _, x := range on {
			r.sessions[x.Session] = true
		}
		r.Seen.note(r.sessions, r.s.mailboxNow())
	}
	return r.sessions[t.Session], nil
}

// SessionsSeen are the agent sessions the last listing found, and when:
// for seenFor after it, a message to one of them is recorded without a
// listing of its own (one tmux process of the three a message from another
// host cost on tmux 3.3a before its typing).
type SessionsSeen struct {
	mu       sync.Mutex
	at       time.Time
	sessions map[string]bool
}

// seenFor is how long a listing stands for a session it found.
const seenFor = 2 * time.Second

func (s *SessionsSeen) has(session string, now time.Time) bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions[session] && now.Sub(s.at) < seenFor && !now.Before(s.at)
}

func (s *SessionsSeen) note(sessions map[string]bool, now time.Time) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.at, s.sessions = now, sessions
}

func (s *Service) hostName() string {
	if s.Hosts == nil {
		return "this"
	}
	return s.Hosts.Name()
}

// MessageState is message id's delivery record in team/agent's inbox;
// ok is false when the inbox does not hold it.
func (s *Service) MessageState(team, agent string, id message.ID) (d mailbox.Delivery, ok bool, err error) {
	b, err := s.Store.Read(team, agent)
	if err != nil {
		return d, false, err
	}
	for _, e := range b.Envelopes {
		if e.ID == id {
			if e.Delivery != nil {
				d = *e.Delivery
			}
			return d, true, nil
		}
	}
	return d, false, nil
}

// remoteLog is what this host sent to agents on other hosts (id: that
// message only; else those req names), as log entries: each copy, with
// its host and the state that host last reported. None without a link.
func (s *Service) remoteLog(ctx context.Context, req LogRequest, id message.ID) ([]LogEntry, []HistoryCopy, error) {
	if s.Hosts == nil {
		return nil, nil, nil
	}
	sent, err := s.Hosts.Sent(ctx, id)
	if err != nil {
		return nil, nil, fmt.Errorf("what this host sent to other hosts: %w", err)
	}
	var entries []LogEntry
	var copies []HistoryCopy
	for _, c := range sent {
		if req.Team != "" && c.Team != req.Team || req.Agent != "" && c.Agent != req.Agent {
			continue
		}
		env := mailbox.Envelope{ID: message.ID(c.ID), From: c.From, To: c.Agent, Type: mailbox.Type(c.Type), Content: c.Text,
			Timestamp: c.SentAt, Delivery: &mailbox.Delivery{State: mailbox.DeliveryState(c.State), Reason: c.Reason, LastVerdict: c.Detail, Updated: c.At}}
		if env.Timestamp.IsZero() {
			env.Timestamp = c.At // kept before it said when it was sent
		}
		entries = append(entries, LogEntry{Team: c.Team, Inbox: c.Agent, Host: c.Host, Envelope: env})
		ds := []mailbox.Delivery{}
		for _, r := range c.Reports {
			ds = append(ds, mailbox.Delivery{State: mailbox.DeliveryState(r.State), Reason: r.Reason, LastVerdict: r.Detail, Updated: r.At})
		}
		first := env
		first.Delivery = &mailbox.Delivery{State: hosts.StateOutbox, Updated: env.Timestamp}
		copies = append(copies, HistoryCopy{Team: c.Team, Inbox: c.Agent, Host: c.Host, Message: first, Delivery: ds})
	}
	return entries, copies, nil
}
