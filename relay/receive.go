package relay

import (
	"context"
	"errors"
	"time"

	"github.com/agentmsg/agentmsg/courier"
	"github.com/agentmsg/agentmsg/eventlog"
	"github.com/agentmsg/agentmsg/hosts"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
	"github.com/agentmsg/agentmsg/service"
	"github.com/agentmsg/agentmsg/target"
)

// Message records a message another host sent to one of this host's
// agents and starts its delivery (hosts.Handler).
func (h *Relay) Message(ctx context.Context, p hosts.Packet) error {
	svc, err := h.opts.Service()
	if err != nil {
		return err
	}
	if h.batch == nil {
		h.batch, h.deliver = svc.NewReceiver(), map[[2]string]bool{}
		h.batch.Seen = &h.seen
	}
	got, err := h.batch.Receive(ctx, p.From, message.ID(p.ID), *p.Message)
	if err != nil {
		return err
	}
	id := message.ID(p.ID)
	if got.Refused {
		// Nothing recorded: the answer is all there is.
		team, agent := p.Message.Team, p.Message.Agent
		if t, err := target.New(team, agent); err == nil {
			team, agent = target.Inbox(t) // as every report names it
		}
		return h.link.Send(ctx, hosts.Packet{Kind: hosts.KindEvent, To: p.From, ID: p.ID, Event: &hosts.RemoteEvent{
			Team: team, Agent: agent, State: got.State, Reason: got.Reason, Detail: got.Detail,
			At: time.Now().UTC(), Seq: int(time.Now().UnixNano()),
		}})
	}
	team, agent := target.Inbox(got.Target)
	h.mu.Lock()
	if k := (originKey{id, team, agent}); h.origins[k] == nil {
		h.origins[k] = &origin{host: p.From, team: team, agent: agent,
			latest: mailbox.Delivery{State: mailbox.DeliveryState(got.State), LastVerdict: "from host " + p.From, Updated: time.Now()}}
	}
	h.mu.Unlock()
	if got.State == string(mailbox.StatePending) && svc.Dispatcher != nil {
		if d, err := svc.Dispatcher(); err == nil && d.Tmux != nil {
			socket, team := d.Tmux.Server().Socket, got.Target.Team
			h.deliver[[2]string{socket, team}] = true
			h.passAt(socket, team, got.Until)
		}
	}
	return nil
}

// passAt runs a deliver pass over team at until (when set): a --no-queue
// message's time is up then, and the pass fails it if none typed it.
func (h *Relay) passAt(socket, team string, until time.Time) {
	if until.IsZero() {
		return
	}
	time.AfterFunc(time.Until(until)+untilSlack, func() {
		if h.ctx.Err() == nil {
			h.opts.Deliver(socket, team, courier.Listing{})
		}
	})
}

// untilSlack is how long after a --no-queue message's time is up the pass
// that fails it starts: after, never before, its last chance.
const untilSlack = 20 * time.Millisecond

// Flush makes the batch's records durable, and only then has their
// messages typed (hosts.Handler): one typed before its record was on disk
// could be recorded, and typed, again after a crash.
func (h *Relay) Flush(ctx context.Context) error {
	if h.batch == nil {
		return nil
	}
	if err := h.batch.Flush(); err != nil {
		return err
	}
	sessions := h.batch.Sessions()
	for k := range h.deliver {
		h.opts.Deliver(k[0], k[1], sessions)
	}
	h.batch, h.deliver = nil, nil
	h.pokeReportSoon()
	return nil
}

// pokeReportSoon has the report loop tell the batch's new messages'
// senders that they wait here a moment from now, not at once: a message
// typed meanwhile is told submitted by its pass's end, and the pending
// report would only have competed with its typing for the two cores (a
// send to another host took 2 ms longer for it).
func (h *Relay) pokeReportSoon() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.soon == nil {
		h.soon = time.AfterFunc(reportSoon, func() {
			h.mu.Lock()
			h.soon = nil
			h.mu.Unlock()
			h.pokeReport()
		})
	}
}

