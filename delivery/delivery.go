// Package delivery types one message into one agent's pane and finds out
// whether the agent really received it.
//
// It is a state machine over a small terminal interface and a clock; it runs
// no processes, reads no environment and prints nothing. One delivery:
//
//  1. takes the pane's lock (held through step 6, so senders never merge);
//  2. leaves copy mode or any other pane mode;
//  3. waits until the input box is on screen and empty: never types into a
//     dialog, never adds to or submits a person's draft;
//  4. pastes "MSG_<SENDER>_<hex>: <text>" as data (a buffer, bracketed
//     paste) and waits to see it in the box;
//  5. after a short settle, and only if the box holds exactly our text,
//     presses submit in a separate command;
//  6. confirms: submitted when the box no longer holds the text and the id
//     shows above it (or the agent's own receipt says so). Text still in the
//     box gets another submit press.
//
// Nothing is ever pasted twice: a paste that does not show may still be on
// its way, and text that left the box after our press was taken by it. What
// cannot be known either way is reported VerdictUnknown, never typed again.
package delivery

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/agentmsg/agentmsg/lock"
	"github.com/agentmsg/agentmsg/message"
	"github.com/agentmsg/agentmsg/tmux"
)

// Terminal is the part of tmux a delivery uses. The pane id is resolved by
// the caller and used for every command.
type Terminal interface {
	LeaveMode(ctx context.Context, pane string) error
	Capture(ctx context.Context, pane string, history int) ([]string, error)
	Paste(ctx context.Context, pane, text string) error
	SendBytes(ctx context.Context, pane string, b ...byte) error
}

// lockAtOnce: a pane lock taken within this did not wait for another
// holder (a holder keeps it for a whole delivery, milliseconds at least).
const lockAtOnce = time.Millisecond

// leaveCapturer is a Terminal that can leave a pane's mode and capture its
// screen in one round trip: a delivery's first look then costs one call.
type leaveCapturer interface {
	LeaveModeCapture(ctx context.Context, pane string) ([]string, error)
}

// gatherer is a Terminal whose calls from deliveries at work at once go
// together (tmux.Exec: one process for many); a delivery says when it is
// at work, calling it (+1), and when it is away from it (-1).
type gatherer interface{ Gather(delta int) }

// foregroundLooker is a Terminal whose look at a pane can also say the
// pane's foreground command, in the same round trip
// (tmux.Exec.LookForeground).
type foregroundLooker interface {
	LookForeground(ctx context.Context, pane string, leave bool) (screen []string, command string, err error)
}

// Locker gives exclusive use of one pane.
type Locker interface {
	Pane(ctx context.Context, socket, pane string) (unlock func(), err error)
}

// handoffLocker is a Locker whose holders leave their last look at the
// pane for the next holder (lock.Dir). A delivery that had to wait for the
// pane takes that look, when recent, as the first of the two looks that
// must agree before it types, and so pays one look less.
type handoffLocker interface {
	PaneHandoff(ctx context.Context, socket, pane string) (prior *lock.Look, release func(last *lock.Look), err error)
}

// handoffMaxAge is how old the last holder's look may be when it stands
// for a first look. Two looks guard against a frame half drawn; a change
// that starts between them can slip through, so the gap stays near that of
// a lone send (its first look, taken with the pane before the lock, is 3
// to 4 ms old at the second). It is also shorter than any delivery that
// types: a holder that slipped in between unseen (lock.PaneHandoff) and
// typed took six tmux calls, over 1 ms each, so its predecessor's look is
// too old by then.
const handoffMaxAge = 5 * time.Millisecond

// fresh reports whether a look of this age may stand for a first look: not
// older than handoffMaxAge, nor from the future (a clock stepped back).
func fresh(age time.Duration) bool { return age >= 0 && age <= handoffMaxAge }

// Clock is time, replaceable in tests.
type Clock interface {
	Now() time.Time
	// Sleep waits d or until ctx ends.
	Sleep(ctx context.Context, d time.Duration) error
}

// Options tune a delivery. The zero value is not useful: start from
// DefaultOptions.
type Options struct {
	// Screen, when set, is the pane's screen read just before the delivery
	// (with the pane, in one round trip), not in copy mode. It serves as
	// the first look when the pane's lock comes at once: no other sender
	// can have typed since, and a tmux call is saved. After a wait for the
	// lock it is stale and a fresh look is taken.
	Screen         []string
	ReadyTimeout   time.Duration // wait this long for an empty input box
	ConfirmTimeout time.Duration // wait this long for proof after each submit
	Retries        int           // extra submit presses allowed (text is never typed twice)
	Settle         time.Duration // pause between seeing our text and submitting
	// Repress: our text still in the box this long after a press means the
	// press was lost (or taken as a newline): press again, while retries
	// last. The last press waits the whole ConfirmTimeout.
	Repress time.Duration
	Poll    time.Duration // screen poll interval
	Reader  ScreenReader
	// QueueWhileBusy types into a busy agent whose box is empty and on
	// screen: for agents that queue what is submitted while they work.
	QueueWhileBusy bool
	// Force types into a pane that shows a shell prompt (where the text
	// runs as a command); without it that is refused at once.
	Force bool
	// Receipt, when set, reports whether the agent itself has recorded
	// receiving id (a hook run on prompt submit): proof no folding or
	// scrolling can hide.
	Receipt func(id message.ID) bool
	// Resume is for a message that an earlier, interrupted delivery may
	// have typed or submitted already. A receipt, or the id above the box
	// (searched through the whole scrollback), means it was submitted:
	// nothing is typed again. Exactly our text in the box means it was
	// typed: it is only submitted. With no trace, it is typed again only
	// when Earlier says it was never pressed and no paste went unseen;
	// otherwise the verdict is VerdictUnknown and nothing is typed.
	Resume  bool
	Earlier Step // how far earlier attempts may have got (with Resume)
	// OnStep, when set, hears of each step before it is taken: before the
	// first paste and before the first submit press. A mailbox records it
	// there, so that a crash right after cannot hide it. An error stops
	// the delivery before that step.
	OnStep func(Step) error
	// OnWait, when set, is told what the delivery is waiting for: once when
	// the state changes and about once a second while it stays.
	OnWait func(Wait)
	// Pace, when set, is shared by every delivery of the process: while
	// many wait for their agents, each looks less often (see Pace).
	Pace *Pace
	// Foreground is the pane's foreground command that Reader was chosen
	// for. Reprofile, when set, says whether another foreground command
	// (with the screen shown with it) calls for another profile: a
	// delivery waiting for its agent then takes its looks with the pane's
	// foreground command (in the same tmux call, on a Terminal that can),
	// and when that changes to one that does, it ends before typing
	// anything with a *ForegroundChangedError, for its caller to deliver
	// again with the new profile. An agent behind a launcher (a wrapper
	// script, npx, pyenv's shim) reads as a shell until the launcher
	// hands it the pane, and a shell's reader never reads ready.
	Foreground string
	Reprofile  func(command string, screen []string) bool
}

