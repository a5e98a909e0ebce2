package courier

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/agentmsg/agentmsg/broadcast"
	"github.com/agentmsg/agentmsg/delivery"
	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/lock"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
	"github.com/agentmsg/agentmsg/target"
)

// Typing is one message a Deliver pass tried to type.
type Typing struct {
	Team, Agent string
	Result
}

// Deliver makes one pass over every inbox (or those of team, when set):
// the outstanding messages of each agent that is on the server are typed,
// oldest first, each once. An inbox stops at its first message the agent
// is not ready for, so that order holds. Inboxes of names with no agent
// session (people, agents outside tmux) are left for their owners to read.
// call is how each message is typed (its ReadyTimeout also bounds the wait
// for another deliverer of the same inbox).
//
// The inboxes are worked on at once (deliverConcurrency at a time): an
// agent that is not ready holds up its own inbox only, never another's.
// What was tried comes back in the order of the inboxes.
func (c *Courier) Deliver(ctx context.Context, team string, call dispatch.Call) ([]Typing, error) {
	return c.DeliverListed(ctx, team, call, Listing{})
}

// Listing is what a pass's caller knows of the agent sessions on the
// server (DeliverListed).
type Listing struct {
	// Sessions were on the server a moment ago.
	Sessions []string
	// Complete: Sessions is a whole listing of a moment ago, and a session
	// not in it was not there. Else the pass lists the server (once) for
	// a session not in it: a new agent is never passed over for an old
	// or partial listing.
	Complete bool
}

// sessionList answers, for the inboxes of a pass, whether an agent's
// session is on the server: from what the caller knew, else from one
// listing shared by them all.
type sessionList struct {
	listing  sync.Mutex // held while the one listing runs
	mu       sync.Mutex // guards the fields below, never held while tmux runs
	on       map[string]bool
	complete bool
	err      error // the listing failed: every inbox that needed it says so
	list     func(context.Context) ([]target.Target, error)
}

// has reports whether session is on the server; sure is false when only
// the caller said so (a moment ago: it may have gone since). A session
// the caller named is answered at once, even while another inbox waits
// for the listing.
func (l *sessionList) has(ctx context.Context, session string) (on, sure bool, err error) {
	answer := func() (on, sure, done bool, err error) {
		l.mu.Lock()
		defer l.mu.Unlock()
		switch {
		case l.complete:
			return l.on[session], true, true, nil
		case l.on[session]:
			return true, false, true, nil
		case l.err != nil:
			return false, false, true, l.err
		}
		return false, false, false, nil
	}
	if on, sure, done, err := answer(); done {
		return on, sure, err
	}
	l.listing.Lock()
	defer l.listing.Unlock()
	if on, sure, done, err := answer(); done {
		return on, sure, err // listed meanwhile
	}
	found, err := l.list(ctx)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.err = err
		return false, false, err
	}
	l.on, l.complete = make(map[string]bool, len(found)), true
	for _, t := range found {
		l.on[t.Session] = true
	}
	return l.on[session], true, nil
}

