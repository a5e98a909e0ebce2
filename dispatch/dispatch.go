// Package dispatch is agentmsg's use of the parts: it finds agents on a tmux
// server, hands each message to a delivery, fans broadcasts out, and reports
// one outcome per target. It prints nothing; cmd does.
package dispatch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/agentmsg/agentmsg/broadcast"
	"github.com/agentmsg/agentmsg/delivery"
	"github.com/agentmsg/agentmsg/message"
	"github.com/agentmsg/agentmsg/profile"
	"github.com/agentmsg/agentmsg/target"
	"github.com/agentmsg/agentmsg/tmux"
)

// Errors for outcomes that never reached a delivery.
var (
	ErrTargetNotFound = errors.New("no such agent")
	ErrNoTargets      = errors.New("no agents found")
	ErrEmptyMessage   = errors.New("the message is empty")
	ErrSelf           = errors.New("that agent is you")
)

// Dispatcher sends messages through one tmux server. Its fields are the
// process's wiring, set once when it is built and never changed after;
// what one send, broadcast or look chooses is its Call.
type Dispatcher struct {
	Tmux  tmux.Client
	Locks delivery.Locker
	Clock delivery.Clock
	Opts  delivery.Options
	// Profile, when set, says how the agent in a pane behaves, from the
	// pane (its foreground command, its first process) and its screen; why
	// says how it was chosen.
	Profile func(pane tmux.Pane, screen []string) (p profile.Profile, why string)
	// Named, when set, is the profile of that name (--agent NAME), for a
	// choice made elsewhere: by a sender on another host.
	Named func(name string) (profile.Profile, error)
	// Self is the pane the caller runs in ("" when outside this server).
	// A broadcast leaves it out: an agent broadcasting to its team is busy
	// running us and would wait for itself until the ready timeout.
	Self        string
	Concurrency int       // broadcast deliveries in flight
	Random      io.Reader // for message ids; nil is crypto/rand
	// In a session of several panes, these say which is the agent's (see
	// choosePane): PaneFor, the pane the configuration names for an
	// agent ("" none); Registered, the pane spawn recorded; Known, whether
	// a pane runs an agent CLI agentmsg has a profile for, by its
	// command and processes (never its screen, which anything can draw).
	PaneFor func(target.Target) string
	// Received, when set, reports whether the agent in pane has itself
	// recorded receiving message id (its prompt-submit hook): proof of
	// that copy, bound to its pane and server, for the delivery into it.
	Received   func(id message.ID, pane tmux.Pane) bool
	Registered func(target.Target) (Registration, bool)
	Known      func(tmux.Pane) (profile string, ok bool)
}

// Call is what one send, broadcast or look chooses, beside the
// dispatcher's wiring.
type Call struct {
	// Agent, when set, reads every pane as this profile (chosen by hand)
	// instead of detecting it; AgentWhy says how it was chosen.
	Agent    *profile.Profile
	AgentWhy string
	// WhileBusy types into a busy agent that queues what is submitted
	// while it works (its profile says Queues), instead of waiting for its
	// turn to end. Off by default: a busy agent can open a permission
	// dialog at any moment, and one that opens between our last look and
	// our keys would take them (a digit in the text can choose "1. Yes").
	WhileBusy bool
	// Force types into a pane that shows a shell prompt.
	Force bool
	// OnWait, when set, hears about every delivery that waits for its agent.
	OnWait func(Wait)
	// Resume: an earlier attempt may have typed the message, and got as far
	// as Earlier (see delivery.Options).
	Resume  bool
	Earlier delivery.Step
	// ReadyTimeout, when above 0, bounds this call's wait for a ready agent
	// instead of the dispatcher's Opts.ReadyTimeout.
	ReadyTimeout time.Duration
	// IntoSelf types into the caller's own pane (Self) too: a deliver run
	// by an agent's Stop hook is there for exactly that agent's messages.
	IntoSelf bool
	// Pane, when set, names the agent's pane in its session (--pane):
	// "%N", "WINDOW.PANE" or a window of one pane.
	Pane string
}

// ReadyTimeout is how long call waits for a ready agent: its own
// ReadyTimeout when set, else the dispatcher's.
func (d *Dispatcher) ReadyTimeout(call Call) time.Duration {
	if call.ReadyTimeout > 0 {
		return call.ReadyTimeout
	}
	return d.Opts.ReadyTimeout
}