// Action is what a delivery does on a screen it reads before typing.
type Action string

const (
	ActType   Action = "type"   // the box is empty and on screen (with Force, a shell's command line)
	ActQueue  Action = "queue"  // busy, but the agent queues what is submitted now, and its box is empty
	ActRefuse Action = "refuse" // a shell prompt without Force: the text would run as a command
	ActWait   Action = "wait"   // anything else: look again, until ReadyTimeout
)

// Decide is the readiness rule, the one place it is written: what a
// delivery with these options does on reading rd. It types only into an
// empty box that is on screen, never into a dialog or a person's draft.
func (o Options) Decide(rd Reading) Action {
	switch {
	case rd.State == Ready || (rd.Shell && o.Force && rd.Box == ""):
		return ActType
	case rd.State == Busy && o.QueueWhileBusy && rd.BoxRow >= 0 && rd.Box == "" && !rd.Hold:
		return ActQueue // it queues what is submitted now
	case rd.Shell && !o.Force:
		return ActRefuse
	}
	return ActWait
}

// Wait describes a delivery that cannot type yet.
type Wait struct {
	State  State
	Detail string
	Waited time.Duration
}

// DefaultOptions are the seed's DeliveryConfig values, with a fast poll: the
// one definition of a delivery's default timing (config.Defaults reads it).
func DefaultOptions() Options {
	return Options{
		ReadyTimeout:   30 * time.Second,
		ConfirmTimeout: 5 * time.Second,
		Retries:        2,
		Settle:         0, // a profile's own (package profile)
		Repress:        500 * time.Millisecond,
		Poll:           10 * time.Millisecond,
		Reader:         Generic{},
	}
}

// Step is how far a delivery got in the pane: what a crash right after it
// may have left there.
type Step string

const (
	NotReached Step = "" // nothing of ours reached the pane
	// Pasted: our text may be in the box. Never pressed, so never
	// submitted: with no trace of it, it is typed again.
	Pasted Step = "pasted"
	// Unseen: a paste went out and never showed; it may still arrive (a
	// frozen agent), so it is never pasted again.
	Unseen Step = "unseen"
	// Pressed: a submit press may have reached it; it may have been
	// submitted, so it is never typed again without proof it was not.
	Pressed Step = "pressed"
)

// Further reports whether s is a later step than t.
func (s Step) Further(t Step) bool { return stepRank[s] > stepRank[t] }

var stepRank = map[Step]int{NotReached: 0, Pasted: 1, Unseen: 2, Pressed: 3}

// mayArrive reports whether text of ours may still be on its way to the
// box, or may have been submitted: typing it again could double it.
func (s Step) mayArrive() bool { return s.Further(Pasted) }

// Verdict is the outcome of one delivery.
type Verdict string

const (
	Submitted Verdict = "submitted" // the agent took the message
	Queued    Verdict = "queued"    // the agent took it while busy and runs it next
	Typed     Verdict = "typed"     // left in the box, submission not confirmed
	NotReady  Verdict = "not_ready" // never typed: busy, dialog or draft the whole time
	Failed    Verdict = "failed"    // tmux failed or the pane went away
	// VerdictUnknown: it may have reached the agent, and nothing shows
	// whether it did; it is not typed again (that could make a duplicate).
	// (Unknown is the screen state.)
	VerdictUnknown Verdict = "unknown"

	// The verdicts of a send that goes through the mailbox (package
	// courier) and finds its agent first (package dispatch): every
	// verdict a sender can be told is listed here, once.

	// NotFound: no such agent, or its pane cannot be told; nothing was
	// recorded or typed.
	NotFound Verdict = "not_found"
	// Deferred: recorded; the agent was not ready, and a deliver pass
	// types it when it is.
	Deferred Verdict = "deferred"
	// Recorded: put in the inbox only, for the agent to read (a
	// mailbox-only send); never typed.
	Recorded Verdict = "recorded"
	// Skipped: not typed, as it no longer applies: a request claimed or
	// expired before its turn came, or one a person settled by hand. Err
	// says why.
	Skipped Verdict = "skipped"
)

// Result is what happened.
type Result struct {
	ID       message.ID
	Verdict  Verdict
	Presses  int   // submit presses
	Typings  int   // times the text was pasted
	Err      error // nil only when Verdict is Submitted
	Elapsed  time.Duration
	LastSeen State // the screen state when the delivery ended
	Phases   Phases
	// Reached is the furthest step this delivery, or an earlier one it
	// resumed, may have taken in the pane.
	Reached Step
}

// Phases say where a delivery's time went.
type Phases struct {
	Lock    time.Duration // waiting for other senders to the pane
	Ready   time.Duration // waiting for an empty input box
	Type    time.Duration // pasting until the box showed the text
	Settle  time.Duration // the pause before submit, and the last look
	Confirm time.Duration // from the submit press to proof of submission
}

// Errors a delivery ends with, for errors.Is.
var (
	ErrNotReady    = errors.New("agent not ready")
	ErrUnconfirmed = errors.New("typed but not confirmed as submitted")
	ErrPaneGone    = errors.New("pane went away")
	// ErrNotAgent: the pane shows a shell prompt (the agent has exited);
	// it wraps ErrNotReady.
	ErrNotAgent = errors.New("not an agent")
	// ErrTextOffBox: the pasted text shows on screen, but not in a box
	// the screen reader knows; it comes with ErrUnconfirmed.
	ErrTextOffBox = errors.New("the pasted text is on screen but not in an input box the agent's profile recognises")
	// ErrUnknown: the message may have reached the agent and nothing
	// shows whether it did (VerdictUnknown); it comes with ErrUnconfirmed.
	ErrUnknown = errors.New("not known whether the agent got it")
	// ErrInterrupted: the caller's context ended (a signal, a client that
	// went away, a time limit) before the delivery did. See
	// InterruptedError.
	ErrInterrupted = errors.New("interrupted")
)