// DeliverListed is Deliver for a caller that knows which agent sessions
// were on the server a moment ago (known): the pass starts from that
// instead of a listing of its own, a tmux call less.
func (c *Courier) DeliverListed(ctx context.Context, team string, call dispatch.Call, known Listing) ([]Typing, error) {
	// A message for several inboxes whose writer died part way (a
	// broadcast's sender SIGKILLed) is first recorded in the inboxes that
	// lack it, so that this pass types it there too.
	_, incomplete := c.Store.Complete()
	all, err := c.Store.Inboxes(team)
	if err != nil || len(all) == 0 {
		return nil, errors.Join(err, incomplete)
	}
	// One look at the server for every inbox, when one is needed: a tmux
	// call each would queue behind hundreds of others before its agent's
	// first look.
	listed := &sessionList{on: make(map[string]bool, len(known.Sessions)), complete: known.Complete, list: func(ctx context.Context) ([]target.Target, error) {
		return c.Dispatch.Targets(ctx, "")
	}}
	for _, s := range known.Sessions {
		listed.on[s] = true
	}
	if len(known.Sessions) == 0 && !known.Complete {
		if _, _, err := listed.has(ctx, ""); err != nil {
			return nil, err // no inbox can be tried
		}
	}
	passes := broadcast.Each(ctx, all, deliverConcurrency, func(ctx context.Context, in mailbox.Inbox) inboxPass {
		if err := ctx.Err(); err != nil {
			return inboxPass{err: err} // never started
		}
		done, err := c.deliverInbox(ctx, in.Team, in.Agent, true, call, listed, "")
		return inboxPass{done: done, err: err}
	})
	var (
		out  []Typing
		errs []error
	)
	for i, p := range passes {
		in := all[i]
		out = append(out, p.done...)
		for _, d := range p.done {
			if d.RecordErr != nil {
				errs = append(errs, fmt.Errorf("%s/%s: %s: %w", in.Team, in.Agent, d.ID, d.RecordErr))
			}
		}
		var held *lock.HeldError
		if errors.As(p.err, &held) && ctx.Err() == nil && !held.Stopped && !held.Gone {
			continue // another deliverer is at work on this inbox
		}
		if p.err != nil && !errors.Is(p.err, ctx.Err()) {
			errs = append(errs, fmt.Errorf("%s/%s: %w", in.Team, in.Agent, p.err))
		}
	}
	if err := ctx.Err(); err != nil {
		errs = append(errs, err)
	}
	return out, errors.Join(append(errs, incomplete)...)
}

// deliverConcurrency bounds the inboxes one pass works on at once. Each
// holds a few lock files open while its agent is waited for (the inbox's,
// the message's, the pane's) and its looks queue for the one tmux process
// that runs at a time (tmux/batch.go), so the bound is about open files:
// 1,000 inboxes hold about 3,000.
const deliverConcurrency = 1000

// inboxPass is what a pass did in one inbox.
type inboxPass struct {
	done []Typing
	err  error
}