// ProfileNamed is the profile of that name (Named), for a choice made
// elsewhere: an error when there is none, or no profiles are wired.
func (d *Dispatcher) ProfileNamed(name string) (profile.Profile, error) {
	if d.Named == nil {
		return profile.Profile{}, fmt.Errorf("no profile %q: none are known here", name)
	}
	return d.Named(name)
}

// profile says how the agent t in pane behaves: the call's choice, else
// the kind spawn registered it as, else what the dispatcher detects. A
// wrapper script's pane shows a shell as its command, and a REPL's an
// interpreter: what spawn was told is worth more than either.
func (d *Dispatcher) profile(call Call, t target.Target, pane tmux.Pane, screen []string) (profile.Profile, string, bool) {
	r := d.pick(call, t, pane, screen)
	return r.profile, r.why, r.ok
}

// pick is profile's choice as a readAs: detected, when it was read off
// the pane (its program and screen), not named by the call or by spawn.
func (d *Dispatcher) pick(call Call, t target.Target, pane tmux.Pane, screen []string) readAs {
	if call.Agent != nil {
		return readAs{profile: *call.Agent, why: call.AgentWhy, ok: true}
	}
	reg, ok := d.registered(t, pane)
	kind := ok && reg.Kind != ""
	if kind && reg.Profile != nil {
		return readAs{profile: *reg.Profile, why: fmt.Sprintf("registered as %s when spawned", reg.Kind), ok: true}
	}
	if d.Profile == nil {
		return readAs{}
	}
	p, why := d.Profile(pane, screen)
	if kind {
		why += fmt.Sprintf(" (spawned as %q, which no profile is now)", reg.Kind)
	}
	return readAs{profile: p, why: why, ok: true, detected: true}
}

// Wait is a delivery waiting for its agent, and how the agent's screen
// is read: its profile, why that one, and the pane's foreground command.
type Wait struct {
	delivery.Wait
	Target                       target.Target
	Profile, ProfileWhy, Command string
}

// Outcome is what happened to one message for one target.
type Outcome struct {
	Target  target.Target
	Pane    string
	ID      message.ID
	Verdict delivery.Verdict
	State   delivery.State // the agent's screen when the delivery ended
	Presses int
	Typings int
	Elapsed time.Duration
	Err     error // nil only when the message was taken (OK)
	// Profile names the agent CLI the screen was read as, and why.
	Profile, ProfileWhy string
	// Pointer: the message was long, and the agent got one line pointing
	// at the whole text (agentmsg read ID) instead.
	Pointer bool
	// WhileBusyIgnored says why Call.WhileBusy did not apply to this
	// agent ("" when it did, or was not asked): the delivery waited for
	// a busy agent's turn to end instead.
	WhileBusyIgnored string
	Phases           delivery.Phases
	// Reached: how far typing it may have got in the pane (see
	// delivery.Step), counting an earlier attempt that was resumed.
	Reached delivery.Step
	read    *readAs // the profile the pane was read as, for Again
}

// OK reports whether the agent took the message: submitted, or queued to
// run after its current turn.
func (o Outcome) OK() bool { return o.Verdict == delivery.Submitted || o.Verdict == delivery.Queued }

// Message is a cleaned text with its id, ready to type.
type Message struct {
	ID   message.ID
	Text string
	// Stored: the whole text can be read back with agentmsg read ID (it
	// is in the mailbox), so a long one may be typed as a pointer.
	Stored bool
	// OnStep, when set, hears before each step of typing it into t's pane
	// (see delivery.Options.OnStep); an error stops that delivery there.
	OnStep func(t target.Target, s delivery.Step) error
}

// NewMessage cleans text and gives it a fresh id from sender (already
// normalised by message.Sender), with d's source of randomness. It fails
// with ErrEmptyMessage when nothing but whitespace is left.
func (d *Dispatcher) NewMessage(sender, text string) (Message, error) {
	return NewMessage(sender, text, d.Random)
}