// InterruptedError is a delivery its caller stopped. A step already under
// way was finished (a paste or a submit press is never cut in half), and
// nothing was started after it. Typed says whether our text reached the
// box: then it wraps ErrUnconfirmed (verdict Typed: left in the box, for a
// resumed delivery to submit), else ErrNotReady (verdict NotReady:
// nothing was typed, the message can simply wait).
type InterruptedError struct {
	Typed   bool
	Pressed bool // submit was pressed on it: it may well have been taken
	Cause   error
}

func (e *InterruptedError) Error() string {
	switch {
	case e.Pressed:
		return fmt.Sprintf("interrupted (%v) after pressing submit, before the submission was confirmed", e.Cause)
	case e.Typed:
		return fmt.Sprintf("interrupted (%v) after typing: the text waits in the input box, not submitted", e.Cause)
	}
	return fmt.Sprintf("interrupted (%v) before anything was typed", e.Cause)
}

func (e *InterruptedError) Unwrap() []error {
	if e.Typed {
		return []error{ErrInterrupted, ErrUnconfirmed, e.Cause}
	}
	return []error{ErrInterrupted, ErrNotReady, e.Cause}
}

// unknown is an ErrUnknown error: why nothing is known.
func unknown(format string, args ...any) error {
	return fmt.Errorf("%w: %s; %w", ErrUnconfirmed, fmt.Sprintf(format, args...), ErrUnknown)
}

// NotReadyError says why the agent never became ready.
type NotReadyError struct {
	State  State
	Detail string
	Waited time.Duration
	Shell  bool // a shell prompt, not an agent: refused at once
}

func (e *NotReadyError) Error() string {
	if e.Shell {
		return "refused: " + e.Detail
	}
	what := map[State]string{
		Busy:    "it stayed busy",
		Dialog:  "a dialog stayed open (nothing was typed or pressed)",
		Draft:   "its input box held someone else's text (left untouched)",
		Unknown: "no input box was on screen",
		Locked:  "another sender held the pane the whole time (nothing was typed)",
		Gone:    "the agent's pane went away before anything was typed",
	}[e.State]
	if what == "" {
		what = string(e.State)
	}
	s := fmt.Sprintf("not ready after %s: %s", e.Waited.Round(time.Millisecond), what)
	if e.Detail != "" {
		s += " — " + e.Detail
	}
	return s
}

func (e *NotReadyError) Unwrap() []error {
	if e.Shell {
		return []error{ErrNotReady, ErrNotAgent}
	}
	return []error{ErrNotReady}
}

// ForegroundChangedError: while the delivery waited for its agent, the
// pane's foreground program changed to one that another profile reads
// (Options.Reprofile), and nothing was typed. To a caller that does not
// deliver again with that profile it is what it was: not ready.
type ForegroundChangedError struct {
	From, To string
	Screen   []string // the look that showed To
	Waited   time.Duration
}

func (e *ForegroundChangedError) Error() string {
	return fmt.Sprintf("the pane's program changed from %s to %s after %s (nothing was typed)", e.From, e.To, e.Waited.Round(time.Millisecond))
}

func (e *ForegroundChangedError) Unwrap() error { return ErrNotReady }

// Deliverer runs deliveries.
type Deliverer struct {
	Term   Terminal
	Locks  Locker
	Clock  Clock
	Socket string // the server's socket, half of the lock key
	Opts   Options
}

// Deliver types text with the given id into pane, cleaned (message.Format):
// the one cleaning on every path to a pane, whatever the caller cleaned
// before (service's TestDeliverCleansWhatTheInboxHolds).
func (d *Deliverer) Deliver(ctx context.Context, pane string, id message.ID, text string) Result {
	start := d.Clock.Now()
	run := &run{d: d, pane: pane, id: id, typed: message.Format(id, text), start: start}
	run.want = squash(run.typed)
	run.res.ID = id
	if d.Opts.Resume {
		run.res.Reached = d.Opts.Earlier
	}
	err := run.deliver(ctx)
	if err != nil && ctx.Err() != nil {
		// Stopped by the caller: say how far it got, so that the message
		// is recorded as what it is (waiting, or typed into the box).
		err = &InterruptedError{Typed: run.mayBeInBox, Pressed: run.res.Presses > 0, Cause: context.Cause(ctx)}
		run.leftInBox = run.mayBeInBox
	}
	run.res.Err = err
	run.res.Elapsed = d.Clock.Now().Sub(start)
	switch {
	case err == nil && run.queued:
		run.res.Verdict = Queued
	case err == nil:
		run.res.Verdict = Submitted
	case errors.Is(err, ErrNotReady):
		run.res.Verdict = NotReady
	case errors.Is(err, ErrUnknown):
		run.res.Verdict = VerdictUnknown
	case errors.Is(err, ErrUnconfirmed) && run.leftInBox:
		run.res.Verdict = Typed
	case run.res.Typings > 0 && run.res.Presses == 0 && run.res.Reached == Unseen:
		// This run's paste call failed (typeText): the server may have
		// run it and lost only its answer, so the text may be in the box
		// or land there when the server goes on. Not failed: unknown, and
		// never pasted again; a deliver looks once more and submits it if
		// the box then holds exactly it.
		run.res.Verdict = VerdictUnknown
		run.res.Err = fmt.Errorf("%w: after the paste: %w; %w", ErrUnconfirmed, err, ErrUnknown)
	case run.res.Presses > 0:
		// Our text was in the box when we pressed: whatever went wrong
		// after (the pane or its server went away, tmux failed), the
		// agent may have taken it first.
		run.res.Verdict = VerdictUnknown
		run.res.Err = fmt.Errorf("%w: after the press: %w; %w", ErrUnconfirmed, err, ErrUnknown)
	default:
		run.res.Verdict = Failed
	}
	return run.res
}