// deliverInbox types agent's outstanding messages, oldest first. With
// typing, also those marked typing (a deliverer's after a crash); a send
// leaves them to the sender that is typing them now. call is how each is
// typed. listed, when not nil, tells the sessions on the server a moment
// ago (see onServer). until, when set, is the last message to type: the
// newer ones are left (a retry of one broadcast types its copy and what
// waits before it, as its send would have).
func (c *Courier) deliverInbox(ctx context.Context, team, agent string, typing bool, call dispatch.Call, listed *sessionList, until message.ID) ([]Typing, error) {
	t, ok := target.InboxOwner(team, agent)
	if !ok {
		return nil, nil // not an agent's name: read, not typed
	}
	box, err := c.Store.Box(team, agent)
	if err != nil {
		return nil, err
	}
	batch, err := c.Store.Read(team, agent)
	if err != nil {
		return nil, err
	}
	if c.outgrown(batch) {
		// Compaction keeps every unread or undelivered message.
		if err := c.compactSide(team, agent); err != nil {
			return nil, err
		}
	}
	batch.Envelopes = upTo(batch.Envelopes, until)
	var pending []mailbox.Envelope
	take := func(d *mailbox.Delivery) bool {
		return d != nil && d.State.Outstanding() && (typing || d.State != mailbox.StateTyping)
	}
	for _, env := range batch.Envelopes {
		if take(env.Delivery) {
			pending = append(pending, env)
		}
	}
	if len(pending) == 0 {
		return nil, nil
	}
	// One deliverer per inbox: two would both type the same message. The
	// wait is bounded as an agent's readiness is: a deliverer that is
	// stopped or stuck is named, not waited for.
	lctx, cancel := context.WithTimeout(ctx, c.Dispatch.ReadyTimeout(call))
	unlock, err := c.Locks.Kept(lctx, "deliver-"+team+"-"+agent)
	cancel()
	if err != nil {
		return nil, err
	}
	defer unlock()
	// Read again under the lock: another deliverer (or the sender) may
	// have finished some of them meanwhile.
	if batch, err = c.Store.Read(team, agent); err != nil {
		return nil, err
	}
	batch.Envelopes = upTo(batch.Envelopes, until)
	if typing && slices.ContainsFunc(batch.Envelopes, func(e mailbox.Envelope) bool {
		return e.Delivery != nil && e.Delivery.State == mailbox.StateTyping
	}) {
		// Only a message marked typing can be in the box (a look each
		// pass cost every remote message a tmux call).
		boxFirst(ctx, c.Dispatch, t, call, batch.Envelopes)
	}
	var (
		out   []Typing
		again *dispatch.Resolved // the pane as the last message found it
	)
	for i, env := range batch.Envelopes {
		if env.Delivery == nil {
			continue
		}
		if !take(env.Delivery) {
			continue
		}
		state := env.Delivery.State
		if why := c.withdrawn(team, env); why != "" {
			out = append(out, Typing{Team: team, Agent: agent, Result: c.skip(box, t, env, why)})
			continue
		}
		if late := c.expire(box, t, []mailbox.Envelope{env}, ReasonTimeout); len(late) > 0 {
			out = append(out, late...) // --no-queue, its time up: not typed now
			continue
		}
		mode, err := c.asked(call, env)
		if err != nil {
			out = append(out, Typing{Team: team, Agent: agent, Result: c.refuse(box, t, env, err)})
			continue
		}
		found := again
		if again = nil; found == nil || env.Asked != nil {
			// A message with its sender's own choices (its pane, its
			// profile) finds its pane by them.
			var ok bool
			if found, ok, err = c.onServer(ctx, t, mode.Call, &listed); err != nil || !ok {
				if err == nil {
					out = append(out, c.expire(box, t, batch.Envelopes[i:], ReasonGone)...)
				}
				return out, err // no session now: nothing to type into
			}
		}
		// Its typing lock: held means a live sender is typing it now (it
		// finishes it); free means no one is, or its typist died.
		unlockTyping, free := c.tryTyping(env.ID)
		if !free {
			out = append(out, c.expire(box, t, batch.Envelopes[i+1:], ReasonBehindOlder)...)
			break // keep the order: the rest wait behind this one
		}
		if env, ok = c.current(team, agent, env, batch.End); !ok || !take(env.Delivery) {
			unlockTyping() // finished while we looked
			continue
		}
		state = env.Delivery.State
		// Resume whenever an earlier attempt may have typed it.
		resume := state == mailbox.StateTyping || env.Delivery.Attempts > 0
		res, used := c.typeOne(ctx, box, t, env, mode, env.Delivery.Attempts+1, resume, found)
		unlockTyping()
		if next, ok := dispatch.Again(used, res.Outcome); ok && env.Asked == nil {
			again = &next
		}
		out = append(out, Typing{Team: team, Agent: agent, Result: res})
		if res.Verdict == delivery.Deferred || res.Verdict == delivery.NotFound {
			out = append(out, c.expire(box, t, batch.Envelopes[i+1:], ReasonBehindOlder)...)
			break // keep the order: the rest wait behind this one
		}
	}
	return out, nil
}

// upTo is envs up to and including message until, or all of them when
// until is ""; none when until is not there.
func upTo(envs []mailbox.Envelope, until message.ID) []mailbox.Envelope {
	if until == "" {
		return envs
	}
	for i, e := range envs {
		if e.ID == until {
			return envs[:i+1]
		}
	}
	return nil
}

