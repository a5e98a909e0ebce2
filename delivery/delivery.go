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
//  5. after a short settle, presses submit in a separate command;
//  6. confirms: submitted only when the box no longer holds the text and the
//     id shows above it. Text still in the box gets another submit press;
//     text provably gone without trace is typed again.
package delivery

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentmsg/agentmsg/message"
	"github.com/agentmsg/agentmsg/tmux"
)

// Terminal is the part of tmux a delivery uses. The pane id is resolved by
// the caller and used for every command.
type Terminal interface {
	LeaveMode(ctx context.Context, pane string) error
	Capture(ctx context.Context, pane string, history int) ([]string, error)
	Paste(ctx context.Context, pane, buffer, text string) error
	SendBytes(ctx context.Context, pane string, b ...byte) error
}

// Locker gives exclusive use of one pane.
type Locker interface {
	Pane(ctx context.Context, socket, pane string) (unlock func(), err error)
}

// Clock is time, replaceable in tests.
type Clock interface {
	Now() time.Time
	// Sleep waits d or until ctx ends.
	Sleep(ctx context.Context, d time.Duration) error
}

// Options tune a delivery. The zero value is not useful: start from
// DefaultOptions.
type Options struct {
	ReadyTimeout   time.Duration // wait this long for an empty input box
	ConfirmTimeout time.Duration // wait this long for proof after each submit
	Retries        int           // extra submit presses (or retypes) allowed
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
	// have typed or submitted already: the id above the box means it was
	// submitted (nothing is typed again); the id in the box means it was
	// typed (it is only submitted).
	Resume bool
	// OnWait, when set, is told what the delivery is waiting for: once when
	// the state changes and about once a second while it stays.
	OnWait func(Wait)
}

// Wait describes a delivery that cannot type yet.
type Wait struct {
	State  State
	Detail string
	Waited time.Duration
}

// DefaultOptions are the seed's DeliveryConfig values, with a fast poll.
func DefaultOptions() Options {
	return Options{
		ReadyTimeout:   30 * time.Second,
		ConfirmTimeout: 5 * time.Second,
		Retries:        2,
		Settle:         30 * time.Millisecond,
		Repress:        500 * time.Millisecond,
		Poll:           10 * time.Millisecond,
		Reader:         Generic{},
	}
}

// Verdict is the outcome of one delivery.
type Verdict string

const (
	Submitted Verdict = "submitted" // the agent took the message
	Queued    Verdict = "queued"    // the agent took it while busy and runs it next
	Typed     Verdict = "typed"     // left in the box, submission not confirmed
	NotReady  Verdict = "not_ready" // never typed: busy, dialog or draft the whole time
	Failed    Verdict = "failed"    // tmux failed or the pane went away
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

// Deliverer runs deliveries.
type Deliverer struct {
	Term   Terminal
	Locks  Locker
	Clock  Clock
	Socket string // the server's socket, half of the lock key
	Opts   Options
}

// Deliver types msg (already cleaned) with the given id into pane.
func (d *Deliverer) Deliver(ctx context.Context, pane string, id message.ID, text string) Result {
	start := d.Clock.Now()
	run := &run{d: d, pane: pane, id: id, typed: message.Format(id, text), start: start}
	run.res.ID = id
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
	case errors.Is(err, ErrUnconfirmed) && run.leftInBox:
		run.res.Verdict = Typed
	default:
		run.res.Verdict = Failed
	}
	return run.res
}

type run struct {
	d     *Deliverer
	start time.Time
	pane  string
	id    message.ID
	typed string // what we paste: "<id>: <text>"
	// boxAfterPaste is the box as first seen holding our text; an agent that
	// folds long pastes ("[Pasted text #1 +11 lines]") shows no id there.
	boxAfterPaste string
	leftInBox     bool     // we gave up with our text still in the box
	queued        bool     // confirmed while the agent showed it queued
	shell         bool     // --force into a shell prompt: its command line is the box
	lastLines     []string // the screen as last read
	// pressedSinceType: submit was pressed on the text now typed, so text
	// that has left the box since was taken by that press.
	pressedSinceType bool
	// mayBeInBox: our text was pasted (or found in the box) and may still
	// be there; an interrupted delivery reports it typed.
	mayBeInBox bool
	res        Result
}