type run struct {
	d     *Deliverer
	start time.Time
	next  []string // a screen already captured that the next read uses
	// nextIsOld: next was read before the pane's lock was taken (with the
	// pane); lastWasOld: the last read used such a screen.
	nextIsOld, lastWasOld bool
	pane                  string
	id                    message.ID
	typed                 string // what we paste: "<id>: <text>"
	want                  string // typed, squashed: what the box must hold, compared
	// label is what an agent that folds long pastes showed in the box for
	// ours ("[Pasted text #1 +11 lines]"): no id, so compared as seen.
	label     string
	leftInBox bool     // we gave up with our text still in the box
	queued    bool     // confirmed while the agent showed it queued
	shell     bool     // forced into a shell prompt: its command line is the box
	lastLines []string // the screen as last read
	// fresh is the last screen captured from the pane and when (left for
	// the next holder of its lock); prior is what the last holder left.
	fresh, prior *lock.Look
	// leaveNext: the next capture also leaves any mode the pane is in.
	leaveNext bool
	// mayBeInBox: our text was pasted (or found in the box) and may still
	// be there; an interrupted delivery reports it typed.
	mayBeInBox bool
	// leavePace: this delivery waits for its agent, counted in the Pace.
	leavePace func()
	// watch: looks say the pane's foreground command too (Reprofile);
	// foreground is what the last such look said ("": none has), and
	// known the command the reader is for.
	watch             bool
	foreground, known string
	res               Result
}

func (r *run) deliver(ctx context.Context) error {
	unlock, err := r.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	defer r.doneWaiting()
	r.gather(1)
	defer r.gather(-1)
	_, canLook := r.d.Term.(foregroundLooker)
	r.watch, r.known = canLook && r.d.Opts.Reprofile != nil, r.d.Opts.Foreground

	_, canLeave := r.d.Term.(leaveCapturer)
	if r.d.Opts.Screen != nil && r.res.Phases.Lock < lockAtOnce {
		r.next, r.nextIsOld = r.d.Opts.Screen, true
	} else if p := r.prior; p != nil && canLeave && !r.d.Opts.Resume && fresh(r.d.Clock.Now().Sub(p.At)) {
		// The holder we waited for looked a moment ago: its look is the
		// first one, and the next, fresh one leaves any mode too.
		r.next, r.nextIsOld, r.leaveNext = p.Screen, true, true
	} else if canLeave {
		if err := r.term(r.capture(ctx, true)); err != nil {
			return err
		}
		r.next = r.fresh.Screen
	} else if err := r.term(r.d.Term.LeaveMode(ctx, r.pane)); err != nil {
		return err
	}
	typeIt := true
	if r.d.Opts.Resume {
		done, inBox, err := r.resume(ctx)
		r.doneWaiting()
		if err != nil || done {
			return err
		}
		typeIt = !inBox
	}
	if typeIt {
		done := r.phase(&r.res.Phases.Ready)
		err := r.waitReady(ctx)
		r.doneWaiting()
		r.watch = false // once typing, the program is the one that took it
		done()
		switch {
		case errors.Is(err, errOursInBox):
			typeIt = false
		case err != nil:
			return err
		}
	}
	if typeIt {
		// Pasted once only: a paste that does not show may still be on
		// its way (a frozen or slow agent), so pasting again could double
		// it. typeText reports what it saw instead.
		done := r.phase(&r.res.Phases.Type)
		err := r.typeText(ctx)
		done()
		if err != nil {
			return err
		}
	}
	for presses := r.d.Opts.Retries + 1; ; {
		if err := r.pressSubmit(ctx); err != nil {
			return err
		}
		presses--
		done := r.phase(&r.res.Phases.Confirm)
		inBox, err := r.confirm(ctx, presses == 0)
		done()
		if err != nil || !inBox {
			return err
		}
		if presses == 0 {
			r.leftInBox = true
			return fmt.Errorf("%w: the text is still in the input box after %d submit presses", ErrUnconfirmed, r.res.Presses)
		}
		// Still in the box, exactly as typed: the press was lost (or taken
		// as a newline). Press again; never type again.
	}
}

// lock takes the pane's lock. Waiting for it counts against the ready
// timeout: a sender that cannot get its turn in time gives up as one
// that found the agent busy would (NotReady, State Locked), naming the
// holder, instead of queueing behind every sender before it.
func (r *run) lock(ctx context.Context) (unlock func(), err error) {
	done := r.phase(&r.res.Phases.Lock)
	defer done()
	lctx, cancel := context.WithTimeout(ctx, r.d.Opts.ReadyTimeout)
	defer cancel()
	if hl, ok := r.d.Locks.(handoffLocker); ok {
		var release func(*lock.Look)
		r.prior, release, err = hl.PaneHandoff(lctx, r.d.Socket, r.pane)
		if err == nil {
			unlock = func() { release(r.fresh) }
		}
	} else {
		unlock, err = r.d.Locks.Pane(lctx, r.d.Socket, r.pane)
	}
	if err != nil && ctx.Err() == nil {
		// Nothing is typed without the lock: whatever kept it from us (its
		// holder past the ready timeout, or a lock directory that is not
		// ours and private), the message is as untouched as one whose
		// agent was busy, and is kept for a later try, never failed.
		r.res.LastSeen = Locked
		return nil, &NotReadyError{State: Locked, Detail: err.Error(), Waited: r.d.Clock.Now().Sub(r.start)}
	}
	return unlock, err
}