// reportSoon is how long after its batch is recorded a message is told
// pending, unless its pass has told more by then.
const reportSoon = 50 * time.Millisecond

// Event records what became of a message this host sent (hosts.Handler),
// and writes it to the event log as a message event of its host.
func (h *Relay) Event(ctx context.Context, p hosts.Packet) error {
	ev := p.Event
	if err := h.link.RecordReport(ctx, p); errors.Is(err, hosts.ErrNotSent) {
		h.opts.Logf("hosts: refused a report from host %s of %s to %s/%s: %v", p.From, p.ID, ev.Team, ev.Agent, err)
		return nil // it counts for nothing, and is not handed over again
	} else if err != nil {
		return err
	}
	_, err := h.opts.Events.Append(eventlog.Event{Type: eventlog.MessageState(ev.State), Place: "host:" + p.From, Team: ev.Team, Agent: ev.Agent,
		Message: p.ID, Reason: ev.Reason, Detail: ev.Detail, State: ev.State})
	return err
}

// PassDone tells the relay that a deliver pass ended: what it typed for
// other hosts is reported at once.
func (h *Relay) PassDone() { h.pokeReport() }

func (h *Relay) pokeReport() {
	select {
	case h.poke <- struct{}{}:
	default:
	}
}

// reportEvery is how often the states of messages from other hosts are
// read while some are not yet told to the end (a deliver pass's end tells
// at once).
const reportEvery = 100 * time.Millisecond

// report tells each message's sending host how far it got here, whenever
// its state changed, until ctx ends. With nothing to tell it sleeps.
func (h *Relay) report(ctx context.Context) {
	t := time.NewTicker(reportEvery)
	defer t.Stop()
	for {
		h.mu.Lock()
		idle := len(h.origins) == 0
		h.mu.Unlock()
		tick := t.C
		if idle {
			tick = nil
		}
		select {
		case <-ctx.Done():
			return
		case <-tick:
		case <-h.poke:
		}
		h.reportOnce(ctx)
	}
}

func (h *Relay) reportOnce(ctx context.Context) {
	h.mu.Lock()
	inboxes := map[[2]string]bool{}
	for _, o := range h.origins {
		inboxes[[2]string{o.team, o.agent}] = true
	}
	h.mu.Unlock()
	if len(inboxes) == 0 {
		return
	}
	svc, err := h.opts.Service()
	if err != nil {
		return
	}
	defer h.nudge(svc)
	for k := range inboxes {
		states, err := h.states(svc.Store, k)
		if err != nil {
			continue
		}
		// The messages to tell of are looked up after the inbox was read:
		// a message's states are written only after its origin is noted
		// (it is typed after its batch is flushed), so none read here
		// belongs to an origin not yet noted.
		h.mu.Lock()
		mine := map[message.ID]origin{}
		for key, o := range h.origins {
			if o.team == k[0] && o.agent == k[1] {
				if d, ok := states[key.id]; ok {
					o.latest = d
				}
				mine[key.id] = *o
			}
		}
		h.mu.Unlock()
		for id, o := range mine {
			h.tell(ctx, id, o, o.latest) // when it changed since its host heard
		}
	}
}

// nudge runs a pass over a team one of whose agents is ready (at the
// watcher's last look) while a message from another host waits for it
// (pending, deferred, or left typing) and has not changed for nudgeAfter:
// a pass that could not reach tmux (a server that stopped answering for a
// while) ends with its message untouched, and an agent ready before and
// after never becomes ready for the watcher, so nothing else would type
// it (issue 30, finding 3: untyped 30 s after tmux answered again). A
// team is nudged at most every nudgeAfter; a pass already under way for
// it takes the nudge as a request for one more (Options.Deliver).
func (h *Relay) nudge(svc *service.Service) {
	if svc.Dispatcher == nil {
		return
	}
	d, err := svc.Dispatcher()
	if err != nil || d.Tmux == nil {
		return
	}
	socket, now := d.Tmux.Server().Socket, time.Now()
	teams := map[string]bool{}
	h.mu.Lock()
	for _, o := range h.origins {
		st := o.latest.State
		if st != mailbox.StatePending && st != mailbox.StateDeferred && st != mailbox.StateTyping || now.Sub(o.latest.Updated) < nudgeAfter {
			continue
		}
		if t, ok := target.InboxOwner(o.team, o.agent); ok && h.opts.Looked(socket, t.Session) == "ready" {
			teams[t.Team] = true
		}
	}
	for team := range teams {
		if now.Sub(h.nudged[team]) < nudgeAfter {
			delete(teams, team)
			continue
		}
		h.nudged[team] = now
	}
	h.mu.Unlock()
	for team := range teams {
		h.opts.Deliver(socket, team, courier.Listing{})
	}
}

