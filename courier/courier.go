// Package courier joins the mailbox and the terminal: every message is
// recorded in its recipient's inbox before anything is typed, and what
// happened to it is recorded after. A message that cannot be typed now
// (the agent busy, a dialog open, a person typing) stays pending in the
// inbox, and a later Deliver types it once its agent is ready: never lost,
// never typed twice.
package courier

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentmsg/agentmsg/delivery"
	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/lock"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
	"github.com/agentmsg/agentmsg/target"

	"golang.org/x/sync/errgroup"
)

// Courier sends through a mailbox and a dispatcher.
type Courier struct {
	Store    *mailbox.Store
	Dispatch *dispatch.Dispatcher
	Locks    lock.Dir // one deliverer per inbox at a time
	// Keep bounds each inbox; Deliver compacts an inbox that outgrows it.
	Keep mailbox.Retention
	Now  func() time.Time
	// Hint, when set, says how to answer a message (one line, "" for
	// none): typed after its text, in parentheses. The words are the
	// front ends' (service.AnswerHint), not the courier's.
	Hint func(mailbox.Envelope) string
}

// Mode says how far a send goes.
type Mode struct {
	// Queue: an agent that is not ready gets the message later (verdict
	// Deferred, a success); without it, that is a failure (NotReady).
	Queue bool
	// MailboxOnly records the message without typing it.
	MailboxOnly bool
	// Call is how the message is typed: the profile chosen by hand, wait
	// for idle, force, who hears about waits.
	Call dispatch.Call
	// Recorded, when set, hears that Send has recorded the message in the
	// inbox, and in which state, before it types it (an app's send that
	// answers at once, and types in the background).
	Recorded func(id message.ID, state mailbox.DeliveryState)
}

// recorded tells mode.Recorded, when set, that env is in its inbox.
func (m Mode) recorded(env mailbox.Envelope) {
	if m.Recorded != nil && env.Delivery != nil {
		m.Recorded(env.ID, env.Delivery.State)
	}
}

// Result is one recipient's outcome and what the mailbox now says.
type Result struct {
	dispatch.Outcome
	// State is what the inbox really says about the message: when the
	// record of the outcome could not be written, the record before it.
	State mailbox.DeliveryState
	// Reason says in one word why it was not taken, or waits ("" when it
	// was taken); see the Reason constants.
	Reason string
	// RecordErr: the outcome could not be recorded (a full disk, say).
	// The message may have reached the agent, but the inbox says less;
	// Err says so too.
	RecordErr error
	// Older are the older messages to the same agent that a send tried
	// first (the enqueue rule), oldest first, each with its own outcome.
	Older []Result
	// Host is the host the agent is on, for a message to another host
	// ("" is this one): the verdict is that host's.
	Host string
}

// OK reports whether the message is taken care of: submitted, safely
// kept for later, or no longer to be typed (Skipped), and recorded as
// such.
func (r Result) OK() bool {
	return r.RecordErr == nil && (r.Outcome.OK() || r.Verdict == delivery.Deferred || r.Verdict == delivery.Recorded || r.Verdict == delivery.Skipped)
}

// Typed is what goes into the agent's box for env: the content, marked with
// its type (and request id: what the agent claims) and the message it
// answers.
func Typed(env mailbox.Envelope) string {
	var prefix, label []string
	if env.Type != "" && env.Type != mailbox.TypeText {
		label = append(label, string(env.Type))
	}
	if mailbox.ValidRequestID(env.RequestID) {
		label = append(label, env.RequestID)
	}
	if len(label) > 0 {
		prefix = append(prefix, "["+strings.Join(label, " ")+"]")
	}
	if env.FromHost != "" {
		// The id names the sender, not its host: the agent needs both to
		// know who wrote, and reply finds both in the inbox.
		prefix = append(prefix, "from "+env.From+"@"+env.FromHost+":")
	}
	if env.ReplyTo != "" {
		prefix = append(prefix, "re "+string(env.ReplyTo)+":")
	}
	prefix = append(prefix, env.MetaPairs()...)
	if len(prefix) == 0 {
		return env.Content
	}
	return strings.Join(prefix, " ") + " " + env.Content
}