// resume looks for traces of an earlier attempt: done when the agent has
// it (a receipt, or the id above the box), inBox when exactly our text
// waits in the box. With no trace, it is typed again only if it was never
// pressed and no paste of it may still arrive.
func (r *run) resume(ctx context.Context) (done, inBox bool, err error) {
	if r.receipt() {
		return true, false, nil
	}
	start := r.start
	for {
		rd, lines, err := r.read(ctx)
		if err != nil {
			return false, false, err
		}
		waited := r.d.Clock.Now().Sub(start)
		if rd.State == Dialog {
			// A dialog hides the box, and may hide the transcript: what it
			// covers decides, so wait for it to close (typing and pressing
			// nothing).
			if waited >= r.d.Opts.ReadyTimeout {
				return false, false, &NotReadyError{State: Dialog, Detail: rd.Detail, Waited: waited}
			}
			if err := r.waitMore(ctx, waited); err != nil {
				return false, false, err
			}
			continue
		}
		switch r.holds(rd) {
		case holdsOurs:
			r.mayBeInBox = true
			return false, true, nil
		case holdsNone:
			if containsID(above(lines, rd), r.id) {
				return true, false, nil
			}
			if rd.BoxRow < 0 && containsID(lines, r.id) {
				// Our earlier text shows where no box is recognised: it may
				// wait unsubmitted on a prompt line the profile does not
				// know. Typing it again would double it; pressing would
				// submit whatever else is there.
				r.leftInBox = true
				return false, false, fmt.Errorf("%w: %w; an earlier attempt's text shows there, so it is not typed again", ErrUnconfirmed, ErrTextOffBox)
			}
			// The whole scrollback, once: the agent may have printed a lot
			// since (never in a poll: that can take a while).
			if seen, err := r.idInHistory(ctx, fullHistory); err != nil || seen {
				return seen, false, err
			}
			if !r.d.Opts.Earlier.mayArrive() {
				// Never pressed, so never submitted; and no paste of it is
				// on its way (it never went out, or was cleared).
				return false, false, nil
			}
			return false, false, unknown("an earlier attempt %s it, and neither a receipt nor the pane (%s) shows %s; not typed again", r.d.Opts.Earlier, rd.State, r.id)
		}
		// Our text with someone else's: never submitted. Wait for the box
		// to hold exactly ours, or for the person to submit or clear it.
		if waited >= r.d.Opts.ReadyTimeout {
			return false, false, &NotReadyError{State: Draft, Waited: waited,
				Detail: "the input box holds our earlier text together with someone else's; not submitted, left as it is"}
		}
		if err := r.waitMore(ctx, waited); err != nil {
			return false, false, err
		}
	}
}

// phase starts timing one phase; the returned func adds the time to *d.
func (r *run) phase(d *time.Duration) func() {
	start := r.d.Clock.Now()
	return func() { *d += r.d.Clock.Now().Sub(start) }
}

// errOursInBox: while resuming, the box turned out to hold our text.
var errOursInBox = errors.New("our text is in the box")

// waitReady polls until the box is empty and on screen. Its time is
// counted from the start of the delivery: waiting for the lock, and for
// a dialog over an earlier attempt, used up part of it.
func (r *run) waitReady(ctx context.Context) error {
	start := r.start
	var last State
	var lastTold time.Time
	var steady *Reading // the previous look, when it said the box could be typed into
	var steadyAt time.Time
	for {
		lookedAt := r.d.Clock.Now() // about when tmux takes the look
		rd, lines, err := r.read(ctx)
		if err != nil {
			return err
		}
		if err := r.foregroundChanged(lines); err != nil {
			return err
		}
		switch act := r.d.Opts.Decide(rd); act {
		case ActType, ActQueue:
			// Two looks in a row must agree before anything is typed: a
			// frame the agent is still drawing (a dialog half over the old
			// box) can look like an empty box for a moment.
			if steady != nil && r.d.Opts.Decide(*steady) == act && sameBox(*steady, rd) {
				return nil
			}
			// The gap runs from this look's start: the next look's own
			// round trip counts towards it.
			steady, steadyAt = &rd, lookedAt
			if r.lastWasOld {
				continue // read before the lock: the next look is later enough
			}
			if wait := steadyGap - r.d.Clock.Now().Sub(steadyAt); wait > 0 {
				if err := r.sleep(ctx, wait); err != nil {
					return err
				}
			}
			continue
		case ActRefuse:
			return &NotReadyError{State: rd.State, Shell: true, Detail: "the pane shows a shell prompt: the agent has exited, and a message would run as a command"}
		}
		if r.d.Opts.Resume && r.holds(rd) == holdsOurs {
			// An earlier attempt's paste showed up late: it is ours.
			r.mayBeInBox = true
			return errOursInBox
		}
		now := r.d.Clock.Now()
		waited := now.Sub(start)
		if waited >= r.d.Opts.ReadyTimeout {
			return &NotReadyError{State: rd.State, Detail: rd.Detail, Waited: waited}
		}
		if r.d.Opts.OnWait != nil && (rd.State != last || now.Sub(lastTold) >= time.Second) {
			r.d.Opts.OnWait(Wait{State: rd.State, Detail: rd.Detail, Waited: waited})
			lastTold = now
		}
		last = rd.State
		steady = nil
		if err := r.waitMore(ctx, waited); err != nil {
			return err
		}
	}
}

// foregroundChanged ends the wait when the last look found another
// program in the pane's foreground, which another profile reads
// (Options.Reprofile): the reader chosen for the first would go on
// reading the new one's screen as the first's (a shell's: never ready).
func (r *run) foregroundChanged(screen []string) error {
	now := r.foreground
	if !r.watch || now == "" || now == r.known {
		return nil
	}
	was := r.known
	r.known = now
	if !r.d.Opts.Reprofile(now, screen) {
		return nil
	}
	return &ForegroundChangedError{From: was, To: now, Screen: screen, Waited: r.d.Clock.Now().Sub(r.start)}
}

// steadyGap is the least time between the starts of the two looks that
// must agree before typing: a tmux round trip (2 to 3 ms) usually covers
// it, so the second look follows the first at once.
const steadyGap = 2 * time.Millisecond

// sameBox reports whether two looks show the same box in the same state.
func sameBox(a, b Reading) bool {
	return a.State == b.State && a.Box == b.Box && a.BoxRow == b.BoxRow && a.Shell == b.Shell
}

