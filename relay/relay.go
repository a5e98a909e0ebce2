package relay

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/agentmsg/agentmsg/config"
	"github.com/agentmsg/agentmsg/courier"
	"github.com/agentmsg/agentmsg/delivery"
	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/eventlog"
	"github.com/agentmsg/agentmsg/hosts"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
	"github.com/agentmsg/agentmsg/service"
	"github.com/agentmsg/agentmsg/target"
)

// Relay is the daemon's side of package hosts: it records what other
// hosts send to this host's agents and has it delivered by this host's
// own engine, tells the senders what became of it, and carries this host's
// messages to agents elsewhere (service.Hosts). It keeps the SSH tunnels
// of boxes that reach the bus only through this host too (tunnel.go).
type Relay struct {
	opts Options
	ctx  context.Context // the daemon's life
	link *hosts.Link
	// Messages from other hosts whose state the sender has not yet heard
	// to the end, by id.
	mu      sync.Mutex
	origins map[originKey]*origin
	poke    chan struct{}
	soon    *time.Timer // pokeReportSoon's poke to come
	// The batch being received (the link hands packets over from one
	// goroutine): what it recorded, and the teams whose agents have new
	// messages to type once it is durable.
	batch   *service.Receiver
	deliver map[[2]string]bool // socket, team
	// read is where the report loop's last read of each inbox ended: the
	// next reads only what was appended since.
	read map[[2]string]mailbox.Position
	// seen: the agents' sessions a batch listed a moment ago.
	seen service.SessionsSeen
	// gone: the hosts last found not answering (see away), by name.
	gone map[string]presenceAnswer
	// asked: the last answer of the bus about each host's presence
	// (see ask), shared by the sends that wait for that host.
	asked map[string]presenceAnswer
	// nudged: when each team was last given a pass for a message from
	// another host that waited (see nudge).
	nudged map[string]time.Time
}

// Options are the relay's wiring, set once by the daemon.
type Options struct {
	// Config is [hosts]; ReadyTimeout the configured ready timeout, which
	// a send to another host waits by when its caller set none.
	Config       config.HostsSettings
	ReadyTimeout time.Duration
	// Root is the mailbox's: the outbox is kept in Root/nats, the
	// tunnels' control sockets in Root/ssh.
	Root string
	// Service is the daemon's own caller's service (this host's server
	// and mailbox), through which messages from other hosts are recorded
	// and read.
	Service func() (*service.Service, error)
	// Deliver starts a deliver pass over team on the server at socket
	// (the daemon runs one at a time per team; one asked for while one
	// runs runs after it).
	Deliver func(socket, team string, known courier.Listing)
	// Looked is an agent's state ("ready", ...) at the daemon's watcher's
	// last look at the server at socket.
	Looked func(socket, session string) string
	// Events is the event log, where what other hosts report of this
	// host's messages is written.
	Events *eventlog.Log
	// Logf reports what goes wrong in the background.
	Logf func(format string, args ...any)
}

// presenceAnswer is what the bus said of a host's presence (when it last
// announced itself, whether that counts as up, or why it could not say),
// and when it said it.
type presenceAnswer struct {
	at, seen time.Time
	up       bool
	err      error
}

// originKey names a message from another host in one inbox: a
// broadcast's copies to two agents here share its id.
type originKey struct {
	id          message.ID
	team, agent string
}

// origin is a message from another host, and what that host last heard.
type origin struct {
	host, team, agent string
	// latest is its delivery here as last read (at first, as it was
	// recorded: pending, or inbox); reported, the state its host heard.
	latest   mailbox.Delivery
	reported string
}

// told reports whether a message's state ends its story for its sender:
// nothing changes it but a person (retry, handled), who then sees it on
// this host. Not recorded (not_found) ends it too.
func told(state string) bool { return !mailbox.DeliveryState(state).Outstanding() }