// typed is Typed(env) with its answer hint, when it has one.
func (c *Courier) typed(env mailbox.Envelope) string {
	text := Typed(env)
	if c.Hint == nil {
		return text
	}
	if hint := c.Hint(env); hint != "" {
		text += " (" + hint + ")"
	}
	return text
}

// Send records env (its ID, From, Type, Content set) in t's inbox and
// types it, unless mode says only to record it; then it records the
// outcome: resolve, record, deliver, record. The record is made once t's
// pane is found and before anything is typed: a message to an agent that
// does not exist is refused (NotFound) and leaves no inbox behind, unless
// mode.MailboxOnly.
func (c *Courier) Send(ctx context.Context, t target.Target, env mailbox.Envelope, mode Mode) Result {
	team, agent := target.Inbox(t)
	env.To = agent
	box, err := c.Store.Box(team, agent)
	if err != nil {
		return Result{Outcome: dispatch.Outcome{Target: t, ID: env.ID, Verdict: delivery.Failed, Err: err}}
	}
	if mode.MailboxOnly {
		// For the agent to read (agentmsg inbox); deliver never types it.
		env.Delivery = &mailbox.Delivery{State: mailbox.StateInbox, Updated: c.now()}
		res := Result{Outcome: dispatch.Outcome{Target: t, ID: env.ID, Verdict: delivery.Recorded}, State: mailbox.StateInbox}
		if err := box.Append(env); err != nil {
			res.Verdict, res.Err = delivery.Failed, fmt.Errorf("the message was neither recorded in %s/%s's inbox nor typed: %w", team, agent, err)
			return res
		}
		mode.recorded(env)
		return res
	}
	// The pane and its screen (one tmux call, 2 to 3 ms) are looked up
	// while the inbox is read and the typing lock taken.
	early := make(chan resolved, 1)
	go func() {
		pane, err := c.Dispatch.Resolve(ctx, t, mode.Call)
		early <- resolved{pane, err}
	}()
	// Older messages still waiting for this agent go first: oldest first
	// is the order an agent reads in. If they still cannot go, neither can
	// this one; it waits behind them.
	typedOlder := false
	var older []Result
	if mode.Queue {
		wait, typed, err := c.olderFirst(ctx, team, agent, mode.Call)
		typedOlder = typed != nil
		older = results(typed)
		if wait {
			why := "behind older messages to the same agent"
			if err != nil {
				why += " (" + err.Error() + ")"
			}
			env.Delivery = &mailbox.Delivery{State: mailbox.StateDeferred, Updated: c.now(), LastVerdict: why, Reason: ReasonBehindOlder}
			res := Result{Outcome: dispatch.Outcome{Target: t, ID: env.ID, Verdict: delivery.Deferred}, State: mailbox.StateDeferred, Reason: ReasonBehindOlder, Older: older}
			if err := box.Append(env); err != nil {
				res.Verdict, res.Err = delivery.Failed, fmt.Errorf("the message was neither recorded in %s/%s's inbox nor typed: %w", team, agent, err)
				return res
			}
			mode.recorded(env)
			return res
		}
	}
	res := c.sendNow(ctx, t, env, box, early, typedOlder, mode)
	res.Older = older
	return res
}

// sendNow is Send once no older message waits: it takes the message's
// typing lock, finds t's pane (again, when older messages were typed
// since the early look), records the message and types it.
func (c *Courier) sendNow(ctx context.Context, t target.Target, env mailbox.Envelope, box *mailbox.Box, early <-chan resolved, typedOlder bool, mode Mode) Result {
	team, agent := target.Inbox(t)
	unlock, err := c.holdTyping(ctx, env.ID)
	if err != nil {
		return Result{Outcome: dispatch.Outcome{Target: t, ID: env.ID, Verdict: delivery.Failed, Err: err}}
	}
	defer unlock()
	// Resolve, record, deliver, record: the message is recorded once t's
	// pane is found, so one to a missing agent leaves no inbox.
	r := <-early
	if typedOlder {
		// Its screen is from before the older messages were typed.
		r.pane, r.err = c.Dispatch.Resolve(ctx, t, mode.Call)
	}
	pane, err := r.pane, r.err
	if err != nil {
		return Result{Outcome: c.Dispatch.Unsent(pane, env.ID, err)}
	}
	// Marked typing from the start: a crash between here and the outcome
	// leaves a message the next deliver resumes rather than retypes.
	env.Delivery = &mailbox.Delivery{State: mailbox.StateTyping, Attempts: 1, Updated: c.now()}
	if err := box.Append(env); err != nil {
		err = fmt.Errorf("the message was neither recorded in %s/%s's inbox nor typed: %w", team, agent, err)
		return Result{Outcome: c.Dispatch.Unsent(pane, env.ID, err)}
	}
	mode.recorded(env)
	rec := c.typingRecord(func(target.Target) *mailbox.Box { return box }, env.ID, 1, "")
	msg := dispatch.Message{ID: env.ID, Text: c.typed(env), Stored: true, OnStep: rec.step}
	out := c.Dispatch.Deliver(ctx, pane, msg, rec.call(mode.Call))
	return c.settle(ctx, box, env.ID, out, mode, 1, prior{})
}