// typeText pastes our text, once, and waits until the box holds exactly
// it. A paste that never shows is not pasted again: it may still be on its
// way (a frozen agent), so the verdict is VerdictUnknown.
func (r *run) typeText(ctx context.Context) error {
	if err := r.reach(ctx, Pasted); err != nil {
		return err
	}
	r.res.Typings++
	// From here on the text may be in the box. The paste itself is never
	// cut short by the caller: half of it (a loaded buffer, a paste
	// without its end) would leave a state nobody can tell apart.
	r.mayBeInBox = true
	// The last look no longer shows the pane as it is: none is left for
	// the next holder until a look after the paste.
	r.fresh = nil
	if err := r.d.Term.Paste(context.WithoutCancel(ctx), r.pane, r.typed); errors.Is(err, tmux.ErrPaneDead) {
		// The server found the agent exited and pasted nothing (a pane
		// kept by remain-on-exit): not typed, and not ready.
		r.mayBeInBox = false
		r.res.Typings--
		r.res.LastSeen = Gone
		return &NotReadyError{State: Gone, Detail: err.Error(), Waited: r.d.Clock.Now().Sub(r.start)}
	} else if err := r.term(err); err != nil {
		if !errors.Is(err, ErrPaneGone) {
			// The server may have run the paste and lost only its answer
			// (one stopped for a while, a call that timed out): the text
			// may land when it goes on, so it is never pasted again.
			r.res.Reached = Unseen
		}
		return err
	}
	deadline := r.d.Clock.Now().Add(r.d.Opts.ConfirmTimeout)
	wait := backoff{max: r.d.Opts.Poll}
	lookedAgain := false
	for {
		rd, _, err := r.read(ctx)
		if err != nil {
			return err
		}
		holds := r.holds(rd)
		if r.d.Opts.Settle == 0 {
			// No pause before submit: this look is the last one.
			r.next = r.lastLines
		}
		switch {
		case holds == holdsOurs:
			return nil
		case rd.State == Dialog:
			// The text most likely waits in the box under it: typed, for a
			// resumed delivery to submit once the dialog is gone.
			r.leftInBox = true
			return fmt.Errorf("%w: a dialog opened while typing (%s); nothing was pressed, and the text waits under it", ErrUnconfirmed, rd.Detail)
		case holds == holdsNone && isFoldLabel(rd.Box):
			// The agent's stand-in for a long paste: ours, since the box
			// was empty right before and we hold the lock.
			r.label = rd.Box
			return nil
		case !r.d.Clock.Now().Before(deadline) && !lookedAgain:
			// What is decided at the deadline rests on two looks.
			lookedAgain = true
			r.next = nil
			if err := r.sleep(ctx, lookAgainAfter); err != nil {
				return err
			}
			continue
		case !r.d.Clock.Now().Before(deadline):
			r.next = nil
			// Until now the paste may have been arriving in pieces.
			if holds != holdsMixed {
				r.res.Reached = Unseen // it may still arrive
			}
			switch {
			case holds == holdsMixed:
				r.leftInBox = true
				return fmt.Errorf("%w: someone typed into the input box along with our text (it holds %q); nothing was pressed, and the text is left as it is", ErrUnconfirmed, clip(rd.Box))
			case rd.Box != "":
				return unknown("after pasting, the input box holds other text (%q); nothing was pressed", clip(rd.Box))
			case containsID(r.lastLines, r.id):
				// On screen, but not where the reader sees the box: typing
				// again would double it. Leave it to a person.
				r.leftInBox = true
				return fmt.Errorf("%w: %w; not typing it again", ErrUnconfirmed, ErrTextOffBox)
			}
			return unknown("the pasted text never appeared in the input box within %s (the agent may be frozen or slow, or its box taller than the screen); not pasting it again, since it may still arrive", r.d.Opts.ConfirmTimeout)
		}
		r.next = nil // a later look, not this one
		if err := r.sleep(ctx, wait.next()); err != nil {
			return err
		}
	}
}

// pressSubmit settles, takes a last look and presses submit, only if the
// box holds exactly our text and nothing has opened over it.
func (r *run) pressSubmit(ctx context.Context) error {
	done := r.phase(&r.res.Phases.Settle)
	if err := r.sleep(ctx, r.d.Opts.Settle); err != nil {
		done()
		return err
	}
	rd, _, err := r.read(ctx)
	done()
	if err != nil {
		return err
	}
	holds := r.holds(rd)
	if holds != holdsOurs && rd.State != Dialog {
		// Not pressing is decided on two looks: one frame can be torn.
		// Never after a dialog, though: a frame half drawn over it can
		// show the old box with our text, and the press would answer it.
		if rd, err = r.lookAgain(ctx); err != nil {
			return err
		}
		holds = r.holds(rd)
	}
	switch holds {
	case holdsMixed:
		// A person typed into the box while we settled: submitting would
		// send their half-typed text with ours.
		r.leftInBox = true
		return fmt.Errorf("%w: someone typed into the input box along with our text (it holds %q); not submitted, and the text is left as it is", ErrUnconfirmed, clip(rd.Box))
	case holdsNone:
		if r.res.Presses > 0 && rd.State != Dialog {
			// Pressed before, and now our text has left the box: the
			// earlier press was taken, only late to show (a loaded
			// machine, a slow redraw). Confirm again instead of pressing.
			return nil
		}
		if rd.State == Dialog && r.res.Presses == 0 {
			// It opened over our text, which waits in the box under it.
			r.leftInBox = true
			return fmt.Errorf("%w: before submit a dialog opened over our text (%s); nothing was pressed, and the text waits under it", ErrUnconfirmed, rd.Detail)
		}
		return fmt.Errorf("%w: before submit the screen showed %s (%s), not our text; nothing was pressed", ErrUnconfirmed, rd.State, rd.Detail)
	}
	if err := r.reach(ctx, Pressed); err != nil {
		r.leftInBox = true
		return fmt.Errorf("%w: %w", ErrUnconfirmed, err)
	}
	r.res.Presses++
	// Like a paste, a press once decided on is made whole.
	r.fresh = nil // as for a paste
	return r.term(r.d.Term.SendBytes(context.WithoutCancel(ctx), r.pane, '\r'))
}

// lookAgainAfter spaces the two looks a delivery that stops without
// pressing is decided on. A capture can catch a frame half drawn: the
// agent writes a redraw in pieces, and under load tmux may take a look
// between them. A redraw finishes within milliseconds.
const lookAgainAfter = 20 * time.Millisecond

// lookAgain takes a fresh look, lookAgainAfter after the last one.
func (r *run) lookAgain(ctx context.Context) (Reading, error) {
	if err := r.sleep(ctx, lookAgainAfter); err != nil {
		return Reading{}, err
	}
	r.next = nil // a new capture, never the last one kept
	rd, _, err := r.read(ctx)
	return rd, err
}