// asked is how a pass types env: as the pass's call says, or, for one
// whose sender's choices came with it (a message from another host), as
// that sender asked, the way its own send would have typed it here.
//
// A --no-queue message fails when its agent is not ready by its Until,
// but a pass waits for it no longer than for any other (a pass serves a
// whole team, and the sender's wait may be long): it is kept until the
// attempt whose wait reaches Until (the daemon runs a pass then), and
// failed by that one. Only while nothing of it can be in the pane: one
// that an attempt may have typed is kept as any other, never failed.
func (c *Courier) asked(call dispatch.Call, env mailbox.Envelope) (Mode, error) {
	mode := Mode{Queue: true, Call: call}
	a := env.Asked
	if a == nil {
		return mode, nil
	}
	mode.Call.WhileBusy, mode.Call.Force, mode.Call.Pane = a.WhileBusy, a.Force, a.Pane
	if a.NoQueue && untried(env.Delivery) {
		if left := a.Until.Sub(c.now()); left <= c.Dispatch.ReadyTimeout(call) {
			// At least a moment: 0 would mean the dispatcher's own wait.
			mode.Queue, mode.Call.ReadyTimeout = false, max(left, time.Millisecond)
		}
	}
	if a.Agent != "" {
		p, err := c.Dispatch.ProfileNamed(a.Agent)
		switch {
		case err == nil:
			mode.Call.Agent, mode.Call.AgentWhy = &p, "chosen by its sender"
		case untried(env.Delivery):
			return mode, fmt.Errorf("its sender chose profile %s: %w", a.Agent, err)
		}
		// An attempt may have typed it: finished as the pane reads.
	}
	return mode, nil
}

// untried reports whether nothing of a message can be in its agent's
// pane: no attempt got as far as pasting it.
func untried(d *mailbox.Delivery) bool {
	return d != nil && d.Reached == "" && (d.State == mailbox.StatePending || d.State == mailbox.StateDeferred)
}

// refuse records that env cannot be typed as its sender asked (a profile
// this host does not have): failed, nothing typed (asked refuses only an
// untried message).
func (c *Courier) refuse(box *mailbox.Box, t target.Target, env mailbox.Envelope, err error) Result {
	out := dispatch.Outcome{Target: t, ID: env.ID, Verdict: delivery.Failed, Err: err}
	return c.settle(context.Background(), box, env.ID, out, Mode{}, env.Delivery.Attempts, prior{state: env.Delivery.State})
}

// expire fails the messages in rest whose senders would not have them
// kept (--no-queue) once their Until has passed and that no attempt typed:
// not ready in time, as their own sends would have said (why: the reason
// recorded for the last attempt, else why). A pass that stops before
// them (an older message waits, the agent is gone) reaches them here.
func (c *Courier) expire(box *mailbox.Box, t target.Target, rest []mailbox.Envelope, why string) []Typing {
	var out []Typing
	team, agent := target.Inbox(t)
	now := c.now()
	for _, env := range rest {
		if a := env.Asked; a == nil || !a.NoQueue || now.Before(a.Until) || !untried(env.Delivery) {
			continue
		}
		reason := why
		if r := env.Delivery.Reason; r != "" && r != ReasonInterrupted {
			reason = r
		}
		words := fmt.Sprintf("not ready within the sender's ready timeout (%s)", reason)
		rec := mailbox.Delivery{State: mailbox.StateFailed, Attempts: env.Delivery.Attempts, LastVerdict: string(delivery.NotReady) + ": " + words, Reason: reason, Updated: now}
		res := Result{Outcome: dispatch.Outcome{Target: t, ID: env.ID, Verdict: delivery.NotReady, Err: fmt.Errorf("%w: %s", delivery.ErrNotReady, words)},
			State: mailbox.StateFailed, Reason: reason}
		if err := box.SetDelivery(env.ID, rec); err != nil {
			continue // still waiting: the next pass tries it
		}
		out = append(out, Typing{Team: team, Agent: agent, Result: res})
	}
	return out
}