// NewMessage is a message made without a tmux server (random nil is
// crypto/rand): recording one in an inbox needs no tmux at all.
func NewMessage(sender, text string, random io.Reader) (Message, error) {
	text = message.Clean(text)
	if strings.TrimSpace(text) == "" {
		return Message{}, ErrEmptyMessage
	}
	id, err := message.NewID(sender, random)
	return Message{ID: id, Text: text}, err
}

// Resolved is a target whose pane is found: what Deliver types into.
type Resolved struct {
	Target target.Target
	Pane   tmux.Pane
	// Err, from ResolveTeam: the agent's session is there but its pane
	// cannot be told (ErrPaneChoice); nothing is to be typed.
	Err    error
	screen []string  // read with the pane (nil: Deliver reads it)
	start  time.Time // when the send began (zero: when Deliver does)
	// read: the profile the last delivery to this pane read it as (Again);
	// nil: found from the screen.
	read *readAs
}

// readAs is the profile a pane was read as, and why (ok false: none
// reads it).
type readAs struct {
	profile profile.Profile
	why     string
	ok      bool
	// detected: read off the pane's program and screen (pick), so a
	// program that takes the pane's place calls for another look.
	detected bool
}

// Again is r for the next message to the same pane, right after out, a
// delivery to r that the agent took (ok false otherwise): the pane and the
// profile it was read as are still what out found, so neither is looked up
// again (a tmux call each message of a pass), and the delivery's first look
// is the last one out left with the pane's lock while that is fresh, its
// own otherwise. A pane that went since fails the delivery's first look,
// and nothing is typed.
//
// Only for a pane read by an agent CLI's own profile (or by none, where no
// profiles are set): its reader knows the agent's own input box, so a
// shell that takes the agent's place does not read as ready to it. The
// generic and python readers take a bare prompt, which a shell shows too;
// for them each message looks the pane up again, whose foreground command
// tells a shell.
func Again(r Resolved, out Outcome) (Resolved, bool) {
	if !out.OK() || out.Pane != r.Pane.ID || out.read == nil {
		return Resolved{}, false
	}
	if out.read.ok && out.read.profile.PromptOnly {
		return Resolved{}, false
	}
	return Resolved{Target: r.Target, Pane: r.Pane, read: out.read}, true
}

// Resolve finds t's pane for a send, with its screen when the tmux client
// reads both in one round trip, and types nothing. It fails with
// ErrTargetNotFound, naming the agents that are there, when t's session is
// not; with ErrPaneChoice when the session has several panes and none can
// be told to be the agent's; with ErrSelf when the pane is the caller's
// own (Self), unless call.IntoSelf.
func (d *Dispatcher) Resolve(ctx context.Context, t target.Target, call Call) (Resolved, error) {
	r := Resolved{Target: t, start: d.Clock.Now()}
	panes, screen, err := d.sessionPanes(ctx, t.Session)
	switch {
	case errors.Is(err, tmux.ErrSessionNotFound):
		return r, d.notFound(ctx, t)
	case err != nil:
		return r, err
	}
	pane, err := d.choosePane(t, panes, call.Pane)
	switch {
	case err != nil:
		return r, err
	case d.Self != "" && !call.IntoSelf && pane.ID == d.Self:
		return r, fmt.Errorf("%w: %s is the pane you run in; your own prompt is busy running this command", ErrSelf, t.Session)
	}
	r.Pane = pane
	if pane.Active {
		r.screen = screen // the screen read was this pane's
	}
	return r, nil
}

// Unsent is the outcome of a send of message id to r that ended with err
// before anything was typed: Resolve refused it (NotFound for a missing
// agent), or the caller could not go on.
func (d *Dispatcher) Unsent(r Resolved, id message.ID, err error) Outcome {
	out := Outcome{Target: r.Target, ID: id, Verdict: delivery.Failed, Err: err, Elapsed: d.since(r.start)}
	if errors.Is(err, ErrTargetNotFound) {
		out.Verdict = delivery.NotFound
	}
	return out
}

// panesScreener is a tmux client that reads a session's panes and the
// screen of its active one in one round trip.
type panesScreener interface {
	SessionPanesScreen(ctx context.Context, session string) ([]tmux.Pane, []string, error)
}