// reach tells Opts.OnStep of a step before it is first taken.
func (r *run) reach(ctx context.Context, s Step) error {
	if !s.Further(r.res.Reached) {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err // not taken, so not recorded either
	}
	if r.d.Opts.OnStep != nil {
		r.gather(-1) // a record, written to disk: not a call
		err := r.d.Opts.OnStep(s)
		r.gather(1)
		if err != nil {
			return fmt.Errorf("not %s: recording that it would be failed: %w", s, err)
		}
	}
	r.res.Reached = s
	return nil
}

// lookBackEvery spaces the scrollback captures of a confirm (each a few ms).
const lookBackEvery = 100 * time.Millisecond

// confirm polls after a press until the agent has our text or the deadline
// passes; inBox when our text is still in the box, exactly as typed. Unless
// this is the last press, text that sits in the box for Repress returns
// early, to press again.
//
// Text that has left the box since our press was taken by it, even when
// its id never shows (a long text scrolls it past the history limit), so
// it is confirmed at the deadline, never typed again.
func (r *run) confirm(ctx context.Context, last bool) (inBox bool, err error) {
	pressed := r.d.Clock.Now()
	deadline := pressed.Add(r.d.Opts.ConfirmTimeout)
	wait := backoff{max: r.d.Opts.Poll}
	var nextLook time.Time
	mixedBefore := false // the previous look showed other text with ours
	for {
		rd, lines, err := r.read(ctx)
		if err != nil {
			return false, err
		}
		holds := r.holds(rd)
		if holds == holdsMixed && !mixedBefore {
			// Decided on two looks: one frame can be torn (seen in CI:
			// Codex's box showed the first 24 characters of our text
			// for one look right after a press that was taken).
			mixedBefore = true
			if err := r.sleep(ctx, lookAgainAfter); err != nil {
				return false, err
			}
			continue
		}
		mixedBefore = holds == holdsMixed
		if holds == holdsMixed {
			r.leftInBox = true
			return false, fmt.Errorf("%w: after %d submit presses, someone typed into the input box along with our text (it holds %q); not pressed again, and the text is left as it is", ErrUnconfirmed, r.res.Presses, clip(rd.Box))
		}
		gone := holds == holdsNone
		if gone && (containsID(above(lines, rd), r.id) || r.receipt()) {
			// A receipt comes when the agent really starts on it; before
			// that, a queue on screen means it waits behind the current turn.
			r.queued = rd.Queued && !r.receipt()
			return false, nil
		}
		if gone && rd.Box == "" && rd.State == Ready && !r.d.Clock.Now().Before(nextLook) {
			// The box emptied but the id is not on the screen: a long text
			// scrolls it off the top. Look back now (and every so often)
			// rather than only at the deadline.
			nextLook = r.d.Clock.Now().Add(lookBackEvery)
			if seen, err := r.idInHistory(ctx, r.historyFor()); err != nil || seen {
				return false, err
			}
		}
		now := r.d.Clock.Now()
		if !gone && !last && r.d.Opts.Repress > 0 && now.Sub(pressed) >= r.d.Opts.Repress {
			return true, nil
		}
		if !now.Before(deadline) {
			switch {
			case !gone:
				return true, nil
			case rd.State == Dialog:
				// The agent may have taken it and asked for permission; we
				// cannot see and must not press anything.
				return false, unknown("after the press a dialog is open (%s) and %s is not on screen; nothing more is pressed or typed", rd.Detail, r.id)
			case rd.State == Unknown:
				if seen, err := r.idInHistory(ctx, r.historyFor()); err != nil || seen {
					return false, err
				}
				return false, unknown("after the press no input box is on screen (%s) and %s is not on it; not typed again", rd.Detail, r.id)
			}
			// Ready, busy or a new draft: our text left the box after our
			// press, so the press took it.
			return false, nil
		}
		if err := r.sleep(ctx, wait.next()); err != nil {
			return false, err
		}
	}
}

// shellLine reads a shell prompt's command line as the input box, for
// --force: what follows the prompt on the last non-blank row.
func shellLine(lines []string, rd Reading) Reading {
	i := len(lines) - 1
	for i >= 0 && strings.TrimSpace(lines[i]) == "" {
		i--
	}
	if i < 0 {
		return rd
	}
	line := lines[i]
	cut := -1
	for _, p := range []string{"$ ", "# ", "% "} {
		if j := strings.LastIndex(line, p); j > cut {
			cut = j + len(p)
		}
	}
	rd.BoxRow = i
	if cut < 0 {
		rd.Box = "" // "$" at the very end: an empty command line
	} else {
		rd.Box = strings.TrimSpace(line[cut:])
	}
	if rd.Box == "" {
		rd.State = Ready
	} else {
		rd.State = Draft
	}
	return rd
}

// receipt reports whether the agent recorded receiving our id itself.
func (r *run) receipt() bool {
	return r.d.Opts.Receipt != nil && r.d.Opts.Receipt(r.id)
}

// holding is what the input box holds, as far as our text goes.
type holding int

const (
	holdsNone  holding = iota // not our text (empty, someone else's, or no box)
	holdsOurs                 // exactly our text, or the label the agent folded it into
	holdsMixed                // our text together with someone else's
)

// holds compares the box with our text. Exactly means: the same
// characters, ignoring the whitespace and invisible marks that wrapping
// and drawing add or drop.
func (r *run) holds(rd Reading) holding {
	if rd.State == Dialog || rd.Box == "" {
		return holdsNone
	}
	if (r.label != "" && rd.Box == r.label) || squash(rd.Box) == r.want {
		return holdsOurs
	}
	if strings.Contains(rd.Box, string(r.id)) || (r.label != "" && strings.Contains(rd.Box, r.label)) {
		return holdsMixed
	}
	return holdsNone
}

// squash drops whitespace (a box wraps and indents its lines), and the
// combining marks and format characters a terminal may keep or drop.
func squash(s string) string {
	return strings.Map(func(c rune) rune {
		if unicode.IsSpace(c) || unicode.In(c, unicode.Mn, unicode.Me, unicode.Cf) {
			return -1
		}
		return c
	}, s)
}