// onServer reports whether t's session is on the server: from *listed
// (what the pass knows of the server a moment ago) the first time, and
// from tmux after that, when the agent may have gone while its messages
// were typed.
// That look finds t's pane too (found, for typeOne: one tmux call a
// message, not two); found is nil when the pane is for typeOne to find
// and report (which of the session's panes is the agent's cannot be told,
// say).
func (c *Courier) onServer(ctx context.Context, t target.Target, call dispatch.Call, listed **sessionList) (found *dispatch.Resolved, ok bool, err error) {
	if l := *listed; l != nil {
		*listed = nil
		on, sure, err := l.has(ctx, t.Session)
		if err != nil || !on || sure {
			return nil, on && err == nil, err
		}
		// Only said to be there: looked for now, as typeOne would have,
		// so that one gone since waits as one not listed would, never
		// failed as not found.
	}
	r, err := c.Dispatch.Resolve(ctx, t, call)
	switch {
	case err == nil:
		return &r, true, nil
	case errors.Is(err, dispatch.ErrPaneChoice), errors.Is(err, dispatch.ErrSelf):
		return nil, true, nil // there, and typeOne says what is wrong
	case errors.Is(err, dispatch.ErrTargetNotFound):
		return nil, false, nil
	}
	return nil, false, err
}

// boxFirst moves to the front of envs the message that waits in t's input
// box: one a typist pasted and then died (a killed sender, a daemon killed
// mid-send), recorded as typing. The older messages cannot be typed past it
// (the box is not empty, so they would wait for ever, and it behind them),
// and submitting it is all it needs; the agent then gets it first, as the
// text it was already shown.
func boxFirst(ctx context.Context, d *dispatch.Dispatcher, t target.Target, call dispatch.Call, envs []mailbox.Envelope) {
	id, ok := d.InBox(ctx, t, call)
	if !ok {
		return
	}
	for i, env := range envs {
		if env.ID == id && env.Delivery != nil && env.Delivery.State == mailbox.StateTyping {
			copy(envs[1:i+1], envs[:i])
			envs[0] = env
			return
		}
	}
}

// current is env as team/agent's inbox holds it now, which a read that
// ended at end found as env: only what was appended since is read.
func (c *Courier) current(team, agent string, env mailbox.Envelope, end mailbox.Position) (mailbox.Envelope, bool) {
	if d, changed, ok, err := c.Store.DeliverySince(team, agent, env.ID, end); err == nil && ok {
		if changed {
			env.Delivery = &d
		}
		return env, env.Delivery != nil
	}
	id := env.ID
	b, err := c.Store.Read(team, agent)
	if err != nil {
		return mailbox.Envelope{}, false
	}
	for _, e := range b.Envelopes {
		if e.ID == id {
			return e, e.Delivery != nil
		}
	}
	return mailbox.Envelope{}, false
}

// withdrawn says why env is no longer to be typed (see
// mailbox.Store.Withdrawn), or "". Only a message none of which can be in
// the pane is withdrawn: one pending or deferred. One that an earlier
// attempt may have typed is finished instead, as any other.
func (c *Courier) withdrawn(team string, env mailbox.Envelope) string {
	if s := env.Delivery.State; s != mailbox.StatePending && s != mailbox.StateDeferred {
		return ""
	}
	return c.Store.Withdrawn(team, env)
}

// skip records that env is not typed, and why.
func (c *Courier) skip(box *mailbox.Box, t target.Target, env mailbox.Envelope, why string) Result {
	res := Result{Outcome: dispatch.Outcome{Target: t, ID: env.ID, Verdict: delivery.Skipped, Err: errors.New(why)}, State: mailbox.StateSkipped}
	rec := mailbox.Delivery{State: mailbox.StateSkipped, Attempts: env.Delivery.Attempts, LastVerdict: "skipped: " + why, Updated: c.now()}
	if err := box.SetDelivery(env.ID, rec); err != nil {
		res.Verdict, res.State = delivery.Failed, env.Delivery.State
		res.Err = fmt.Errorf("%s, but recording that failed: %w", why, err)
	}
	return res
}

// outgrown reports whether an inbox holds more, or older, messages than
// Keep allows.
func (c *Courier) outgrown(b mailbox.Batch) bool {
	return c.outgrownBy(len(b.Envelopes), b.OldestSeen())
}