// sessionPanes finds session's panes and, when that comes at no extra
// cost, the screen of its active pane (nil otherwise: deliver captures it).
func (d *Dispatcher) sessionPanes(ctx context.Context, session string) ([]tmux.Pane, []string, error) {
	if ps, ok := d.Tmux.(panesScreener); ok {
		return ps.SessionPanesScreen(ctx, session)
	}
	panes, err := d.Tmux.SessionPanes(ctx, session)
	return panes, nil, err
}

// ResolveTeam finds the panes of every agent of team ("" for all) for a
// broadcast, sorted by session name, and types nothing. It leaves out the
// caller's own pane (Self): an agent broadcasting to its team is busy
// running us and would wait for itself until the ready timeout. An agent
// whose pane cannot be told (ErrPaneChoice) comes back with Err set, for
// the broadcast to report. It fails with ErrNoTargets when no agent is
// left.
func (d *Dispatcher) ResolveTeam(ctx context.Context, team string, call Call) ([]Resolved, error) {
	agents, err := d.find(ctx, team, call)
	if err != nil {
		return nil, err
	}
	agents = slices.DeleteFunc(agents, func(a found) bool { return d.Self != "" && a.pane.ID == d.Self })
	if len(agents) == 0 {
		return nil, d.noTargets(ctx, team)
	}
	out := make([]Resolved, len(agents))
	for i, a := range agents {
		out[i] = Resolved{Target: a.Target, Pane: a.pane, Err: a.err}
	}
	return out, nil
}

// Deliver types msg into r's pane, found by Resolve or ResolveTeam.
func (d *Dispatcher) Deliver(ctx context.Context, r Resolved, msg Message, call Call) Outcome {
	if r.Err != nil {
		return d.Unsent(r, msg.ID, r.Err)
	}
	start := r.start
	if start.IsZero() {
		start = d.Clock.Now()
	}
	out := d.deliver(ctx, r.Target, r.Pane, r.screen, r.read, msg, call)
	out.Elapsed = d.since(start)
	return out
}

// DeliverEach types msg into the pane of every one of rs, in parallel
// (Concurrency at a time); one target's failure never stops the others.
// The outcomes are in the order of rs.
func (d *Dispatcher) DeliverEach(ctx context.Context, rs []Resolved, msg Message, call Call) []Outcome {
	return broadcast.Each(ctx, rs, d.Concurrency, func(ctx context.Context, r Resolved) Outcome {
		return d.Deliver(ctx, r, msg, call)
	})
}

func (d *Dispatcher) since(start time.Time) time.Duration { return d.Clock.Now().Sub(start) }

// Agent is one agent found on the server, with its screen's state now.
type Agent struct {
	Target target.Target
	Pane   tmux.Pane
	State  delivery.State
	Detail string
	Shell  bool // the pane shows a shell prompt: the agent has exited
	// Profile names the agent CLI the screen was read as ("" when no
	// profiles are configured).
	Profile string
}

// Agents lists the agents of team ("" for all) and reads each one's screen,
// in parallel.
func (d *Dispatcher) Agents(ctx context.Context, team string, call Call) ([]Agent, error) {
	agents, err := d.find(ctx, team, call)
	if err != nil {
		return nil, err
	}
	return broadcast.Each(ctx, agents, d.Concurrency, func(ctx context.Context, a found) Agent {
		out := Agent{Target: a.Target, Pane: a.pane, State: delivery.Unknown}
		if a.err != nil {
			out.Detail = a.err.Error()
			return out
		}
		lines, err := d.Tmux.Pinned(a.pane).Capture(ctx, a.pane.ID, 0)
		if err != nil {
			out.Detail = err.Error()
			return out
		}
		reader := d.Opts.Reader
		// Read as a send would: with the agent's own profile.
		if p, _, ok := d.profile(call, a.Target, a.pane, lines); ok {
			out.Profile = p.Name
			if p.Reader != nil {
				reader = p.Reader
			}
		}
		rd := reader.Read(lines)
		out.State, out.Detail, out.Shell = rd.State, rd.Detail, rd.Shell
		if a.pane.InMode {
			// A send leaves copy mode first, so the state still holds.
			out.Detail = joinDetail("in copy mode", rd.Detail)
		}
		return out
	}), nil
}