// typingRecord keeps the typing record of message id up to date in the
// inbox of each target (its box from boxOf; earlier is how far earlier
// attempts got): see step and wait.
func (c *Courier) typingRecord(boxOf func(target.Target) *mailbox.Box, id message.ID, attempt int, earlier delivery.Step) *typingRecord {
	return &typingRecord{c: c, boxOf: boxOf, id: id, attempt: attempt, earlier: earlier, reached: map[string]bool{}}
}

type typingRecord struct {
	c       *Courier
	boxOf   func(target.Target) *mailbox.Box
	id      message.ID
	attempt int
	earlier delivery.Step

	// was is the state the message is in before this attempt ("" for a
	// new one): a deferred message is recorded as waiting already.
	was mailbox.DeliveryState

	mu      sync.Mutex
	reached map[string]bool // by session: a step was recorded, or the wait was
}

// step records each step of typing the message before it is taken, so
// that a deliverer after a crash knows whether the message may have
// reached the pane: one that may have is never typed again without proof
// that it did not.
func (r *typingRecord) step(t target.Target, s delivery.Step) error {
	box := r.boxOf(t)
	if box == nil {
		return nil // not recorded for t: nothing to keep up to date
	}
	r.mu.Lock()
	r.reached[t.Session] = true
	r.mu.Unlock()
	return box.SetDelivery(r.id, mailbox.Delivery{State: mailbox.StateTyping, Attempts: r.attempt, Reached: string(s), Updated: r.c.now()})
}

// call is call with the wait recorded: the first time a delivery waits
// for its agent (busy, a dialog, a person's draft) before anything of the
// message may be in the pane, the record says why. A reader waiting for
// news (mailbox.Store.WaitSettled) then takes it at once, rather than
// after the sender's ready timeout: that reader is often the agent, busy
// running its wait.
func (r *typingRecord) call(call dispatch.Call) dispatch.Call {
	next := call.OnWait
	call.OnWait = func(w dispatch.Wait) {
		// A message recorded pending or deferred says already that it is
		// not under way: a reader takes it as it is.
		waiting := r.was == mailbox.StatePending || r.was == mailbox.StateDeferred
		if box := r.boxOf(w.Target); box != nil && r.earlier == delivery.NotReached && !waiting && r.first(w.Target) {
			// Best effort: without it a reader only waits longer.
			_ = box.SetDelivery(r.id, mailbox.Delivery{State: mailbox.StateTyping, Attempts: r.attempt, Reason: stateReason(w.State), Updated: r.c.now()})
		}
		if next != nil {
			next(w)
		}
	}
	return call
}

// first reports whether nothing was recorded for t yet, and marks it.
func (r *typingRecord) first(t target.Target) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.reached[t.Session] {
		return false
	}
	r.reached[t.Session] = true
	return true
}