// outgrownBy is outgrown for an inbox of n messages, the oldest one the
// agent has seen from oldestSeen (zero: none). Age counts from a seen
// message, the oldest that retention may drop: an older one that still
// waits, or was never seen, would make every send compact in vain.
func (c *Courier) outgrownBy(n int, oldestSeen time.Time) bool {
	if n == 0 {
		return false
	}
	if c.Keep.MaxCount > 0 && n > c.Keep.MaxCount+slack(c.Keep.MaxCount) {
		return true
	}
	return c.Keep.MaxAge > 0 && !oldestSeen.IsZero() && c.now().Sub(oldestSeen) > c.Keep.MaxAge
}

// slack is how far past its Keep an inbox may grow before a send or a
// deliver compacts it, and how many messages that compaction must drop to
// rewrite it: one compaction per tenth of Keep, not one per send (each
// rewrites the whole inbox; at Keep 1000 a send took 36 ms instead of 21).
func slack(keep int) int { return keep/10 + 1 }

// compactSide compacts an outgrown inbox on the side of a send or deliver.
func (c *Courier) compactSide(team, agent string) error {
	r := c.Keep
	r.MinDrop = slack(r.MaxCount)
	_, err := c.Store.Compact(team, agent, r)
	return err
}

// PassAheadError: a pass that takes turns (TakeTurn) found one at work
// and one more waiting to run after it. The waiting one reads the inboxes
// after this one was asked for, so it types every message waiting now:
// leaving loses nothing.
type PassAheadError struct {
	Team    string       // "" for every team
	Waiting *lock.Holder // the pass that waits, when its lock file says
}

func (e *PassAheadError) Error() string {
	who := "another deliver"
	if h := e.Waiting; h != nil {
		who = fmt.Sprintf("%s (pid %d)", h.Command, h.PID)
		if h.Command == "" {
			who = fmt.Sprintf("agentmsg (pid %d)", h.PID)
		}
	}
	return fmt.Sprintf("%s waits to deliver %s after the pass at work; it types what waits now", who, teamWords(e.Team))
}

func teamWords(team string) string {
	if team == "" {
		return "to every team"
	}
	return "to team " + team
}

// TakeTurn makes the caller the one pass of team ("" for every team) on
// this server that runs at a time, among those that take turns: it waits
// up to wait (0: as long as ctx) for the pass at work to end, and returns
// release for when its own has. At most one pass waits: another that
// comes meanwhile gets *PassAheadError at once. A turn-end hook runs a
// deliver at every agent's turn end, and without turns they piled up.
func (c *Courier) TakeTurn(ctx context.Context, team string, wait time.Duration) (release func(), err error) {
	key := passKey(c.Dispatch.Tmux.Server().Socket, team)
	now, cancel := context.WithCancel(ctx)
	cancel() // a place in line is taken at once, or not at all
	leaveLine, err := c.Locks.Named(now, "pass-next-"+key)
	var held *lock.HeldError
	switch {
	case errors.As(err, &held) && (held.Stopped || held.Gone):
		// A waiter that cannot run would keep every pass out: wait
		// without a place in line (still bounded by wait).
		leaveLine = func() {}
	case errors.As(err, &held):
		return nil, &PassAheadError{Team: team, Waiting: held.Holder}
	case err != nil:
		return nil, err
	}
	// The place in line is left only once the turn is ours: whoever finds
	// it free then comes after this pass has begun, and may run its own.
	if wait > 0 {
		var cancelWait context.CancelFunc
		ctx, cancelWait = context.WithTimeout(ctx, wait)
		defer cancelWait()
	}
	release, err = c.Locks.Named(ctx, "pass-run-"+key)
	leaveLine()
	return release, err
}

// passKey names the passes of team on the server at socket in lock names:
// two servers may each have a team of that name.
func passKey(socket, team string) string {
	sum := sha256.Sum256([]byte(socket))
	if team == "" {
		return hex.EncodeToString(sum[:8]) + "-all"
	}
	return hex.EncodeToString(sum[:8]) + "-team-" + team
}