// InBox is the id a message in t's input box starts with, as its profile
// (call's, else its own) reads the box now: text of ours that waits there
// unsubmitted.
func (d *Dispatcher) InBox(ctx context.Context, t target.Target, call Call) (message.ID, bool) {
	r, err := d.Resolve(ctx, t, Call{IntoSelf: true})
	if err != nil {
		return "", false
	}
	screen := r.screen
	if screen == nil {
		if screen, err = d.Tmux.Pinned(r.Pane).Capture(ctx, r.Pane.ID, 0); err != nil {
			return "", false
		}
	}
	reader := d.Opts.Reader
	if p, _, ok := d.profile(call, t, r.Pane, screen); ok && p.Reader != nil {
		reader = p.Reader
	}
	return message.Leading(reader.Read(screen).Box)
}

// Exists reports whether t's session is on the server (exactly).
func (d *Dispatcher) Exists(ctx context.Context, t target.Target) (bool, error) {
	_, err := d.Tmux.SessionPanes(ctx, t.Session)
	if errors.Is(err, tmux.ErrSessionNotFound) {
		return false, nil
	}
	return err == nil, err
}

// Targets lists the agents of team ("" for all), for completion and checks.
func (d *Dispatcher) Targets(ctx context.Context, team string) ([]target.Target, error) {
	agents, err := d.find(ctx, team, Call{})
	out := make([]target.Target, len(agents))
	for i, a := range agents {
		out[i] = a.Target
	}
	return out, err
}

type found struct {
	Target target.Target
	pane   tmux.Pane
	err    error // the agent's pane cannot be told (ErrPaneChoice)
}

// find lists the agent sessions of team ("" for every team and ralph
// agents), each with its agent's pane, sorted by session name. Sessions
// that do not follow the naming scheme are not agents and are left out.
func (d *Dispatcher) find(ctx context.Context, team string, call Call) ([]found, error) {
	panes, err := d.Tmux.ListPanes(ctx)
	if err != nil {
		return nil, err
	}
	bySession := map[string][]tmux.Pane{}
	var targets []target.Target
	for _, p := range panes {
		t, ok := target.FromSession(p.Session)
		if !ok || (team != "" && t.Team != team) {
			continue
		}
		if _, seen := bySession[p.Session]; !seen {
			targets = append(targets, t)
		}
		bySession[p.Session] = append(bySession[p.Session], p)
	}
	out := make([]found, 0, len(targets))
	for _, t := range targets {
		p, err := d.choosePane(t, bySession[t.Session], call.Pane)
		out = append(out, found{Target: t, pane: p, err: err})
	}
	slices.SortFunc(out, func(a, b found) int { return strings.Compare(a.Target.Session, b.Target.Session) })
	return out, nil
}

// deliver types msg into pane; screen is the pane's screen when already
// read (nil: read it here, for the profile). A profile detected from the
// pane's program is looked for again when another program takes the
// pane while the delivery waits for its agent, for what is left of the
// wait: an agent behind a launcher (pyenv's bash shim, npx, a wrapper
// script) read as a shell for the whole ready timeout, 30 s, and was
// deferred though it was up after 2 s.
func (d *Dispatcher) deliver(ctx context.Context, t target.Target, pane tmux.Pane, screen []string, read *readAs, msg Message, call Call) Outcome {
	start := d.Clock.Now()
	total := d.ReadyTimeout(call)
	var before delivery.Phases
	for {
		out := d.deliverAs(ctx, t, pane, screen, read, msg, call)
		out.Phases.Lock += before.Lock
		out.Phases.Ready += before.Ready
		var changed *delivery.ForegroundChangedError
		if !errors.As(out.Err, &changed) {
			return out
		}
		left := total - d.since(start)
		if left <= 0 {
			out.Err = &delivery.NotReadyError{State: out.State, Detail: changed.Error(), Waited: d.since(start)}
			return out
		}
		before = out.Phases
		pane.Command, screen, read = changed.To, changed.Screen, nil
		call.ReadyTimeout = left
	}
}