// foldLabelRe is how agents show a long paste in the box, one bracketed
// label: "[Pasted text #1 +11 lines]" (Claude Code), "[Pasted Content 1200
// chars]" (Codex, Qwen), "[Pasted Text: 12 lines]" (Gemini).
// Its label is at most 80 characters, counted apart from the regexp (a
// counted repetition compiles to that many copies at every start).
var foldLabelRe = regexp.MustCompile(`^\[[^\[\]\n]+\]$`)

func isFoldLabel(box string) bool {
	box = strings.TrimSpace(box)
	return utf8.RuneCountInString(box) <= 82 && foldLabelRe.MatchString(box)
}

// clip keeps a box's text short in an error.
func clip(s string) string {
	if r := []rune(s); len(r) > 80 {
		return string(r[:40]) + "…" + string(r[len(r)-40:])
	}
	return s
}

// fullHistory asks a capture for the whole scrollback.
const fullHistory = 1 << 30

// historyFor is how much scrollback reaches the start of our (possibly
// long) text, for the looks a confirm takes while it polls.
func (r *run) historyFor() int {
	return min(200+strings.Count(r.typed, "\n")+len(r.typed)/40, 5000)
}

// idInHistory captures history lines of scrollback and looks for the id
// above the box.
func (r *run) idInHistory(ctx context.Context, history int) (bool, error) {
	lines, err := r.d.Term.Capture(ctx, r.pane, history)
	if err := r.term(err); err != nil {
		return false, err
	}
	return containsID(above(lines, r.d.Opts.Reader.Read(lines)), r.id), nil
}

// above is the transcript: the lines above the box, or above a dialog
// the profile places (Reading.DialogRow). With neither on screen, nothing
// tells the transcript from a prompt line that still holds our text (a
// program whose prompt the profile does not know, an error printed under
// the prompt), so none of it is proof: the id there may be ours,
// unsubmitted.
func above(lines []string, rd Reading) []string {
	switch {
	case rd.BoxRow >= 0 && rd.BoxRow <= len(lines):
		return lines[:rd.BoxRow]
	case rd.State == Dialog && rd.DialogRow > 0 && rd.DialogRow <= len(lines):
		return lines[:rd.DialogRow]
	}
	return nil
}

func containsID(lines []string, id message.ID) bool {
	for _, l := range lines {
		if strings.Contains(l, string(id)) {
			return true
		}
	}
	return false
}

func (r *run) read(ctx context.Context) (Reading, []string, error) {
	lines := r.next
	r.lastWasOld, r.nextIsOld = r.nextIsOld && lines != nil, false
	r.next = nil
	if lines == nil {
		if err := r.term(r.capture(ctx, r.leaveNext)); err != nil {
			return Reading{}, nil, err
		}
		r.leaveNext = false
		lines = r.fresh.Screen
	}
	r.lastLines = lines
	rd := r.d.Opts.Reader.Read(lines)
	if r.d.Opts.Force && (rd.Shell || r.shell) {
		// Once a shell, read as one until the end: the typed line no
		// longer ends in the prompt a reader recognises.
		r.shell = true
		rd = shellLine(lines, rd)
	}
	r.res.LastSeen = rd.State
	return rd, lines, nil
}

// capture takes a fresh look at the pane's screen (r.fresh), leaving any
// mode first when leave is set and the terminal can in the same call.
func (r *run) capture(ctx context.Context, leave bool) error {
	at := r.d.Clock.Now()
	var lines []string
	var err error
	if fl, ok := r.d.Term.(foregroundLooker); ok && r.watch {
		lines, r.foreground, err = fl.LookForeground(ctx, r.pane, leave)
	} else if lc, ok := r.d.Term.(leaveCapturer); ok && leave {
		lines, err = lc.LeaveModeCapture(ctx, r.pane)
	} else {
		lines, err = r.d.Term.Capture(ctx, r.pane, 0)
	}
	if err != nil {
		return err
	}
	r.fresh = &lock.Look{At: at, Screen: lines}
	return nil
}

func (r *run) sleep(ctx context.Context, d time.Duration) error {
	r.gather(-1)
	defer r.gather(1)
	return r.d.Clock.Sleep(ctx, d)
}

// gather tells a Terminal that gathers calls (gatherer) that this
// delivery is at work on it (+1) or away (-1).
func (r *run) gather(delta int) {
	if g, ok := r.d.Term.(gatherer); ok {
		g.Gather(delta)
	}
}

// waitMore sleeps before the next look of a delivery whose agent is not
// ready after waited: a poll, or longer while many deliveries wait (see
// Pace), and never past the ready timeout (the last look comes then).
func (r *run) waitMore(ctx context.Context, waited time.Duration) error {
	if r.leavePace == nil {
		r.leavePace = r.d.Opts.Pace.join()
	}
	return r.sleep(ctx, min(r.d.Opts.Pace.every(r.d.Opts.Poll), r.d.Opts.ReadyTimeout-waited))
}

// doneWaiting ends this delivery's count among the waiting (waitMore).
func (r *run) doneWaiting() {
	if r.leavePace != nil {
		r.leavePace()
		r.leavePace = nil
	}
}

// term turns a vanished pane into ErrPaneGone and keeps other tmux errors.
// A pane that went before anything of ours reached it (its session ended,
// a person moved it, the tmux server stopped or was restarted at the same
// socket) is
// an agent not ready, not a failure: nothing was typed, so the message can
// wait for its agent to be found again.
func (r *run) term(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, tmux.ErrPaneNotFound) || errors.Is(err, tmux.ErrSessionNotFound) || errors.Is(err, tmux.ErrNoServer) {
		if !r.mayBeInBox && r.res.Typings == 0 && r.res.Presses == 0 && !r.res.Reached.Further(NotReached) {
			r.res.LastSeen = Gone
			return &NotReadyError{State: Gone, Detail: err.Error(), Waited: r.d.Clock.Now().Sub(r.start)}
		}
		return fmt.Errorf("%w: %s (%v)", ErrPaneGone, r.pane, err)
	}
	return err
}

// backoff polls fast right after an action, when the agent's redraw is due
// within a millisecond or two, and at the poll interval after that.
type backoff struct {
	next_, max time.Duration
}

func (b *backoff) next() time.Duration {
	if b.next_ == 0 {
		b.next_ = 500 * time.Microsecond
	}
	d := min(b.next_, b.max)
	b.next_ = min(2*b.next_, b.max)
	return d
}