// olderFirst is the one enqueue rule, for a send and a broadcast alike:
// older messages waiting for team/agent go first. It types them if it can,
// and reports whether some still wait; the new message then waits behind
// them. Should typing them fail (interrupted, another deliverer busy with
// the inbox), the new one waits too: kept, not lost (err says why).
//
// typed is what it typed (or tried to), oldest first; non-nil when it
// went on to type: the pane has changed since a look taken before.
//
// The older messages are waited for as long as the new one would be
// (the sender's ready timeout), no longer: a sender that asked for 1s
// waited the default 30s behind a busy agent. Its other choices (force,
// while busy) are its own message's, not theirs.
func (c *Courier) olderFirst(ctx context.Context, team, agent string, call dispatch.Call) (wait bool, typed []Typing, err error) {
	if !c.waiting(team, agent) {
		return false, nil, nil
	}
	typed, err = c.deliverInbox(ctx, team, agent, false, dispatch.Call{ReadyTimeout: call.ReadyTimeout}, nil, "")
	if typed == nil {
		typed = []Typing{}
	}
	return err != nil || c.waiting(team, agent), typed, err
}

// results are the outcomes of typings, in order.
func results(typed []Typing) []Result {
	var out []Result
	for _, t := range typed {
		out = append(out, t.Result)
	}
	return out
}

// resolved is a pane lookup's answer.
type resolved struct {
	pane dispatch.Resolved
	err  error
}

// waiting reports whether team/agent's inbox holds messages that wait for
// a deliverer. One being typed right now by another sender does not: that
// sender holds the pane and finishes it.
//
// A send reads the inbox here, so an inbox past Keep is compacted here too
// (as deliver does): no send reads more than the inbox keeps.
//
// It reads the inbox's summary, not its messages: a send pays for this on
// every call, and decoding an inbox at its bound took 5 to 6 ms.
func (c *Courier) waiting(team, agent string) bool {
	sum, err := c.Store.Summarize(team, agent)
	if err != nil {
		return false
	}
	if c.outgrownBy(sum.Messages, sum.OldestSeen) {
		_ = c.compactSide(team, agent) // best effort; deliver retries
	}
	for st := range sum.States {
		if st.Outstanding() && st != mailbox.StateTyping {
			return true
		}
	}
	return false
}

// Broadcast records env in the inbox of every agent of team ("" for all)
// and types it into each, in parallel: it finds their panes, records the
// message for each, types it into those that may have it now, and records
// each outcome.
//
// Its copies are recorded in one step (mailbox.Intent): a sender that dies
// while it records them leaves an intent, and the next deliver records
// the copies that inboxes lack, so a crash leaves the message in every
// inbox or in none, never in some for good.
func (c *Courier) Broadcast(ctx context.Context, team string, env mailbox.Envelope, mode Mode) ([]Result, error) {
	env.To = mailbox.Broadcast
	if mode.MailboxOnly {
		return c.recordBroadcast(ctx, team, env)
	}
	// One typing lock for every copy recorded as typing, held until the
	// last outcome is recorded.
	unlock, err := c.holdTyping(ctx, env.ID)
	if err != nil {
		return nil, fmt.Errorf("recording the broadcast: %w", err)
	}
	defer unlock()
	return c.broadcastNow(ctx, team, env, mode)
}