// deliverAs is one delivery of msg into pane, read as read says (nil:
// the profile is picked here).
func (d *Dispatcher) deliverAs(ctx context.Context, t target.Target, pane tmux.Pane, screen []string, read *readAs, msg Message, call Call) Outcome {
	// Every look, paste and press names this pane in full and checks the
	// server is the one it was found on.
	term := d.Tmux.Pinned(pane)
	out := Outcome{Target: t, Pane: pane.ID, ID: msg.ID}
	if pane.Dead {
		out.Verdict, out.Err = delivery.Failed, fmt.Errorf("the program in %s (pane %s) has exited", t.Session, pane.ID)
		return out
	}
	opts := d.Opts
	opts.Force, opts.Resume, opts.Earlier = call.Force, call.Resume, call.Earlier
	opts.ReadyTimeout = d.ReadyTimeout(call)
	if d.Received != nil {
		opts.Receipt = func(id message.ID) bool { return d.Received(id, pane) }
	}
	if msg.OnStep != nil {
		opts.OnStep = func(s delivery.Step) error { return msg.OnStep(t, s) }
	}
	if opts.Resume {
		out.Reached = opts.Earlier
	}
	text := msg.Text
	if screen == nil && read == nil && (call.Agent != nil || d.Profile != nil) {
		var err error
		if screen, err = term.Capture(ctx, pane.ID, 0); err != nil {
			out.Verdict, out.Err = delivery.Failed, err
			return out
		}
	}
	bracketed := false // what a program no profile describes is assumed to do
	if read == nil || call.Agent != nil {
		picked := d.pick(call, t, pane, screen)
		read = &picked
	}
	out.read = read
	p, why, ok := read.profile, read.why, read.ok
	if ok {
		out.Profile, out.ProfileWhy = p.Name, why
		opts = d.options(opts, p, call)
		if read.detected {
			opts.Foreground, opts.Reprofile = pane.Command, d.reprofile(call, t, pane, p)
		}
		bracketed = p.BracketedPaste
		if msg.Stored && tooLong(text, p) {
			text, out.Pointer = Pointer(msg.ID, text), true
		}
	}
	if call.WhileBusy {
		out.WhileBusyIgnored = whileBusyIgnored(p, why, ok)
	}
	if call.OnWait != nil {
		name, why := out.Profile, out.ProfileWhy
		opts.OnWait = func(w delivery.Wait) {
			call.OnWait(Wait{Wait: w, Target: t, Profile: name, ProfileWhy: why, Command: pane.Command})
		}
	}
	if pane.BracketedPaste != tmux.PasteUnknown {
		bracketed = pane.BracketedPaste == tmux.PasteOn // tmux 3.7+ says
	}
	if strings.Contains(text, "\n") && !bracketed {
		// Without bracketed paste every pasted line would be submitted on
		// its own, and a line such as "/exit" or "!rm" would run as the
		// receiver's command: the message goes as one line.
		if msg.Stored {
			text, out.Pointer = Pointer(msg.ID, text), true
		} else {
			text = strings.Join(strings.Fields(text), " ")
		}
	}
	if !bracketed {
		// Every pasted character is a key too: a tab asks a readline
		// prompt (python3's) to complete, and is lost.
		text = strings.ReplaceAll(text, "\t", "    ")
	}
	if len(text) > cookedLineMax && !bracketed && msg.Stored {
		// A program that reads its terminal a line at a time (no line
		// editor of its own: no bracketed paste) gets at most 4,095 bytes
		// of a line from the kernel, the rest dropped (found by e2e/chaos:
		// python and a read loop got the first 4,095 bytes of a longer one).
		text, out.Pointer = Pointer(msg.ID, text), true
	}
	if !pane.InMode {
		opts.Screen = screen // read with the pane, a moment ago
	}
	del := &delivery.Deliverer{Term: term, Locks: d.Locks, Clock: d.Clock, Socket: term.Server().Socket, Opts: opts}
	res := del.Deliver(ctx, pane.ID, msg.ID, text)
	out.Verdict, out.State, out.Presses, out.Typings, out.Err = res.Verdict, res.LastSeen, res.Presses, res.Typings, res.Err
	out.Phases, out.Reached = res.Phases, res.Reached
	return out
}

// reprofile says whether pane, read as p, calls for another profile now
// that its foreground command is another (delivery.Options.Reprofile).
func (d *Dispatcher) reprofile(call Call, t target.Target, pane tmux.Pane, p profile.Profile) func(string, []string) bool {
	return func(command string, screen []string) bool {
		pane.Command = command
		q := d.pick(call, t, pane, screen)
		return q.ok && q.profile.Name != p.Name
	}
}

