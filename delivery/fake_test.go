package delivery

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/agentmsg/agentmsg/tmux"
)

// fakeClock is virtual time: Sleep returns at once and moves Now.
type fakeClock struct {
	now     time.Time
	onSleep func(d time.Duration) // called first by every Sleep
}

func (c *fakeClock) Now() time.Time { return c.now }
func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if c.onSleep != nil {
		c.onSleep(d)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	c.now = c.now.Add(d)
	return nil
}

type noLocks struct{ taken int }

func (l *noLocks) Pane(ctx context.Context, socket, pane string) (func(), error) {
	l.taken++
	return func() { l.taken-- }, ctx.Err()
}

// fakeAgent is a pane running a Claude-Code-like agent, drawn as text.
type fakeAgent struct {
	clock *fakeClock
	start time.Time

	mode       string        // "", "dialog", "busy": the state now
	busyUntil  time.Duration // busy until this much virtual time has passed
	inMode     bool          // copy mode eats pasted text and keys
	draft      string
	transcript []string
	foldOver   int // pastes longer than this show as a placeholder
	pastes     int

	dropEnters    int             // ignore this many submit presses
	dropPastes    int             // lose this many pastes
	silent        bool            // take submissions without echoing them
	dialogOnPaste bool            // a dialog opens right after text is pasted
	dialogUntil   time.Duration   // a dialog open now closes at this time
	onCall        func(op string) // called first by every tmux call: leave, capture, paste, press
	goneAfter     int             // the pane vanishes after this many tmux calls (0: never)
	failCapture   error           // every capture fails with this
	echoDelay     time.Duration   // the transcript shows a submission this late
	slowRedraw    time.Duration   // the box keeps showing submitted text this long
	staleDraft    string          // what the box still shows until redrawAt
	redrawAt      time.Duration
	pendingEcho   []echo
	outputLines   int  // lines the agent prints after each submission
	dialogOnPress bool // a dialog opens right after a submission
	deadAtPaste   bool // the agent has exited when the paste comes: tmux pastes nothing
	// A frozen agent: pastes land this late (they wait in the pty meanwhile).
	pasteDelay    time.Duration
	pendingPastes []echo
	// A person typing: personText lands in the box at personAt; beforePaste
	// lands in the box just before our paste does.
	personText  string
	personAt    time.Duration
	beforePaste string
	prefix      string // what a person typed before a folded paste: shown before its label

	calls     int
	submitted []string
	keys      []string // every key or paste that reached a dialog or copy mode
	captures  int
}

type echo struct {
	at   time.Duration
	text string
}

func newFakeAgent() (*fakeAgent, *fakeClock) {
	c := &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	return &fakeAgent{clock: c, start: c.now, foldOver: 800}, c
}

func (a *fakeAgent) elapsed() time.Duration { return a.clock.now.Sub(a.start) }