// broadcastNow is Broadcast once its caller holds the message's typing
// lock.
func (c *Courier) broadcastNow(ctx context.Context, team string, env mailbox.Envelope, mode Mode) ([]Result, error) {
	all, err := c.Dispatch.ResolveTeam(ctx, team, mode.Call)
	if err != nil {
		return nil, err
	}
	// An agent whose pane cannot be told gets nothing, as a send to it
	// would: no record, no typing, its own verdict.
	var panes []dispatch.Resolved
	var refused []Result
	for _, r := range all {
		if r.Err != nil {
			refused = append(refused, Result{Outcome: c.Dispatch.Unsent(r, env.ID, r.Err)})
			continue
		}
		panes = append(panes, r)
	}
	if env.Timestamp.IsZero() {
		env.Timestamp = c.now() // one time for every copy, a late one too
	}
	targets := make([]target.Target, len(panes))
	for i, p := range panes {
		targets[i] = p.Target
	}
	// A copy recorded late is pending: the next deliver types it.
	intent, err := c.intend(env, targets, mailbox.StatePending)
	if err != nil {
		return nil, fmt.Errorf("recording the broadcast: %w", err)
	}
	env.Delivery = &mailbox.Delivery{State: mailbox.StateTyping, Attempts: 1, Updated: c.now()}
	// Each inbox is recorded on its own, all at once: a hundred fsyncs one
	// after another took longer than typing into a hundred panes.
	recs := make([]recorded, len(panes))
	var g errgroup.Group
	g.SetLimit(recordConcurrency)
	for i, p := range panes {
		g.Go(func() error {
			recs[i] = c.recordOne(ctx, p, env, mode)
			return nil
		})
	}
	_ = g.Wait()
	// Each was written without an fsync of its own: one sync makes them
	// all durable before anything is typed.
	syncErr := c.Store.Sync()
	boxes := map[string]*mailbox.Box{}
	older := map[string][]Result{} // by session: the older messages typed first
	var now []dispatch.Resolved    // recorded as typing: type them now
	var behind []Result            // older messages waiting: this one waits too
	var errs []error
	for i, r := range recs {
		switch {
		case r.err != nil:
			errs = append(errs, r.err)
		case r.behind != nil:
			behind = append(behind, *r.behind)
		default:
			boxes[panes[i].Target.Session] = r.box
			older[panes[i].Target.Session] = r.older
			now = append(now, panes[i])
		}
	}
	if err := errors.Join(append(errs, syncErr)...); err != nil {
		intent.Leave()
		return nil, fmt.Errorf("recording the broadcast: %w (it is kept: the next deliver records it in the inboxes that lack it, and types it)", err)
	}
	intent.Done()
	rec := c.typingRecord(func(t target.Target) *mailbox.Box { return boxes[t.Session] }, env.ID, 1, "")
	msg := dispatch.Message{ID: env.ID, Text: c.typed(env), Stored: true, OnStep: rec.step}
	outs := c.Dispatch.DeliverEach(ctx, now, msg, rec.call(mode.Call))
	out := make([]Result, 0, len(outs)+len(behind))
	for _, o := range outs {
		res := c.settle(ctx, boxes[o.Target.Session], env.ID, o, mode, 1, prior{})
		res.Older = older[o.Target.Session]
		out = append(out, res)
	}
	out = append(out, behind...)
	out = append(out, refused...)
	slices.SortFunc(out, func(a, b Result) int { return strings.Compare(a.Target.Session, b.Target.Session) })
	return out, nil
}

// intend records the intent of a broadcast of env to targets (see
// mailbox.Intent); a copy recorded late gets state late. With no target,
// there is none (a nil one).
func (c *Courier) intend(env mailbox.Envelope, targets []target.Target, late mailbox.DeliveryState) (intent, error) {
	if len(targets) == 0 {
		return intent{}, nil
	}
	in := mailbox.Intent{Env: env, To: make([]mailbox.Inbox, len(targets))}
	in.Env.Delivery = &mailbox.Delivery{State: late, Updated: c.now()}
	for i, t := range targets {
		team, agent := target.Inbox(t)
		in.To[i] = mailbox.Inbox{Team: team, Agent: agent}
	}
	held, err := c.Store.Intend(in)
	return intent{held}, err
}

// intent is a broadcast's mailbox intent, or none.
type intent struct{ held *mailbox.Intended }

// Done: every copy is recorded and durable. An intent that could not be
// removed names no copy an inbox lacks, and the next Complete removes it.
func (i intent) Done() {
	if i.held != nil {
		_ = i.held.Done()
	}
}

// Leave: some copies could not be recorded; the next Complete records them.
func (i intent) Leave() {
	if i.held != nil {
		i.held.Leave()
	}
}

// recordConcurrency bounds the inboxes a broadcast records at once.
const recordConcurrency = 32

// recorded is what recording a broadcast in one agent's inbox gave: the
// inbox (to type it now), or a deferral behind older messages, or an
// error; and the older messages it tried first.
type recorded struct {
	box    *mailbox.Box
	behind *Result
	older  []Result
	err    error
}