// Open starts this host's link, as opts.Config configures it, the report
// loop and the tunnels, until ctx ends or Close.
func Open(ctx context.Context, opts Options) (*Relay, error) {
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	cfg := opts.Config
	name := cfg.Name
	if name == "" {
		name = hosts.DefaultName()
	}
	h := &Relay{opts: opts, ctx: ctx, origins: map[originKey]*origin{}, poke: make(chan struct{}, 1), read: map[[2]string]mailbox.Position{}, gone: map[string]presenceAnswer{}, asked: map[string]presenceAnswer{}, nudged: map[string]time.Time{}}
	url := cfg.NATS
	link, err := hosts.Open(ctx, hosts.Options{
		Name: name, Dir: filepath.Join(opts.Root, "nats"), URL: url,
		NkeyFile: cfg.NkeyFile, CAFile: cfg.CAFile, TLSServerName: cfg.TLSServerName, Replicas: cfg.Replicas,
		Handler: h, Agents: h.agents, Logf: opts.Logf,
	})
	if err != nil {
		return nil, err
	}
	h.link = link
	h.recover()
	link.Start()
	go h.report(ctx)
	go keepTunnels(ctx, opts.Root, cfg, opts.Logf)
	return h, nil
}

// Close ends the link.
func (h *Relay) Close() {
	if h != nil && h.link != nil {
		h.link.Close()
	}
}

// Name is this host's (service.Hosts).
func (h *Relay) Name() string { return h.link.Name() }

// List is every host on the bus (service.Hosts).
func (h *Relay) List(ctx context.Context) ([]hosts.HostInfo, error) {
	return h.link.Hosts(ctx)
}

// Sent is what this host keeps of the copies of message id it sent to
// other hosts, or of every message (service.Hosts).
func (h *Relay) Sent(ctx context.Context, id message.ID) ([]hosts.Sent, error) {
	if id == "" {
		return h.link.AllSent(ctx)
	}
	return h.link.LookupSent(ctx, string(id))
}

// LookupSent is what is kept of message id's copies sent from here to
// other hosts: what service.Service.Sent asks of the link, so that
// agentmsg log --id, run in the daemon, finds a message that went to
// another host (its send's hint names that command).
func (h *Relay) LookupSent(ctx context.Context, id string) ([]hosts.Sent, error) {
	return h.link.LookupSent(ctx, id)
}

// agents are this host's agents on its own server, for its presence.
func (h *Relay) agents(ctx context.Context) []string {
	svc, err := h.opts.Service()
	if err != nil {
		return nil
	}
	d, err := svc.Dispatcher()
	if err != nil {
		return nil
	}
	ts, err := d.Targets(ctx, "")
	if err != nil {
		return nil
	}
	out := make([]string, 0, len(ts))
	for _, t := range ts {
		out = append(out, t.String())
	}
	return out
}

// remoteGrace is how much longer than the sender's ready timeout a send
// to another host waits for its verdict there: the way there and back.
const remoteGrace = 10 * time.Second