// call is the start of every tmux call: like a real client, it fails once
// ctx has ended.
func (a *fakeAgent) call(ctx context.Context, op string) error {
	if a.onCall != nil {
		a.onCall(op)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return a.tick()
}

func (a *fakeAgent) tick() error {
	a.calls++
	if a.goneAfter > 0 && a.calls > a.goneAfter {
		return &tmux.Error{Command: "x", Stderr: "can't find pane: %1", Kind: tmux.ErrPaneNotFound}
	}
	if a.staleDraft != "" && a.elapsed() >= a.redrawAt {
		a.staleDraft = ""
	}
	if a.mode == "busy" && a.busyUntil > 0 && a.elapsed() >= a.busyUntil {
		a.mode = ""
	}
	if a.mode == "dialog" && a.dialogUntil > 0 && a.elapsed() >= a.dialogUntil {
		a.mode = ""
	}
	kept := a.pendingEcho[:0]
	for _, e := range a.pendingEcho {
		if a.elapsed() >= e.at {
			a.transcript = append(a.transcript, "> "+e.text)
			for i := range a.outputLines {
				a.transcript = append(a.transcript, fmt.Sprintf("  output line %d", i+1))
			}
		} else {
			kept = append(kept, e)
		}
	}
	a.pendingEcho = kept
	if a.personText != "" && a.elapsed() >= a.personAt {
		a.draft += a.personText
		a.personText = ""
	}
	due := a.pendingPastes[:0]
	for _, p := range a.pendingPastes {
		if a.elapsed() >= p.at {
			a.land(p.text)
		} else {
			due = append(due, p)
		}
	}
	a.pendingPastes = due
	return nil
}

func (a *fakeAgent) LeaveMode(ctx context.Context, pane string) error {
	if err := a.call(ctx, "leave"); err != nil {
		return err
	}
	a.inMode = false
	return nil
}

func (a *fakeAgent) Capture(ctx context.Context, pane string, history int) ([]string, error) {
	if err := a.call(ctx, "capture"); err != nil {
		return nil, err
	}
	if a.failCapture != nil {
		return nil, a.failCapture
	}
	a.captures++
	screen := a.screen()
	// 50 rows on screen, history rows of scrollback above them.
	if keep := 50 + max(history, 0); len(screen) > keep {
		screen = screen[len(screen)-keep:]
	}
	return screen, nil
}

func (a *fakeAgent) screen() []string {
	var lines []string
	for _, t := range a.transcript {
		lines = append(lines, strings.Split(t, "\n")...)
	}
	if a.mode == "dialog" {
		return append(lines, " Bash command", "   rm -rf /", " Do you want to proceed?", " ❯ 1. Yes", "   2. No", " Esc to cancel", "")
	}
	rule := strings.Repeat("─", 60)
	shown := a.draft
	if shown == "" {
		shown = a.staleDraft
	}
	box := strings.Split(shown, "\n")
	if a.pastes > 0 && len(a.draft) > a.foldOver {
		box = []string{a.prefix + fmt.Sprintf("[Pasted text #%d +%d lines]", a.pastes, strings.Count(a.draft, "\n"))}
	}
	lines = append(lines, "", rule, "❯\u00a0"+box[0])
	for _, l := range box[1:] {
		lines = append(lines, "  "+l)
	}
	status := "  ? for shortcuts"
	if a.mode == "busy" {
		status = "  ✻ Working… (esc to interrupt)"
	}
	return append(lines, rule, status, "", "")
}

func (a *fakeAgent) Paste(ctx context.Context, pane, text string) error {
	if err := a.call(ctx, "paste"); err != nil {
		return err
	}
	if a.deadAtPaste {
		return &tmux.Error{Command: "paste-buffer", Stderr: "target pane has exited", Kind: tmux.ErrPaneDead}
	}
	switch {
	case a.inMode || a.mode == "dialog":
		a.keys = append(a.keys, "paste:"+text)
	case a.dropPastes > 0:
		a.dropPastes--
	case a.pasteDelay > 0:
		a.pendingPastes = append(a.pendingPastes, echo{a.elapsed() + a.pasteDelay, text})
	default:
		a.land(text)
	}
	return nil
}

// land puts a paste into the box.
func (a *fakeAgent) land(text string) {
	if a.beforePaste != "" {
		a.draft += a.beforePaste
		a.prefix, a.beforePaste = a.beforePaste, ""
	}
	a.pastes++
	a.draft += text
	if a.dialogOnPaste {
		a.mode = "dialog"
	}
}

func (a *fakeAgent) SendBytes(ctx context.Context, pane string, b ...byte) error {
	if err := a.call(ctx, "press"); err != nil {
		return err
	}
	switch {
	case a.inMode || a.mode == "dialog":
		a.keys = append(a.keys, fmt.Sprintf("key:%x", b))
	case a.mode == "busy" || a.draft == "":
	case a.dropEnters > 0:
		a.dropEnters--
	default:
		a.submitted = append(a.submitted, a.draft)
		if a.slowRedraw > 0 {
			a.staleDraft, a.redrawAt = a.draft, a.elapsed()+a.slowRedraw
		}
		if !a.silent {
			a.pendingEcho = append(a.pendingEcho, echo{a.elapsed() + a.echoDelay, a.draft})
		}
		if a.dialogOnPress {
			a.mode = "dialog"
		}
		a.draft, a.prefix = "", ""
	}
	return nil
}