// recordOne records a broadcast in the inbox of p's agent: as typing (the
// caller holds the message's typing lock); or, when older messages still
// wait for that agent, as deferred behind them (Send's rule: a broadcast
// never overtakes them). The caller makes the record durable (Store.Sync).
func (c *Courier) recordOne(ctx context.Context, p dispatch.Resolved, env mailbox.Envelope, mode Mode) recorded {
	tm, agent := target.Inbox(p.Target)
	fail := func(err error) recorded { return recorded{err: fmt.Errorf("%s/%s: %w", tm, agent, err)} }
	box, err := c.Store.Box(tm, agent)
	if err != nil {
		return fail(err)
	}
	var older []Result
	if mode.Queue {
		wait, typed, _ := c.olderFirst(ctx, tm, agent, mode.Call)
		older = results(typed)
		if wait {
			e := env
			e.Delivery = &mailbox.Delivery{State: mailbox.StateDeferred, Updated: c.now(), LastVerdict: "behind older messages to the same agent", Reason: ReasonBehindOlder}
			if err := box.AppendBatched(e); err != nil {
				return fail(err)
			}
			return recorded{behind: &Result{Outcome: dispatch.Outcome{Target: p.Target, ID: env.ID, Verdict: delivery.Deferred},
				State: mailbox.StateDeferred, Reason: ReasonBehindOlder, Older: older}}
		}
	}
	if err := box.AppendBatched(env); err != nil {
		return fail(err)
	}
	return recorded{box: box, older: older}
}

// recordBroadcast records env, for reading only, in the inbox of every
// agent of team ("" for all) on the server, the caller's own included.
func (c *Courier) recordBroadcast(ctx context.Context, team string, env mailbox.Envelope) ([]Result, error) {
	targets, err := c.Dispatch.Targets(ctx, team)
	if err != nil {
		return nil, err
	}
	if len(targets) == 0 {
		return nil, fmt.Errorf("%w: no agent sessions to record for", dispatch.ErrNoTargets)
	}
	env.Delivery = &mailbox.Delivery{State: mailbox.StateInbox, Updated: c.now()}
	if env.Timestamp.IsZero() {
		env.Timestamp = c.now() // one time for every copy, a late one too
	}
	intent, err := c.intend(env, targets, mailbox.StateInbox)
	if err != nil {
		return nil, fmt.Errorf("recording the broadcast: %w", err)
	}
	var errs []error
	for _, t := range targets {
		tm, agent := target.Inbox(t)
		box, err := c.Store.Box(tm, agent)
		if err == nil {
			err = box.AppendBatched(env)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s/%s: %w", tm, agent, err))
		}
	}
	errs = append(errs, c.Store.Sync())
	if err := errors.Join(errs...); err != nil {
		intent.Leave()
		return nil, fmt.Errorf("recording the broadcast: %w (it is kept: the next deliver records it in the inboxes that lack it)", err)
	}
	intent.Done()
	out := make([]Result, len(targets))
	for i, t := range targets {
		out[i] = Result{Outcome: dispatch.Outcome{Target: t, ID: env.ID, Verdict: delivery.Recorded}, State: mailbox.StateInbox}
	}
	return out, nil
}

// Whoever types a message holds its typing lock from the moment it records
// the message as typing until it has recorded the outcome; the kernel
// releases the lock when that process dies, however it dies. A deliverer
// resumes a typing record only when it can take the lock itself: if it
// cannot, the sender is alive and still at work (waiting for the pane,
// typing, confirming), and typing the message too would double it.
//
// The lock is the message's, not each copy's: a broadcast holds one for
// all its copies until the last outcome is recorded (a lock file per copy
// is an inode made and freed, and a hundred of them were a quarter of the
// daemon's time in a broadcast to a hundred agents). Deliverers take it
// shared, so that the copies of one message in several inboxes are
// resumed at once; each inbox has its own deliverer lock.
func typingLock(id message.ID) string { return "typing-" + string(id) }

// holdTyping takes the typing lock of a message this process is about to
// record as typing (no one else can hold it yet).
func (c *Courier) holdTyping(ctx context.Context, id message.ID) (unlock func(), err error) {
	unlock, err = c.Locks.Named(ctx, typingLock(id))
	if err != nil {
		return nil, fmt.Errorf("locking message %s for typing: %w", id, err)
	}
	return unlock, nil
}

// tryTyping takes the typing lock of a message, shared, if no sender holds
// it.
func (c *Courier) tryTyping(id message.ID) (unlock func(), ok bool) {
	now, cancel := context.WithCancel(context.Background())
	cancel() // a lock that is free is taken at once; a held one is not waited for
	unlock, err := c.Locks.Shared(now, typingLock(id))
	return unlock, err == nil
}