// options are base, a delivery's options, for an agent of profile p in
// call: its screen reader, its settle, and whether it queues while busy.
func (d *Dispatcher) options(base delivery.Options, p profile.Profile, call Call) delivery.Options {
	if p.Reader != nil {
		base.Reader = p.Reader
	}
	base.Settle = max(base.Settle, p.Settle)
	base.QueueWhileBusy = p.Queues && call.WhileBusy
	return base
}

// whileBusyIgnored says why --while-busy cannot apply to an agent read as
// p (found: whether any profile reads it), or "" when it can: only an
// agent CLI known to queue what is submitted while it works is typed into
// while busy.
func whileBusyIgnored(p profile.Profile, why string, found bool) string {
	switch {
	case !found:
		return "no profile reads this pane, so it is not known to queue messages typed while it is busy"
	case !p.Queues:
		return fmt.Sprintf("profile %s does not queue messages typed while it is busy (%s)", p.Name, why)
	}
	return ""
}

// tooLong reports whether text would be folded in p's box, or is past the
// size p reads well.
func tooLong(text string, p profile.Profile) bool {
	return (p.FoldBytes > 0 && len(text) > p.FoldBytes) ||
		(p.FoldLines > 0 && strings.Count(text, "\n")+1 > p.FoldLines)
}

// cookedLineMax is the longest text typed whole into a program without
// bracketed paste: the terminal's line discipline keeps 4,095 bytes of a
// line (N_TTY_BUF_SIZE less the newline), and the id and ": " in front of
// the text take some of them.
const cookedLineMax = 4000

// pointerLineMax bounds the first line quoted in a pointer.
const pointerLineMax = 120

// Pointer is the one line typed for a long message: its first line and
// where to read the rest. The id stays in front (message.Format adds it),
// so confirmation works as for any message.
func Pointer(id message.ID, text string) string {
	first, _, _ := strings.Cut(strings.TrimSpace(text), "\n")
	first = strings.TrimSpace(first)
	if r := []rune(first); len(r) > pointerLineMax {
		first = string(r[:pointerLineMax]) + "…"
	}
	return first + " … (full text: agentmsg read " + string(id) + ")"
}

// notFound explains a missing agent and names the ones that do exist.
func (d *Dispatcher) notFound(ctx context.Context, t target.Target) error {
	msg := fmt.Sprintf("no session named exactly %q on %s", t.Session, d.Tmux.Server().Socket)
	team := t.Team
	if t.IsRalph() {
		team = ""
	}
	if agents, err := d.find(ctx, team, Call{}); err == nil {
		var names []string
		for _, a := range agents {
			if a.Target.IsRalph() == t.IsRalph() {
				names = append(names, a.Target.Agent())
			}
		}
		switch {
		case len(names) > 0:
			msg += fmt.Sprintf(" (agents there: %s)", strings.Join(names, ", "))
		case !t.IsRalph():
			msg += fmt.Sprintf(" (team %s has no agents there)", t.Team)
		}
	}
	return fmt.Errorf("%w: %s", ErrTargetNotFound, msg)
}

// noTargets says that team has no agents, and which teams do: most often
// the team's name was mistyped.
func (d *Dispatcher) noTargets(ctx context.Context, team string) error {
	if team == "" {
		return fmt.Errorf("%w: no agent-* sessions on this server", ErrNoTargets)
	}
	msg := fmt.Sprintf("team %s has no agent sessions on this server", team)
	if agents, err := d.find(ctx, "", Call{}); err == nil {
		var teams []string
		for _, a := range agents {
			if a.Target.Team != "" && !slices.Contains(teams, a.Target.Team) {
				teams = append(teams, a.Target.Team)
			}
		}
		if len(teams) > 0 {
			slices.Sort(teams)
			msg += fmt.Sprintf(" (teams there: %s)", strings.Join(teams, ", "))
		}
	}
	return fmt.Errorf("%w: %s", ErrNoTargets, msg)
}

func joinDetail(a, b string) string {
	if b == "" {
		return a
	}
	return a + "; " + b
}
