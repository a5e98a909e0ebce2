package relay

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/agentmsg/agentmsg/courier"
	"github.com/agentmsg/agentmsg/delivery"
	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/hosts"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
	"github.com/agentmsg/agentmsg/service"
	"github.com/agentmsg/agentmsg/target"
)

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
	team, agent := target.Inbox(t)
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
	// host's log and GET /v1/messages/{id} list it from here on. Its
	// packet is kept with it: a daemon killed before the packet is handed
	// over sends it when it starts again.
	sent := hosts.Sent{ID: string(id), Host: req.Host, Team: team, Agent: agent, State: hosts.StateOutbox, At: time.Now().UTC(),
		From: req.Env.From, Type: string(req.Env.Type), Text: req.Env.Content, SentAt: p.Message.Sent}
	if err := h.link.RecordSent(ctx, sent, &p); err != nil {
		out.Verdict, out.Err, out.Reason = delivery.Failed, fmt.Errorf("recording the message to host %s on this host (it was not sent): %w", req.Host, err), courier.ReasonError
		return out, nil
	}
	reports, stop := h.link.Watch(sent.Copy())
	defer stop()
	if err := h.link.Send(ctx, p); err != nil {
		out.Verdict, out.Err, out.Reason = delivery.Failed, fmt.Errorf("keeping the message for host %s: %w", req.Host, err), courier.ReasonError
		sent.State, sent.Detail = string(delivery.Failed), out.Err.Error()
		// Recorded even when the caller has gone (its context ended the
		// send): a record left "outbox" with its packet would be sent when
		// the daemon next starts, after its sender was told failed.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := h.link.RecordSent(rctx, sent, nil); err != nil {
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
	r := courier.Result{Outcome: dispatch.Outcome{Target: t, ID: id, Verdict: delivery.Deferred}, State: mailbox.StateDeferred, Host: host}
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
	switch mailbox.DeliveryState(ev.State) {
	case mailbox.StatePending, mailbox.StateTyping, "":
		return r, false // on its way there: the send waits for more
	}
	r.Verdict, r.Err = courier.VerdictOf(mailbox.DeliveryState(ev.State), ev.Reason, fmt.Errorf("on host %s: %s", host, detail))
	return r, true
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