// typeOne types env into t and records the outcome. attempt counts the
// typings of this message so far, this one included. resume: an earlier
// attempt may have typed it (env.Delivery says how far it may have got).
//
// found, when not nil, is t's pane as the caller found it a moment ago
// (Resolve, or dispatch.Again), so that it is not looked up twice. It
// returns that pane as found (see dispatch.Again).
func (c *Courier) typeOne(ctx context.Context, box *mailbox.Box, t target.Target, env mailbox.Envelope, mode Mode, attempt int, resume bool, found *dispatch.Resolved) (Result, dispatch.Resolved) {
	var earlier delivery.Step
	var was mailbox.DeliveryState
	if env.Delivery != nil {
		earlier, was = delivery.Step(env.Delivery.Reached), env.Delivery.State
	}
	// A message an earlier attempt may have typed is marked typing before
	// its pane is found: a deliverer that finds this state after a crash
	// looks for traces on screen before typing again, and how far earlier
	// attempts got is kept (this one cannot undo it). One that nothing of
	// can be in the pane (pending, deferred) stays as it is until its
	// first step is recorded, before the paste (typingRecord.step): a pass
	// that finds its agent not ready writes nothing, and a message waiting
	// behind a dialog did not flicker typing and deferred, an attempt
	// counted, at every pass (issue 31).
	if !untried(env.Delivery) {
		if err := box.SetDelivery(env.ID, mailbox.Delivery{State: mailbox.StateTyping, Attempts: attempt, Reached: string(earlier), Updated: c.now()}); err != nil {
			// Nothing typed; the inbox still says what it said.
			return Result{Outcome: dispatch.Outcome{Target: t, ID: env.ID, Verdict: delivery.Failed, Err: err}, State: was}, dispatch.Resolved{}
		}
	}
	before := prior{state: was, reached: earlier, resumed: resume}
	call := mode.Call
	call.Resume, call.Earlier = resume, earlier
	var (
		pane dispatch.Resolved
		err  error
	)
	if found != nil {
		pane = *found
	} else {
		pane, err = c.Dispatch.Resolve(ctx, t, call)
	}
	if err != nil {
		// Nothing typed: the outcome (the agent gone, say) is recorded.
		return c.settle(ctx, box, env.ID, c.Dispatch.Unsent(pane, env.ID, err), mode, attempt, before), pane
	}
	rec := c.typingRecord(func(target.Target) *mailbox.Box { return box }, env.ID, attempt, earlier)
	rec.was = was
	msg := dispatch.Message{ID: env.ID, Text: c.typed(env), Stored: true, OnStep: rec.step}
	out := c.Dispatch.Deliver(ctx, pane, msg, rec.call(call))
	return c.settle(ctx, box, env.ID, out, mode, attempt, before), pane
}

// prior is what earlier attempts at a message left: its recorded state and
// how far they may have got in the pane; resumed: this attempt looked for
// their traces. The zero value is a new message.
type prior struct {
	state   mailbox.DeliveryState
	reached delivery.Step
	resumed bool
}