// Send carries a message to an agent on another host and waits for what
// that host's engine made of it (service.Hosts). A verdict that does not
// come in time is "deferred": the message is kept (in this host's outbox,
// or on the bus) and goes on by itself.
func (h *Relay) Send(ctx context.Context, req service.RemoteRequest) (courier.Result, error) {
	t, id := req.To, req.Env.ID
	known, err := h.link.Known(ctx, req.Host)
	if err != nil {
		return courier.Result{}, fmt.Errorf("asking the bus for host %s: %w", req.Host, err)
	}
	if !known {
		return courier.Result{}, fmt.Errorf("%w %q on the bus (%s)", service.ErrUnknownHost, req.Host, h.knownHosts(ctx))
	}
	team, agent := courier.Inbox(t)
	p := hosts.Packet{Kind: hosts.KindMessage, To: req.Host, ID: string(id), Message: &hosts.RemoteMessage{
		Team: t.Team, Agent: t.Agent(), Sender: req.Env.From, Tag: req.Tag, Type: string(req.Env.Type),
		Text: req.Env.Content, Meta: req.Env.Metadata, ReplyTo: string(req.Env.ReplyTo), RequestID: req.Env.RequestID,
		Sent: time.Now().UTC(), Queue: req.Queue, MailboxOnly: req.MailboxOnly, WhileBusy: req.Call.WhileBusy,
		Force: req.Call.Force, Create: req.Create, ReadyTimeout: req.Call.ReadyTimeout, InboxIfAbsent: req.InboxIfAbsent,
	}}
	if req.Call.Agent != nil {
		p.Message.Profile = req.Call.Agent.Name
	}
	p.Message.Pane = req.Call.Pane
	if t.IsRalph() {
		p.Message.Team = ""
	}
	out := courier.Result{Outcome: dispatch.Outcome{Target: t, ID: id}, Host: req.Host}
	// Recorded before it goes: a report counts only of a copy recorded as
	// sent to the host that reports it (hosts.RecordReport), and this
	// host's log and GET /v1/messages/{id} list it from here on.
	sent := hosts.Sent{ID: string(id), Host: req.Host, Team: team, Agent: agent, State: hosts.StateOutbox, At: time.Now().UTC(),
		From: req.Env.From, Type: string(req.Env.Type), Text: req.Env.Content, SentAt: p.Message.Sent}
	if err := h.link.RecordSent(ctx, sent); err != nil {
		out.Verdict, out.Err, out.Reason = delivery.Failed, fmt.Errorf("recording the message to host %s on this host (it was not sent): %w", req.Host, err), courier.ReasonError
		return out, nil
	}
	reports, stop := h.link.Watch(sent.Copy())
	defer stop()
	if err := h.link.Send(ctx, p); err != nil {
		out.Verdict, out.Err, out.Reason = delivery.Failed, fmt.Errorf("keeping the message for host %s: %w", req.Host, err), courier.ReasonError
		sent.State, sent.Detail = string(delivery.Failed), out.Err.Error()
		if err := h.link.RecordSent(ctx, sent); err != nil {
			h.opts.Logf("recording that %s to host %s failed: %v", id, req.Host, err)
		}
		return out, nil
	}
	if !h.link.Moving(req.Host) {
		return h.pending(t, id, req.Host, !req.Queue), nil // no verdict can come now
	}
	if a, away := h.stillAway(ctx, req.Host); away {
		// Found not answering a moment ago, and still not back: no
		// verdict can come, and a send after send would each wait.
		return h.away(t, id, req.Host, !req.Queue, a), nil
	}
	ready := req.Call.ReadyTimeout
	if ready <= 0 {
		ready = h.opts.ReadyTimeout
	}
	timer := time.NewTimer(ready + remoteGrace)
	defer timer.Stop()
	// A host that says nothing within quietFor is asked after: one that
	// cannot read its stream (its link cut, the stream on this side of
	// the cut) would keep the send waiting its whole time for a verdict
	// that cannot come.
	quiet := time.NewTimer(quietFor)
	defer quiet.Stop()
	unanswered := 0 // looks in a row the bus did not answer
	// heard is what a report of this copy (from its host: Watch) says:
	// done when it decides.
	heard := func(ev hosts.Packet) (courier.Result, bool) {
		quiet.Stop() // it reads its stream
		h.back(req.Host)
		return h.verdict(t, id, req, ev.Event)
	}
	for {
		select {
		case ev := <-reports:
			if r, done := heard(ev); done {
				return r, nil
			}
		case <-quiet.C:
			a, away := h.look(ctx, req.Host, &unanswered)
			if !away {
				quiet.Reset(quietFor) // asked again: it may stop announcing
				continue
			}
			// A verdict that came meanwhile is the truth, not the
			// presence (a host back before its first announcement).
			for more := true; more; {
				select {
				case ev := <-reports:
					if r, done := heard(ev); done {
						return r, nil
					}
				default:
					more = false
				}
			}
			return h.away(t, id, req.Host, !req.Queue, a), nil
		case <-timer.C:
			return h.pending(t, id, req.Host, !req.Queue), nil
		case <-ctx.Done():
			return h.pending(t, id, req.Host, !req.Queue), nil
		}
	}
}