// nudgeAfter is how long a message from another host waits for a ready
// agent before a pass is run for it, and how often a team is nudged.
const nudgeAfter = 2 * time.Second

// states are the delivery states written to inbox k since the report
// loop last read it, by message: at first (and after a compaction) every
// message's, from one whole read; then only the updates appended since
// (reading a long inbox whole, a few times a second, was a quarter of a
// busy daemon's work).
func (h *Relay) states(store *mailbox.Store, k [2]string) (map[message.ID]mailbox.Delivery, error) {
	if from, ok := h.read[k]; ok {
		got, end, ok, err := store.UpdatesSince(k[0], k[1], from)
		if err != nil {
			return nil, err
		}
		if ok {
			h.read[k] = end
			return got, nil
		}
	}
	b, err := store.Read(k[0], k[1])
	if err != nil {
		return nil, err
	}
	got := map[message.ID]mailbox.Delivery{}
	for _, e := range b.Envelopes {
		if e.Delivery != nil {
			got[e.ID] = *e.Delivery
		}
	}
	h.read[k] = b.End
	return got, nil
}

// tell sends o's host message id's state d, when it changed since the
// last it heard.
func (h *Relay) tell(ctx context.Context, id message.ID, o origin, d mailbox.Delivery) {
	state := string(d.State)
	if state == o.reported || state == "" {
		return
	}
	now := time.Now().UTC()
	err := h.link.Send(ctx, hosts.Packet{Kind: hosts.KindEvent, To: o.host, ID: string(id), Event: &hosts.RemoteEvent{
		Team: o.team, Agent: o.agent, State: state, Reason: d.Reason, Detail: d.LastVerdict, At: now, Seq: int(now.UnixNano()),
	}})
	if err != nil {
		return // told at the next look
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	k := originKey{id, o.team, o.agent}
	if told(state) {
		delete(h.origins, k)
	} else if cur, ok := h.origins[k]; ok {
		cur.reported = state
	}
}

// recoverWindow: after a restart, messages from other hosts changed this
// recently are reported again, final or not (the report of a final state
// may have been lost with the process; a repeat is harmless).
const recoverWindow = 10 * time.Minute

// recover finds the messages from other hosts whose story may not have
// been told to the end before this daemon started.
func (h *Relay) recover() {
	svc, err := h.opts.Service()
	if err != nil {
		return
	}
	teams, err := svc.Store.Teams()
	if err != nil {
		return
	}
	socket := ""
	if svc.Dispatcher != nil {
		if d, err := svc.Dispatcher(); err == nil && d.Tmux != nil {
			socket = d.Tmux.Server().Socket
		}
	}
	for _, team := range teams {
		agents, _ := svc.Store.Agents(team)
		for _, agent := range agents {
			b, err := svc.Store.Read(team, agent)
			if err != nil {
				continue
			}
			for _, e := range b.Envelopes {
				if e.FromHost == "" || e.Delivery == nil {
					continue
				}
				if told(string(e.Delivery.State)) && time.Since(e.Delivery.Updated) > recoverWindow {
					continue
				}
				h.origins[originKey{e.ID, team, agent}] = &origin{host: e.FromHost, team: team, agent: agent}
				if a := e.Asked; a != nil && a.NoQueue && socket != "" && e.Delivery.State.Outstanding() {
					if t, ok := target.InboxOwner(team, agent); ok {
						h.passAt(socket, t.Team, a.Until) // its timer went with the last daemon
					}
				}
			}
		}
	}
}