// settle records the outcome of one typing and turns a not-ready agent
// into a deferral when mode queues.
func (c *Courier) settle(ctx context.Context, box *mailbox.Box, id message.ID, out dispatch.Outcome, mode Mode, attempt int, before prior) Result {
	if ctx.Err() != nil && out.Verdict == delivery.Failed && out.Typings == 0 && !out.Reached.Further(delivery.NotReached) {
		// Stopped before its delivery typed anything (while a broadcast
		// read the agent's screen, say): nothing to undo, so it waits
		// like one whose agent was not ready.
		out.Verdict, out.Err = delivery.NotReady, &delivery.InterruptedError{Cause: context.Cause(ctx)}
	}
	res := Result{Outcome: out}
	earlier, resumed := before.reached, before.resumed
	reached := earlier
	if out.Reached.Further(reached) {
		reached = out.Reached
	}
	// untouched: this attempt typed, pressed and reached nothing, so the
	// pane holds what earlier attempts left there, no more.
	untouched := out.Typings == 0 && out.Presses == 0 && !out.Reached.Further(earlier)
	rec := mailbox.Delivery{Attempts: attempt, LastVerdict: string(out.Verdict), Updated: c.now(), Reached: string(reached), Reason: Reason(out)}
	if out.Err != nil {
		rec.LastVerdict += ": " + out.Err.Error()
	}
	switch {
	case out.Verdict == delivery.Submitted:
		rec.State = mailbox.StateSubmitted
	case out.Verdict == delivery.Queued:
		rec.State = mailbox.StateQueued
	case out.Verdict == delivery.Typed:
		rec.State = mailbox.StateTyped
	case out.Verdict == delivery.VerdictUnknown && !resumed && reached == delivery.Unseen:
		// Our paste never showed, and may still arrive (a frozen agent),
		// or its tmux call failed after the server ran it (one stopped
		// for a while): a deliver looks once more, and submits it only
		// if the box then holds exactly it. It is never pasted again.
		rec.State = mailbox.StateTyped
	case out.Verdict == delivery.NotReady && mode.Queue && !errors.Is(out.Err, delivery.ErrNotAgent):
		// Kept for deliver; not for a shell prompt, which is no agent
		// and will not become ready by itself.
		rec.State = mailbox.StateDeferred
		if untouched && earlier == delivery.NotReached && (before.state == mailbox.StatePending || before.state == mailbox.StateDeferred) {
			// Recorded already and not typed now: no attempt is counted,
			// and a message deferred already is left as it is (a pass
			// that types nothing writes nothing).
			rec.Attempts = max(attempt-1, 0)
			if before.state == mailbox.StateDeferred {
				res.Verdict, res.State, res.Reason = delivery.Deferred, mailbox.StateDeferred, rec.Reason
				var nr *delivery.NotReadyError
				if locked := errors.As(out.Err, &nr) && nr.State == delivery.Locked; !locked && !errors.Is(out.Err, delivery.ErrInterrupted) {
					res.Err = nil
				}
				return res
			}
		}
		if before.state == mailbox.StateTyped {
			// Typed by an earlier attempt and not touched by this one: it
			// still waits in the box, for the next deliver to submit.
			rec.State = mailbox.StateTyped
		}
		res.Verdict = delivery.Deferred
		var nr *delivery.NotReadyError
		locked := errors.As(out.Err, &nr) && nr.State == delivery.Locked
		if !locked && !errors.Is(out.Err, delivery.ErrInterrupted) {
			res.Err = nil // the usual wait for an agent: nothing more to say
		}
	default:
		rec.State = mailbox.StateFailed
		if untouched && (before.state == mailbox.StateTyped || earlier.Further(delivery.NotReached) && out.Verdict != delivery.VerdictUnknown) {
			// An earlier attempt typed it, or may have (a typist that
			// died, or whose record of the outcome failed, after pasting
			// or pressing), and this one (its pane not found now, say)
			// touched nothing: the text may wait in the box, or the agent
			// may have it (found by e2e/chaos, seed 281912: submitted, its
			// record lost to a full disk, then failed by a pass that could
			// not tell the agent's pane). It never failed. (Unknown is a
			// verdict on a look at the pane that found no trace of it.)
			rec.State = mailbox.StateTyped
		}
	}
	res.State, res.Reason = rec.State, rec.Reason
	if box == nil {
		res.State = "" // nothing stored: never claim more
		return res
	}
	if err := box.SetDelivery(id, rec); err != nil {
		// Every typing is recorded as such first, and that is what the
		// inbox still says: a later deliver looks for traces of it, and
		// finds it submitted or finishes it.
		res.State = mailbox.StateTyping
		res.RecordErr = fmt.Errorf("%s, but recording that in the inbox failed (it still says %s): %w", out.Verdict, res.State, err)
		if !res.OK() && untouched {
			// Nothing typed, and nothing recorded to say it failed (a
			// full disk): the message is kept as typing, and the next
			// deliver types it. Failed would be untrue, and a sender who
			// retried would send it twice (found by e2e/chaos, seed 962481).
			res.Verdict = delivery.Deferred
			res.RecordErr = fmt.Errorf("not typed, and kept: recording that in the inbox failed (it still says %s, and the next deliver types it): %w", res.State, err)
		}
		if res.Err == nil {
			res.Err = res.RecordErr
		} else {
			res.Err = errors.Join(res.Err, res.RecordErr)
		}
	}
	return res
}

func (c *Courier) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}