// look asks the bus whether host is there (its presence), and notes the
// answer for the sends after this one (stillAway).
//
// unanswered, when not nil, counts the looks in a row of a send that has
// heard nothing from host for quietFor, and asks each second: for it a
// host that has missed an announcement counts as not there too (one cut
// off, or killed, a moment ago still has a recent presence, and a send to
// it waited its whole time, 12 s, when its stream was on this side of the
// cut), and a bus that does not answer counts only on the second look in
// a row (one slow answer does not end a send).
func (h *Relay) look(ctx context.Context, host string, unanswered *int) (presenceAnswer, bool) {
	r := h.ask(ctx, host)
	if ctx.Err() != nil {
		return r, false // the send ends by its own context
	}
	up := r.err == nil && r.up
	if unanswered != nil {
		switch {
		case r.err != nil:
			if *unanswered++; *unanswered < 2 {
				return r, false
			}
		case up && time.Since(r.seen) > missedAnnouncement:
			up = false
		default:
			*unanswered = 0
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if up {
		delete(h.gone, host)
		return r, false
	}
	h.gone[host] = r
	return r, true
}

// ask is the bus's answer about host's presence: one a moment old (less
// than quietFor), shared by the sends waiting for that host, or a new one.
func (h *Relay) ask(ctx context.Context, host string) presenceAnswer {
	h.mu.Lock()
	r, ok := h.asked[host]
	h.mu.Unlock()
	if ok && time.Since(r.at) < quietFor {
		return r
	}
	seen, up, err := h.link.Heard(ctx, host)
	r = presenceAnswer{at: time.Now(), seen: seen, up: up, err: err}
	if ctx.Err() == nil {
		h.mu.Lock()
		h.asked[host] = r
		h.mu.Unlock()
	}
	return r
}

// stillAway reports whether host was found not answering and is not back:
// from that look while it is younger than awayRecheck, else from a new one.
func (h *Relay) stillAway(ctx context.Context, host string) (presenceAnswer, bool) {
	h.mu.Lock()
	a, gone := h.gone[host]
	h.mu.Unlock()
	if !gone {
		return a, false
	}
	if time.Since(a.at) < awayRecheck {
		return a, true
	}
	return h.look(ctx, host, nil)
}

// awayRecheck is how long a host found not answering counts so without
// asking the bus again.
const awayRecheck = time.Second

// verdict is verdictOf for req: a --no-queue message kept there
// (deferred) is not yet decided, since it fails once its time is up
// (mailbox.Asked.Until, before this send's own time ends) unless typed.
func (h *Relay) verdict(t target.Target, id message.ID, req service.RemoteRequest, ev *hosts.RemoteEvent) (courier.Result, bool) {
	if !req.Queue && !req.MailboxOnly && ev.State == string(mailbox.StateDeferred) {
		return courier.Result{}, false
	}
	return verdictOf(t, id, req.Host, ev)
}

// back forgets that host was found not answering: it said something.
func (h *Relay) back(host string) {
	h.mu.Lock()
	delete(h.gone, host)
	delete(h.asked, host)
	h.mu.Unlock()
}

// missedAnnouncement is how old a host's presence is once it has missed an
// announcement (with a margin for a busy host).
const missedAnnouncement = hosts.AnnounceEvery + 3*time.Second

// quietFor is how long a send waits for the first word of the other host
// (it tells a message pending 50 ms after recording it, and typed at once
// when its agent is ready) before it asks whether that host is there.
const quietFor = time.Second

// away is the verdict of a message the bus has, for a host that has not
// announced itself lately (or cannot be asked about): kept, and the send
// does not wait for a verdict that would come only once it is back.
func (h *Relay) away(t target.Target, id message.ID, host string, noQueue bool, a presenceAnswer) courier.Result {
	r := h.pending(t, id, host, noQueue)
	then := goesOn(noQueue, "it goes on there by itself when that host reads the bus again")
	when := "it cannot be asked about now (" + fmt.Sprint(a.err) + ")"
	if a.err == nil {
		when = "it last announced itself at " + a.seen.Local().Format("15:04:05")
	}
	r.Err = fmt.Errorf("the message is kept for host %s, which has not answered, and %s; %s (agentmsg log --id %s)", host, when, then, id)
	return r
}

// pending is the verdict of a message whose host has not answered: kept.
// noQueue: sent with --no-queue, so it is not sure to be typed there.
func (h *Relay) pending(t target.Target, id message.ID, host string, noQueue bool) courier.Result {
	r := courier.Result{Outcome: dispatch.Outcome{Target: t, ID: id, Verdict: courier.Deferred}, State: mailbox.StateDeferred, Host: host}
	then := goesOn(noQueue, "it goes on there by itself")
	if h.link.Moving(host) {
		r.Reason = "remote_pending"
		r.Err = fmt.Errorf("host %s has the message but has not said yet what became of it; %s (agentmsg log --id %s)", host, then, id)
	} else {
		r.Reason = "link_down"
		r.Err = fmt.Errorf("the bus does not take messages for host %s now: the message waits in this host's outbox and goes there when it does; %s (agentmsg log --id %s)", host, then, id)
	}
	return r
}

// goesOn says what becomes of a kept message: byItself, unless it was
// sent with --no-queue.
func goesOn(noQueue bool, byItself string) string {
	if noQueue {
		return "with --no-queue it is typed there only if its agent is ready in time when it arrives, and fails otherwise"
	}
	return byItself
}

// verdictOf is the send's verdict from a state the other host reported;
// done is false for a state on the way (pending, typing).
func verdictOf(t target.Target, id message.ID, host string, ev *hosts.RemoteEvent) (courier.Result, bool) {
	r := courier.Result{Outcome: dispatch.Outcome{Target: t, ID: id}, State: mailbox.DeliveryState(ev.State), Reason: ev.Reason, Host: host}
	detail := ev.Detail
	if detail == "" {
		detail = ev.State
	}
	switch ev.State {
	case string(mailbox.StatePending), string(mailbox.StateTyping), "":
		return r, false
	case string(mailbox.StateSubmitted):
		r.Verdict = delivery.Submitted
	case string(mailbox.StateQueued):
		r.Verdict = delivery.Queued
	case string(mailbox.StateDeferred):
		r.Verdict = courier.Deferred
		r.Err = fmt.Errorf("on host %s: %s", host, detail)
	case string(mailbox.StateInbox), string(mailbox.StateRead):
		r.Verdict = courier.Recorded
	case string(mailbox.StateTyped):
		r.Verdict, r.Err = delivery.Typed, fmt.Errorf("%w: on host %s: %s", delivery.ErrUnconfirmed, host, detail)
	case string(dispatch.NotFound):
		r.Verdict, r.Err = dispatch.NotFound, fmt.Errorf("%w: on host %s: %s", dispatch.ErrTargetNotFound, host, detail)
	case string(delivery.VerdictUnknown):
		r.Verdict, r.Err = delivery.VerdictUnknown, fmt.Errorf("on host %s: %s", host, detail)
	default:
		r.Verdict, r.Err = delivery.Failed, fmt.Errorf("on host %s: %s", host, detail)
		if ev.Reason == courier.ReasonUnknown {
			// Recorded failed there, and it may have reached the agent:
			// a send there says unknown, never failed.
			r.Verdict = delivery.VerdictUnknown
		}
		if notReady(ev.Reason) {
			// Never typed, as a send here would have said: exit 4.
			r.Verdict, r.Err = delivery.NotReady, fmt.Errorf("%w: on host %s: %s", delivery.ErrNotReady, host, detail)
		}
	}
	return r, true
}

// notReady reports whether a failed message's reason says its agent was
// not ready to take it (and nothing was typed): a send with --no-queue, or
// one to a shell prompt.
func notReady(reason string) bool {
	switch reason {
	case courier.ReasonBusy, courier.ReasonDialog, courier.ReasonDraft, courier.ReasonNoBox, courier.ReasonLocked,
		courier.ReasonGone, courier.ReasonShell, courier.ReasonBehindOlder, courier.ReasonInterrupted, courier.ReasonTimeout:
		return true
	}
	return false
}

// knownHosts names the hosts on the bus, for an error.
func (h *Relay) knownHosts(ctx context.Context) string {
	list, err := h.link.Hosts(ctx)
	names := make([]string, 0, len(list))
	for _, x := range list {
		names = append(names, x.Name)
	}
	s := "hosts: " + strings.Join(names, ", ")
	if err != nil {
		s += "; the bus cannot be asked now: " + err.Error()
	}
	return s
}

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
			team, agent = courier.Inbox(t) // as every report names it
		}
		return h.link.Send(ctx, hosts.Packet{Kind: hosts.KindEvent, To: p.From, ID: p.ID, Event: &hosts.RemoteEvent{
			Team: team, Agent: agent, State: got.State, Reason: got.Reason, Detail: got.Detail,
			At: time.Now().UTC(), Seq: int(time.Now().UnixNano()),
		}})
	}
	team, agent := courier.Inbox(got.Target)
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
		if t, ok := courier.InboxOwner(o.team, o.agent); ok && h.opts.Looked(socket, t.Session) == "ready" {
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
					if t, ok := courier.InboxOwner(team, agent); ok {
						h.passAt(socket, t.Team, a.Until) // its timer went with the last daemon
					}
				}
			}
		}
	}
}