func (r *run) deliver(ctx context.Context) error {
	unlock, err := r.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()

	if err := r.term(r.d.Term.LeaveMode(ctx, r.pane)); err != nil {
		return err
	}
	retype := true
	if r.d.Opts.Resume {
		done, inBox, err := r.resume(ctx)
		if err != nil || done {
			return err
		}
		retype = !inBox
	}
	if retype {
		done := r.phase(&r.res.Phases.Ready)
		err := r.waitReady(ctx)
		done()
		switch {
		case errors.Is(err, errOursInBox):
			retype = false
		case err != nil:
			return err
		}
	}
	retries := r.d.Opts.Retries
	for {
		if retype {
			done := r.phase(&r.res.Phases.Type)
			shown, err := r.typeText(ctx)
			done()
			if err != nil {
				return err
			}
			if !shown && containsID(r.lastLines, r.id) {
				// On screen, but not where the reader sees the box: typing
				// again would double it. Leave it to a person.
				r.leftInBox = true
				return fmt.Errorf("%w: the pasted text is on screen but not in an input box the agent's profile recognises; not typing it again (see agentmsg doctor)", ErrUnconfirmed)
			}
			if !shown {
				// The box stayed empty: the paste was lost, so typing
				// again cannot double it.
				if retries == 0 {
					return fmt.Errorf("%w: the pasted text never appeared in the input box", ErrUnconfirmed)
				}
				retries--
				continue
			}
		}
		if err := r.pressSubmit(ctx); err != nil {
			return err
		}
		done := r.phase(&r.res.Phases.Confirm)
		out, err := r.confirm(ctx, retries == 0)
		done()
		if err != nil {
			return err
		}
		switch {
		case out == confirmed:
			return nil
		case retries == 0 && out == stillInBox:
			r.leftInBox = true
			return fmt.Errorf("%w: the text is still in the input box after %d submit presses", ErrUnconfirmed, r.res.Presses)
		case retries == 0:
			return fmt.Errorf("%w: the text left the input box but %s never showed on screen", ErrUnconfirmed, r.id)
		}
		// Still in the box: press again. Gone without trace: the text is
		// provably not in the box, so typing it again cannot double it.
		retries--
		retype = out == vanished
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
	unlock, err = r.d.Locks.Pane(lctx, r.d.Socket, r.pane)
	if err != nil && ctx.Err() == nil && errors.Is(lctx.Err(), context.DeadlineExceeded) {
		r.res.LastSeen = Locked
		return nil, &NotReadyError{State: Locked, Detail: err.Error(), Waited: r.d.Clock.Now().Sub(r.start)}
	}
	return unlock, err
}

// resume looks for traces of an earlier attempt: done when the id is in
// the transcript, inBox when our text waits in the box.
func (r *run) resume(ctx context.Context) (done, inBox bool, err error) {
	// A dialog hides the box and may hide the transcript: what it covers
	// decides, so wait for it to close (typing and pressing nothing).
	rd, lines, err := r.waitNoDialog(ctx)
	if err != nil {
		return false, false, err
	}
	if strings.Contains(rd.Box, string(r.id)) {
		r.boxAfterPaste = rd.Box
		r.mayBeInBox = true
		return false, true, nil
	}
	if containsID(above(lines, rd), r.id) {
		return true, false, nil
	}
	seen, err := r.idInHistory(ctx)
	return seen, false, err
}

// phase starts timing one phase; the returned func adds the time to *d.
func (r *run) phase(d *time.Duration) func() {
	start := r.d.Clock.Now()
	return func() { *d += r.d.Clock.Now().Sub(start) }
}

// errOursInBox: while resuming, the box turned out to hold our text.
var errOursInBox = errors.New("our text is in the box")

// waitNoDialog reads the screen until no dialog is open, within the ready
// timeout (counted from the start of the delivery).
func (r *run) waitNoDialog(ctx context.Context) (Reading, []string, error) {
	var lastTold time.Time
	for {
		rd, lines, err := r.read(ctx)
		if err != nil || rd.State != Dialog {
			return rd, lines, err
		}
		now := r.d.Clock.Now()
		waited := now.Sub(r.start)
		if waited >= r.d.Opts.ReadyTimeout {
			return rd, lines, &NotReadyError{State: rd.State, Detail: rd.Detail, Waited: waited}
		}
		if r.d.Opts.OnWait != nil && now.Sub(lastTold) >= time.Second {
			r.d.Opts.OnWait(Wait{State: rd.State, Detail: rd.Detail, Waited: waited})
			lastTold = now
		}
		if err := r.sleep(ctx, r.d.Opts.Poll); err != nil {
			return rd, lines, err
		}
	}
}

// waitReady polls until the box is empty and on screen. Its time is
// counted from the start of the delivery: waiting for the lock, and for
// a dialog over an earlier attempt, used up part of it.
func (r *run) waitReady(ctx context.Context) error {
	start := r.start
	var last State
	var lastTold time.Time
	for {
		rd, _, err := r.read(ctx)
		if err != nil {
			return err
		}
		if rd.State == Ready || (rd.Shell && r.d.Opts.Force && rd.Box == "") {
			return nil
		}
		if rd.State == Busy && r.d.Opts.QueueWhileBusy && rd.BoxRow >= 0 && rd.Box == "" {
			return nil // it queues what is submitted now
		}
		if rd.Shell && !r.d.Opts.Force {
			return &NotReadyError{State: rd.State, Shell: true, Detail: "the pane shows a shell prompt: the agent has exited, and a message would run as a command (--force types it anyway)"}
		}
		if r.d.Opts.Resume && rd.State != Dialog && strings.Contains(rd.Box, string(r.id)) {
			// An earlier attempt's paste showed up late: it is ours.
			r.boxAfterPaste = rd.Box
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
		if err := r.sleep(ctx, r.d.Opts.Poll); err != nil {
			return err
		}
	}
}

// typeText pastes our text and waits until the box shows it. shown is
// false when the box stayed empty until the confirm timeout.
func (r *run) typeText(ctx context.Context) (shown bool, err error) {
	r.res.Typings++
	r.pressedSinceType = false
	// A broadcast types the same id into many panes at once: the pane keeps
	// the buffer names (and the control client's spool files) apart.
	buffer := fmt.Sprintf("agentmsg-%s-p%s-%d", r.id, strings.TrimPrefix(r.pane, "%"), r.res.Typings)
	// From here on the text may be in the box. The paste itself is never
	// cut short by the caller: half of it (a loaded buffer, a paste
	// without its end) would leave a state nobody can tell apart.
	r.mayBeInBox = true
	if err := r.term(r.d.Term.Paste(context.WithoutCancel(ctx), r.pane, buffer, r.typed)); err != nil {
		return false, err
	}
	deadline := r.d.Clock.Now().Add(r.d.Opts.ConfirmTimeout)
	wait := backoff{max: r.d.Opts.Poll}
	for {
		rd, _, err := r.read(ctx)
		if err != nil {
			return false, err
		}
		switch {
		case rd.State == Dialog:
			// The text most likely waits in the box under it: typed, for a
			// resumed delivery to submit once the dialog is gone.
			r.leftInBox = true
			return false, fmt.Errorf("%w: a dialog opened while typing (%s); nothing was pressed, and the text waits under it", ErrUnconfirmed, rd.Detail)
		case rd.Box != "" && (strings.Contains(rd.Box, string(r.id)) || !strings.Contains(rd.Box, "MSG_")):
			// Ours: it holds our id, or it is the agent's stand-in for a
			// long paste (the box was empty right before, and we hold the
			// lock).
			r.boxAfterPaste = rd.Box
			return true, nil
		case rd.Box != "":
			return false, fmt.Errorf("%w: after pasting, the input box holds other text; nothing was pressed", ErrUnconfirmed)
		case !r.d.Clock.Now().Before(deadline):
			return false, nil
		}
		if err := r.sleep(ctx, wait.next()); err != nil {
			return false, err
		}
	}
}

// pressSubmit settles, takes a last look and presses submit, only if the
// box still holds our text and nothing has opened over it.
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
	if !r.ours(rd) {
		if r.pressedSinceType && rd.State != Dialog {
			// Pressed before, and now our text has left the box: the
			// earlier press was taken, only late to show (a loaded
			// machine, a slow redraw). Confirm again instead of pressing.
			return nil
		}
		if rd.State == Dialog {
			// It opened over our text, which waits in the box under it.
			r.leftInBox = true
			return fmt.Errorf("%w: before submit a dialog opened over our text (%s); nothing was pressed, and the text waits under it", ErrUnconfirmed, rd.Detail)
		}
		return fmt.Errorf("%w: before submit the screen showed %s (%s), not our text; nothing was pressed", ErrUnconfirmed, rd.State, rd.Detail)
	}
	r.res.Presses++
	r.pressedSinceType = true
	// Like a paste, a press once decided on is made whole.
	return r.term(r.d.Term.SendBytes(context.WithoutCancel(ctx), r.pane, '\r'))
}

type outcome int

// lookBackEvery spaces the scrollback captures of a confirm (each a few ms).
const lookBackEvery = 100 * time.Millisecond

const (
	confirmed  outcome = iota // the id shows above an empty box
	stillInBox                // our text is still in the box at the deadline
	vanished                  // the box is empty but the id is nowhere on screen
)

// confirm polls after a press until the id shows above the box, or the
// deadline passes. Unless this is the last press, text that sits in the
// box for Repress returns stillInBox early, to press again.
func (r *run) confirm(ctx context.Context, last bool) (outcome, error) {
	pressed := r.d.Clock.Now()
	deadline := pressed.Add(r.d.Opts.ConfirmTimeout)
	wait := backoff{max: r.d.Opts.Poll}
	var nextLook time.Time
	for {
		rd, lines, err := r.read(ctx)
		if err != nil {
			return 0, err
		}
		stillOurs := r.ours(rd)
		if !stillOurs && (containsID(above(lines, rd), r.id) || r.receipt()) {
			// A receipt comes when the agent really starts on it; before
			// that, a queue on screen means it waits behind the current turn.
			r.queued = rd.Queued && !r.receipt()
			return confirmed, nil
		}
		if !stillOurs && rd.Box == "" && rd.State == Ready && !r.d.Clock.Now().Before(nextLook) {
			// The box emptied but the id is not on the screen: a long text
			// scrolls it off the top. Look back now (and every so often)
			// rather than only at the deadline.
			nextLook = r.d.Clock.Now().Add(lookBackEvery)
			if seen, err := r.idInHistory(ctx); err != nil || seen {
				return confirmed, err
			}
		}
		now := r.d.Clock.Now()
		if stillOurs && !last && r.d.Opts.Repress > 0 && now.Sub(pressed) >= r.d.Opts.Repress {
			return stillInBox, nil
		}
		if !now.Before(deadline) {
			switch {
			case stillOurs:
				return stillInBox, nil
			case rd.State == Dialog:
				// The agent may have taken it and asked for permission; we
				// cannot see and must not press anything.
				return 0, fmt.Errorf("%w: a dialog is open (%s) and %s is not on screen", ErrUnconfirmed, rd.Detail, r.id)
			case rd.State == Busy:
				// It most likely took the text and is working on it: typing
				// again would probably make a duplicate.
				return 0, fmt.Errorf("%w: the input box emptied and the agent is busy, but %s is not on screen; not typing it again", ErrUnconfirmed, r.id)
			}
			// One deep look into the scrollback before calling it lost: a
			// long text scrolls its id off the visible screen.
			seen, err := r.idInHistory(ctx)
			if err != nil || seen {
				return confirmed, err
			}
			return vanished, nil
		}
		if err := r.sleep(ctx, wait.next()); err != nil {
			return 0, err
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

// ours reports whether the box holds the text we typed.
func (r *run) ours(rd Reading) bool {
	if rd.State == Dialog || rd.Box == "" {
		return false
	}
	return strings.Contains(rd.Box, string(r.id)) || rd.Box == r.boxAfterPaste
}

// idInHistory captures enough scrollback to reach the start of our
// (possibly long) text and looks for the id above the box.
func (r *run) idInHistory(ctx context.Context) (bool, error) {
	history := 200 + strings.Count(r.typed, "\n") + len(r.typed)/40
	lines, err := r.d.Term.Capture(ctx, r.pane, min(history, 5000))
	if err := r.term(err); err != nil {
		return false, err
	}
	return containsID(above(lines, r.d.Opts.Reader.Read(lines)), r.id), nil
}

// above is the transcript: the lines above the box, or all of them when
// no box is on screen.
func above(lines []string, rd Reading) []string {
	if rd.BoxRow >= 0 && rd.BoxRow <= len(lines) {
		return lines[:rd.BoxRow]
	}
	return lines
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
	lines, err := r.d.Term.Capture(ctx, r.pane, 0)
	if err := r.term(err); err != nil {
		return Reading{}, nil, err
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

func (r *run) sleep(ctx context.Context, d time.Duration) error {
	return r.d.Clock.Sleep(ctx, d)
}

// term turns a vanished pane into ErrPaneGone and keeps other tmux errors.
func (r *run) term(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, tmux.ErrPaneNotFound) || errors.Is(err, tmux.ErrSessionNotFound) {
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
