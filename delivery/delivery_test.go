package delivery

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/lock"
	"github.com/agentmsg/agentmsg/message"
)

const testID = message.ID("MSG_LEAD_0badcafe")

func deliverTo(t *testing.T, a *fakeAgent, c *fakeClock, text string, tweak func(*Options)) (Result, *noLocks) {
	t.Helper()
	opts := DefaultOptions()
	opts.ReadyTimeout = 3 * time.Second
	if tweak != nil {
		tweak(&opts)
	}
	locks := &noLocks{}
	d := &Deliverer{Term: a, Locks: locks, Clock: c, Socket: "/tmp/s", Opts: opts}
	res := d.Deliver(context.Background(), "%1", testID, text)
	if locks.taken != 0 {
		t.Errorf("lock still held after delivery")
	}
	return res, locks
}

func TestDeliver(t *testing.T) {
	long := strings.Repeat("line of a long message\n", 60) + "end"
	tests := []struct {
		name  string
		setup func(a *fakeAgent)
		text  string
		opts  func(*Options)

		verdict       Verdict
		errIs         error
		errHas        string
		wantSubmitted []string // nil: the default, exactly one submission of text
		presses       int
		typings       int
		check         func(t *testing.T, a *fakeAgent, res Result)
	}{
		{name: "ready agent", verdict: Submitted, presses: 1, typings: 1},
		{name: "copy mode is left first", setup: func(a *fakeAgent) { a.inMode = true }, verdict: Submitted, presses: 1, typings: 1,
			check: func(t *testing.T, a *fakeAgent, _ Result) {
				if len(a.keys) != 0 {
					t.Errorf("copy mode ate %q", a.keys)
				}
			}},
		{name: "dialog that never closes", setup: func(a *fakeAgent) { a.mode = "dialog" },
			verdict: NotReady, errIs: ErrNotReady, errHas: "a dialog stayed open", wantSubmitted: []string{},
			check: func(t *testing.T, a *fakeAgent, res Result) {
				var nr *NotReadyError
				if !errors.As(res.Err, &nr) || nr.State != Dialog || nr.Waited < 3*time.Second {
					t.Errorf("error %#v, want a NotReadyError for a dialog after the ready timeout", res.Err)
				}
			}},
		{name: "a person's draft is left alone", setup: func(a *fakeAgent) { a.draft = "half typ" },
			verdict: NotReady, errIs: ErrNotReady, errHas: "someone else's text", wantSubmitted: []string{},
			check: func(t *testing.T, a *fakeAgent, _ Result) {
				if a.draft != "half typ" {
					t.Errorf("draft is now %q", a.draft)
				}
			}},
		{name: "busy then ready", setup: func(a *fakeAgent) { a.mode, a.busyUntil = "busy", 2*time.Second },
			verdict: Submitted, presses: 1, typings: 1,
			check: func(t *testing.T, a *fakeAgent, res Result) {
				if res.Elapsed < 2*time.Second {
					t.Errorf("delivered after %s, before the agent was ready", res.Elapsed)
				}
			}},
		{name: "busy the whole time", setup: func(a *fakeAgent) { a.mode = "busy" },
			verdict: NotReady, errHas: "it stayed busy", wantSubmitted: []string{}},
		{name: "no box on screen", setup: func(a *fakeAgent) { a.mode = "dialog"; a.transcript = nil },
			opts: func(o *Options) {
				o.Reader = readerFunc(func([]string) Reading { return Reading{State: Unknown, BoxRow: -1} })
			},
			verdict: NotReady, errHas: "no input box", wantSubmitted: []string{}},
		{name: "lost submit press is pressed again", setup: func(a *fakeAgent) { a.dropEnters = 1 },
			verdict: Submitted, presses: 2, typings: 1,
			check: func(t *testing.T, a *fakeAgent, res Result) {
				if res.Elapsed > time.Second {
					t.Errorf("pressed again after %s: want it after Repress, not the confirm timeout", res.Elapsed)
				}
			}},
		{name: "slow agent is not pressed twice within Repress", setup: func(a *fakeAgent) { a.echoDelay = 300 * time.Millisecond },
			verdict: Submitted, presses: 1, typings: 1},
		{name: "submit never takes", setup: func(a *fakeAgent) { a.dropEnters = 100 },
			verdict: Typed, errIs: ErrUnconfirmed, errHas: "still in the input box after 3 submit presses", wantSubmitted: []string{}, presses: 3, typings: 1},
		{name: "no retries", setup: func(a *fakeAgent) { a.dropEnters = 100 }, opts: func(o *Options) { o.Retries = 0 },
			verdict: Typed, wantSubmitted: []string{}, presses: 1, typings: 1},
		// A paste that does not show may still be on its way (a frozen or
		// slow agent): pasting again could double it.
		{name: "a paste that never shows is not pasted again", setup: func(a *fakeAgent) { a.dropPastes = 1 },
			verdict: VerdictUnknown, errIs: ErrUnconfirmed, errHas: "not pasting it again", wantSubmitted: []string{}, presses: 0, typings: 1},
		{name: "a frozen agent gets one paste", setup: func(a *fakeAgent) { a.pasteDelay = 7 * time.Second },
			verdict: VerdictUnknown, errIs: ErrUnconfirmed, errHas: "never appeared", wantSubmitted: []string{}, presses: 0, typings: 1,
			check: func(t *testing.T, a *fakeAgent, res Result) {
				a.clock.now = a.clock.now.Add(10 * time.Second) // it thaws
				_ = a.tick()
				if a.pastes != 1 || a.draft != string(testID)+": hello" {
					t.Errorf("after thawing the box holds %q (%d pastes), want our text once", a.draft, a.pastes)
				}
				if res.Reached != Unseen {
					t.Errorf("reached %q, want unseen: the paste may still arrive", res.Reached)
				}
			}},
		// Text that left the box after our press was taken, even when its id
		// never shows (scrolled past the history, or not echoed).
		{name: "text the agent takes silently is not typed again", setup: func(a *fakeAgent) { a.silent = true },
			verdict: Submitted, presses: 1, typings: 1},
		{name: "a long text whose id scrolls past the history is not typed again", text: long,
			setup: func(a *fakeAgent) { a.outputLines = 400 }, verdict: Submitted, presses: 1, typings: 1},
		{name: "a dialog after the press: unknown, not typed again", setup: func(a *fakeAgent) { a.silent, a.dialogOnPress = true, true },
			verdict: VerdictUnknown, errIs: ErrUnconfirmed, errHas: "dialog", presses: 1, typings: 1},
		// Just before the submit key the box must hold exactly our text.
		{name: "a person typing during the settle is never submitted",
			setup:   func(a *fakeAgent) { a.personText, a.personAt = " and HUMAN half-typed rm -rf", 400*time.Millisecond },
			opts:    func(o *Options) { o.Settle = time.Second },
			verdict: Typed, errIs: ErrUnconfirmed, errHas: "someone", wantSubmitted: []string{}, presses: 0, typings: 1,
			check: func(t *testing.T, a *fakeAgent, _ Result) {
				if want := string(testID) + ": hello and HUMAN half-typed rm -rf"; a.draft != want {
					t.Errorf("box holds %q, want %q left alone", a.draft, want)
				}
			}},
		{name: "a keystroke that lands before our paste is never submitted",
			setup:   func(a *fakeAgent) { a.beforePaste = "x" },
			verdict: Typed, errIs: ErrUnconfirmed, errHas: "someone", wantSubmitted: []string{}, presses: 0, typings: 1},
		{name: "a keystroke before a folded paste is never submitted", text: long,
			setup:   func(a *fakeAgent) { a.beforePaste = "x" },
			verdict: VerdictUnknown, errIs: ErrUnconfirmed, wantSubmitted: []string{}, presses: 0, typings: 1},
		{name: "a person typing after a lost press is never submitted",
			setup: func(a *fakeAgent) {
				a.dropEnters = 100
				a.personText, a.personAt = " more", 200*time.Millisecond
			},
			verdict: Typed, errIs: ErrUnconfirmed, errHas: "someone", wantSubmitted: []string{}, presses: 1, typings: 1},
		{name: "slow echo is waited for", setup: func(a *fakeAgent) { a.echoDelay = 2 * time.Second },
			verdict: Submitted, presses: 1, typings: 1},
		{name: "dialog opens over the pasted text", setup: func(a *fakeAgent) { a.dialogOnPaste = true },
			verdict: Typed, errIs: ErrUnconfirmed, errHas: "dialog opened while typing", wantSubmitted: []string{}, presses: 0, typings: 1,
			check: func(t *testing.T, a *fakeAgent, _ Result) {
				if len(a.keys) != 0 {
					t.Errorf("keys reached the dialog: %q", a.keys)
				}
			}},
		{name: "long text is folded and scrolls off screen", text: long, verdict: Submitted, presses: 1, typings: 1,
			check: func(t *testing.T, a *fakeAgent, res Result) {
				if a.captures < 3 {
					t.Errorf("only %d captures", a.captures)
				}
				if res.Elapsed > time.Second {
					t.Errorf("confirmed after %s: the scrollback should be read as soon as the box empties", res.Elapsed)
				}
			}},
		{name: "pane goes away mid-delivery", setup: func(a *fakeAgent) { a.goneAfter = 3 },
			verdict: Failed, errIs: ErrPaneGone, wantSubmitted: []string{}, typings: 1},
		// Gone after our press (its server restarted, the agent quit): it may
		// have taken the message first, so never "failed" (found by
		// e2e/chaos: a message the agent got was reported failed).
		{name: "pane goes away right after the press",
			setup: func(a *fakeAgent) {
				a.onCall = func(op string) {
					if op == "press" {
						a.goneAfter = a.calls + 1
					}
				}
			},
			verdict: VerdictUnknown, errIs: ErrPaneGone, presses: 1, typings: 1},
		{name: "resume: already submitted earlier, nothing typed again",
			setup: func(a *fakeAgent) { a.transcript = append(a.transcript, "> "+string(testID)+": hello") },
			opts:  func(o *Options) { o.Resume = true }, verdict: Submitted, presses: 0, typings: 0, wantSubmitted: []string{}},
		{name: "resume: typed earlier, only submitted now",
			setup:   func(a *fakeAgent) { a.draft = string(testID) + ": hello" },
			opts:    func(o *Options) { o.Resume = true },
			verdict: Submitted, presses: 1, typings: 0},
		{name: "resume: no trace, typed as new", opts: func(o *Options) { o.Resume = true },
			verdict: Submitted, presses: 1, typings: 1},
		{name: "resume: typed earlier under a dialog, submitted once it closes",
			setup: func(a *fakeAgent) {
				a.draft, a.mode, a.dialogUntil = string(testID)+": hello", "dialog", time.Second
			},
			opts:    func(o *Options) { o.Resume = true },
			verdict: Submitted, presses: 1, typings: 0},
		{name: "resume: a dialog that stays open decides nothing and gets nothing",
			setup: func(a *fakeAgent) {
				a.draft, a.mode = string(testID)+": hello", "dialog"
				// What the dialog hides cannot be told from what it shows.
				a.transcript = append(a.transcript, "> "+string(testID)+": hello (quoted)")
			},
			opts:    func(o *Options) { o.Resume = true },
			verdict: NotReady, errIs: ErrNotReady, errHas: "a dialog stayed open", wantSubmitted: []string{}},
		{name: "resume: submitted earlier, 300 lines of output since, not typed again",
			setup: func(a *fakeAgent) {
				a.transcript = append(a.transcript, "> "+string(testID)+": hello")
				for i := range 300 {
					a.transcript = append(a.transcript, fmt.Sprintf("  output line %d", i))
				}
			},
			opts: func(o *Options) { o.Resume = true }, verdict: Submitted, presses: 0, typings: 0, wantSubmitted: []string{}},
		{name: "resume: pressed earlier, no trace: unknown, never typed again",
			opts:    func(o *Options) { o.Resume, o.Earlier = true, Pressed },
			verdict: VerdictUnknown, errIs: ErrUnknown, errHas: "an earlier attempt pressed it", wantSubmitted: []string{}, presses: 0, typings: 0},
		{name: "resume: pasted earlier (or about to), never pressed, no trace: typed again",
			opts:    func(o *Options) { o.Resume, o.Earlier = true, Pasted },
			verdict: Submitted, presses: 1, typings: 1},
		{name: "resume: a paste earlier went unseen, no trace: unknown, never pasted again",
			opts:    func(o *Options) { o.Resume, o.Earlier = true, Unseen },
			verdict: VerdictUnknown, errIs: ErrUnknown, wantSubmitted: []string{}, presses: 0, typings: 0},
		{name: "resume: pasted earlier and still on its way: unknown, never pasted again",
			setup: func(a *fakeAgent) {
				a.pasteDelay = 10 * time.Second // a frozen agent
				_ = a.Paste(context.Background(), "%1", string(testID)+": hello")
			},
			opts:    func(o *Options) { o.Resume, o.Earlier = true, Unseen },
			verdict: VerdictUnknown, errIs: ErrUnknown, wantSubmitted: []string{}, presses: 0, typings: 0,
			check: func(t *testing.T, a *fakeAgent, _ Result) {
				a.clock.now = a.clock.now.Add(10 * time.Second)
				if _ = a.tick(); a.pastes != 1 {
					t.Errorf("%d pastes landed, want the earlier one only", a.pastes)
				}
			}},
		{name: "resume: a receipt wins, even with no trace on screen",
			opts: func(o *Options) {
				o.Resume, o.Earlier = true, Pressed
				o.Receipt = func(id message.ID) bool { return id == testID }
			},
			verdict: Submitted, presses: 0, typings: 0, wantSubmitted: []string{}},
		{name: "resume: pressed earlier and the id is deep in the scrollback",
			setup: func(a *fakeAgent) {
				a.transcript = append(a.transcript, "> "+string(testID)+": hello")
				for i := range 3000 {
					a.transcript = append(a.transcript, fmt.Sprintf("  output line %d", i))
				}
			},
			opts: func(o *Options) { o.Resume, o.Earlier = true, Pressed }, verdict: Submitted, presses: 0, typings: 0, wantSubmitted: []string{}},
		{name: "resume: our text with a person's is never submitted",
			setup: func(a *fakeAgent) { a.draft = string(testID) + ": hello and more" },
			opts:  func(o *Options) { o.Resume = true }, verdict: NotReady, errIs: ErrNotReady, wantSubmitted: []string{}, presses: 0, typings: 0,
			check: func(t *testing.T, a *fakeAgent, _ Result) {
				if a.draft != string(testID)+": hello and more" {
					t.Errorf("box now holds %q", a.draft)
				}
			}},
		{name: "a reader blind to the box never retypes what is on screen", opts: func(o *Options) {
			o.ConfirmTimeout = 200 * time.Millisecond
			o.Reader = readerFunc(func([]string) Reading { return Reading{State: Ready, BoxRow: -1} })
		}, verdict: Typed, errIs: ErrTextOffBox, errHas: "not typing it again", wantSubmitted: []string{}, presses: 0, typings: 1},
		{name: "a press taken but shown late is not reported as a failure", setup: func(a *fakeAgent) { a.slowRedraw = 510 * time.Millisecond }, opts: func(o *Options) { o.Settle = 30 * time.Millisecond },
			verdict: Submitted, presses: 1, typings: 1},
		{name: "a shell prompt is refused at once", opts: func(o *Options) {
			o.Reader = readerFunc(func([]string) Reading {
				return Reading{State: Unknown, Shell: true, BoxRow: -1, Detail: "a shell prompt, not an agent"}
			})
		}, verdict: NotReady, errIs: ErrNotReady, errHas: "shell prompt", wantSubmitted: []string{},
			check: func(t *testing.T, a *fakeAgent, res Result) {
				if res.Elapsed > 0 {
					t.Errorf("refused after %s, want at once", res.Elapsed)
				}
			}},
		{name: "tmux fails", setup: func(a *fakeAgent) { a.failCapture = errors.New("tmux capture-pane: server exited unexpectedly") },
			verdict: Failed, errHas: "server exited unexpectedly", wantSubmitted: []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, c := newFakeAgent()
			a.transcript = []string{"Welcome to the fake agent"}
			if tt.setup != nil {
				tt.setup(a)
			}
			text := tt.text
			if text == "" {
				text = "hello"
			}
			res, _ := deliverTo(t, a, c, text, tt.opts)
			if res.Verdict != tt.verdict {
				t.Fatalf("verdict %s (err %v), want %s", res.Verdict, res.Err, tt.verdict)
			}
			if (res.Err == nil) != (tt.verdict == Submitted) {
				t.Errorf("err = %v with verdict %s", res.Err, res.Verdict)
			}
			if tt.errIs != nil && !errors.Is(res.Err, tt.errIs) {
				t.Errorf("err = %v, want errors.Is %v", res.Err, tt.errIs)
			}
			if tt.errHas != "" && (res.Err == nil || !strings.Contains(res.Err.Error(), tt.errHas)) {
				t.Errorf("err = %v, want it to say %q", res.Err, tt.errHas)
			}
			want := tt.wantSubmitted
			if want == nil {
				want = []string{string(testID) + ": " + text}
			}
			if strings.Join(a.submitted, "\x00") != strings.Join(want, "\x00") || len(a.submitted) != len(want) {
				t.Errorf("agent received %d submissions %.80q, want %d", len(a.submitted), a.submitted, len(want))
			}
			if res.Presses != tt.presses || res.Typings != tt.typings {
				t.Errorf("presses %d typings %d, want %d and %d", res.Presses, res.Typings, tt.presses, tt.typings)
			}
			if len(a.keys) != 0 {
				t.Errorf("input reached a dialog or copy mode: %q", a.keys)
			}
			if tt.check != nil {
				tt.check(t, a, res)
			}
		})
	}
}

type readerFunc func([]string) Reading

func (f readerFunc) Read(l []string) Reading { return f(l) }

func TestDeliverReportsWaits(t *testing.T) {
	a, c := newFakeAgent()
	a.mode, a.busyUntil = "busy", 2500*time.Millisecond
	var waits []Wait
	res, _ := deliverTo(t, a, c, "hi", func(o *Options) { o.OnWait = func(w Wait) { waits = append(waits, w) } })
	if res.Verdict != Submitted {
		t.Fatalf("verdict %s: %v", res.Verdict, res.Err)
	}
	if len(waits) != 3 || waits[0].State != Busy || waits[0].Waited != 0 || waits[2].Waited < 2*time.Second {
		t.Errorf("waits = %+v, want 3 reports of busy, a second apart", waits)
	}
}

func TestDeliverCancelled(t *testing.T) {
	a, c := newFakeAgent()
	a.mode = "busy"
	d := &Deliverer{Term: a, Locks: &noLocks{}, Clock: c, Opts: DefaultOptions()}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res := d.Deliver(ctx, "%1", testID, "x")
	if res.Verdict != NotReady || !errors.Is(res.Err, context.Canceled) || !errors.Is(res.Err, ErrInterrupted) {
		t.Fatalf("verdict %s err %v, want not ready (interrupted, context.Canceled)", res.Verdict, res.Err)
	}
}

// A delivery stopped by its caller (SIGINT, SIGTERM, an MCP client that
// went away) at any step finishes the step under way, starts no other, and
// says how far it got: nothing typed (NotReady: the message can wait), or
// typed (left in the box for a resumed delivery to submit). It never
// leaves a paste or a press half done.
func TestDeliverInterruptedAtEachStep(t *testing.T) {
	const settle = 777 * time.Millisecond
	text := string(testID) + ": hello"
	tests := []struct {
		name string
		// at cancels the delivery: called with each tmux call's name and
		// with "sleep:<duration>" for each sleep.
		at    func(a *fakeAgent, op string) bool
		setup func(a *fakeAgent)

		verdict   Verdict
		errIs     error
		errHas    string
		draft     string // what the box holds afterwards
		submitted int
		presses   int
	}{
		{name: "waiting for a busy agent", setup: func(a *fakeAgent) { a.mode = "busy" },
			at:      func(a *fakeAgent, op string) bool { return op == "capture" && a.captures == 5 },
			verdict: NotReady, errIs: ErrNotReady, errHas: "before anything was typed"},
		{name: "waiting for a dialog to close", setup: func(a *fakeAgent) { a.mode = "dialog" },
			at:      func(a *fakeAgent, op string) bool { return op == "sleep:10ms" && a.captures == 3 },
			verdict: NotReady, errIs: ErrNotReady, errHas: "before anything was typed"},
		{name: "paste in flight: it completes", at: func(a *fakeAgent, op string) bool { return op == "paste" },
			verdict: Typed, errIs: ErrUnconfirmed, errHas: "waits in the input box", draft: text},
		{name: "after the paste, before it shows", at: func(a *fakeAgent, op string) bool { return op == "capture" && a.pastes == 1 },
			verdict: Typed, errIs: ErrUnconfirmed, errHas: "waits in the input box", draft: text},
		{name: "in the settle", at: func(a *fakeAgent, op string) bool { return op == "sleep:"+settle.String() },
			verdict: Typed, errIs: ErrUnconfirmed, errHas: "waits in the input box", draft: text},
		{name: "press in flight: it completes", at: func(a *fakeAgent, op string) bool { return op == "press" },
			verdict: Typed, errIs: ErrUnconfirmed, errHas: "after pressing submit", submitted: 1, presses: 1},
		{name: "confirming after the press", setup: func(a *fakeAgent) { a.echoDelay = 2 * time.Second },
			at:      func(a *fakeAgent, op string) bool { return op == "capture" && len(a.submitted) == 1 },
			verdict: Typed, errIs: ErrUnconfirmed, errHas: "after pressing submit", submitted: 1, presses: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, c := newFakeAgent()
			if tt.setup != nil {
				tt.setup(a)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			hit := func(op string) {
				if tt.at(a, op) {
					cancel()
				}
			}
			a.onCall = hit
			c.onSleep = func(d time.Duration) { hit("sleep:" + d.String()) }
			opts := DefaultOptions()
			opts.ReadyTimeout, opts.Settle = 3*time.Second, settle
			d := &Deliverer{Term: a, Locks: &noLocks{}, Clock: c, Opts: opts}
			res := d.Deliver(ctx, "%1", testID, "hello")
			if ctx.Err() == nil {
				t.Fatalf("never interrupted: verdict %s, err %v", res.Verdict, res.Err)
			}
			if res.Verdict != tt.verdict || !errors.Is(res.Err, ErrInterrupted) || !errors.Is(res.Err, context.Canceled) || !errors.Is(res.Err, tt.errIs) {
				t.Fatalf("verdict %s, err %v; want %s, interrupted, %v", res.Verdict, res.Err, tt.verdict, tt.errIs)
			}
			if !strings.Contains(res.Err.Error(), tt.errHas) {
				t.Errorf("err %q, want it to say %q", res.Err, tt.errHas)
			}
			if a.draft != tt.draft || len(a.submitted) != tt.submitted || res.Presses != tt.presses {
				t.Errorf("box %q, %d submitted, %d presses; want %q, %d, %d", a.draft, len(a.submitted), res.Presses, tt.draft, tt.submitted, tt.presses)
			}
			if len(a.keys) != 0 {
				t.Errorf("input reached a dialog: %q", a.keys)
			}
		})
	}
}

// A dialog that opens over our text between the paste and the press: the
// text waits in the box under it (typed), nothing is pressed, and a
// resumed delivery submits it once the dialog is gone: exactly once.
func TestDialogBeforeSubmitLeavesTypedThenResumes(t *testing.T) {
	a, c := newFakeAgent()
	const settle = 777 * time.Millisecond
	c.onSleep = func(d time.Duration) {
		if d == settle {
			a.mode = "dialog"
		}
	}
	res, _ := deliverTo(t, a, c, "hello", func(o *Options) { o.Settle = settle })
	if res.Verdict != Typed || !errors.Is(res.Err, ErrUnconfirmed) || res.Presses != 0 {
		t.Fatalf("verdict %s, presses %d, err %v; want typed, nothing pressed", res.Verdict, res.Presses, res.Err)
	}
	c.onSleep = nil
	a.dialogUntil = a.elapsed() + time.Second
	res, _ = deliverTo(t, a, c, "hello", func(o *Options) { o.Resume = true })
	if res.Verdict != Submitted || res.Typings != 0 || res.Presses != 1 {
		t.Fatalf("resumed: verdict %s, typings %d, presses %d, err %v; want submitted by one press", res.Verdict, res.Typings, res.Presses, res.Err)
	}
	if len(a.submitted) != 1 || len(a.keys) != 0 {
		t.Errorf("submitted %q, keys to the dialog %q", a.submitted, a.keys)
	}
}

// slowLocks is a pane lock another sender holds: Pane waits for ctx (at
// most a second) and says who holds it; with advance set it gets the lock
// after that much virtual time instead.
type slowLocks struct {
	clock   *fakeClock
	advance time.Duration
}

func (l slowLocks) Pane(ctx context.Context, socket, pane string) (func(), error) {
	if l.advance > 0 {
		l.clock.now = l.clock.now.Add(l.advance)
		return func() {}, nil
	}
	select {
	case <-ctx.Done():
		return nil, fmt.Errorf("pane %s is held by pid 42 (agentmsg send): %w", pane, ctx.Err())
	case <-time.After(time.Second):
		return nil, errors.New("gave up: the delivery should have stopped waiting")
	}
}

// refusedLocks is a lock directory agentmsg refuses (another user's).
type refusedLocks struct{}

func (refusedLocks) Pane(context.Context, string, string) (func(), error) {
	return nil, errors.New("lock directory: unsafe directory: refusing to use /tmp/agentmsg-0/locks: it is owned by uid 65534")
}

// A lock that cannot be taken for any other reason (a lock directory that
// is not ours) leaves the message as untouched as a busy agent does: not
// ready, kept for a later try, never failed (a message failed for it was
// lost until a person retried it).
func TestALockThatCannotBeTakenIsNotReady(t *testing.T) {
	a, c := newFakeAgent()
	d := &Deliverer{Term: a, Locks: refusedLocks{}, Clock: c, Opts: DefaultOptions()}
	res := d.Deliver(context.Background(), "%1", testID, "hello")
	var nr *NotReadyError
	if res.Verdict != NotReady || !errors.As(res.Err, &nr) || nr.State != Locked || !strings.Contains(res.Err.Error(), "uid 65534") {
		t.Fatalf("verdict %s, err %v; want not ready (locked), saying why", res.Verdict, res.Err)
	}
	if a.pastes != 0 || a.calls != 0 {
		t.Errorf("%d tmux calls, %d pastes without the lock", a.calls, a.pastes)
	}
}

// Waiting for the pane's lock counts against the ready timeout: a sender
// that cannot get its turn in time is not ready (and says who holds the
// pane), and one that gets it late waits only what is left.
func TestLockWaitCountsAgainstReadyTimeout(t *testing.T) {
	t.Run("held the whole time", func(t *testing.T) {
		a, c := newFakeAgent()
		opts := DefaultOptions()
		opts.ReadyTimeout = 50 * time.Millisecond
		d := &Deliverer{Term: a, Locks: slowLocks{}, Clock: c, Opts: opts}
		res := d.Deliver(context.Background(), "%1", testID, "hello")
		var nr *NotReadyError
		if res.Verdict != NotReady || !errors.As(res.Err, &nr) || nr.State != Locked {
			t.Fatalf("verdict %s, err %v; want not ready, locked", res.Verdict, res.Err)
		}
		if !strings.Contains(res.Err.Error(), "held by pid 42") || res.LastSeen != Locked {
			t.Errorf("err %q (last seen %s) should name the holder", res.Err, res.LastSeen)
		}
		if a.pastes != 0 || a.calls != 0 {
			t.Errorf("%d tmux calls, %d pastes without the lock", a.calls, a.pastes)
		}
	})
	t.Run("got late, then busy", func(t *testing.T) {
		a, c := newFakeAgent()
		a.mode = "busy"
		opts := DefaultOptions()
		opts.ReadyTimeout = 3 * time.Second
		d := &Deliverer{Term: a, Locks: slowLocks{clock: c, advance: 2 * time.Second}, Clock: c, Opts: opts}
		res := d.Deliver(context.Background(), "%1", testID, "hello")
		if res.Verdict != NotReady {
			t.Fatalf("verdict %s, err %v; want not ready", res.Verdict, res.Err)
		}
		if res.Elapsed > opts.ReadyTimeout+100*time.Millisecond {
			t.Errorf("gave up after %s: the ready timeout is %s, lock wait included", res.Elapsed, opts.ReadyTimeout)
		}
	})
}

// OnStep hears of the paste and the first press before each is taken, and
// a step it cannot record is not taken.
func TestDeliverReportsStepsFirst(t *testing.T) {
	a, c := newFakeAgent()
	a.dropEnters = 1 // a second press: reported once
	var steps []string
	res, _ := deliverTo(t, a, c, "hi", func(o *Options) {
		o.OnStep = func(s Step) error {
			steps = append(steps, fmt.Sprintf("%s after %d pastes, %d submissions", s, a.pastes, len(a.submitted)))
			return nil
		}
	})
	want := []string{"pasted after 0 pastes, 0 submissions", "pressed after 1 pastes, 0 submissions"}
	if res.Verdict != Submitted || res.Reached != Pressed || strings.Join(steps, "|") != strings.Join(want, "|") {
		t.Errorf("verdict %s reached %q steps %q, want submitted, pressed, %q", res.Verdict, res.Reached, steps, want)
	}

	for _, fail := range []Step{Pasted, Pressed} {
		a, c := newFakeAgent()
		res, _ := deliverTo(t, a, c, "hi", func(o *Options) {
			o.OnStep = func(s Step) error {
				if s == fail {
					return errors.New("disk full")
				}
				return nil
			}
		})
		if len(a.submitted) != 0 || res.Err == nil || !strings.Contains(res.Err.Error(), "disk full") {
			t.Errorf("%s not recorded: submitted %q, err %v", fail, a.submitted, res.Err)
		}
		if fail == Pasted && (a.pastes != 0 || res.Verdict != Failed) {
			t.Errorf("pasted %d times with the step unrecorded (verdict %s)", a.pastes, res.Verdict)
		}
		if fail == Pressed && res.Verdict != Typed {
			t.Errorf("verdict %s with the press unrecorded, want typed (left in the box)", res.Verdict)
		}
	}
}

// Decide is the readiness rule in one place: type only into an empty box
// on screen (or, forced, a shell's empty command line), into a busy one
// only when the agent queues, refuse a shell prompt, else wait.
func TestDecide(t *testing.T) {
	box := func(s State, text string) Reading { return Reading{State: s, BoxRow: 3, Box: text} }
	shell := Reading{State: Unknown, BoxRow: -1, Shell: true}
	for _, tt := range []struct {
		rd           Reading
		force, queue bool
		want         Action
	}{
		{box(Ready, ""), false, false, ActType},
		{box(Busy, ""), false, false, ActWait},
		{box(Busy, ""), false, true, ActQueue},
		{Reading{State: Busy, BoxRow: 2, Hold: true}, false, true, ActWait},
		{box(Busy, "a draft"), false, true, ActWait},
		{Reading{State: Busy, BoxRow: -1}, false, true, ActWait},
		{box(Draft, "a draft"), true, true, ActWait},
		{Reading{State: Dialog, BoxRow: -1}, true, true, ActWait},
		{box(Unknown, ""), false, false, ActWait},
		{shell, false, false, ActRefuse},
		{shell, true, false, ActType},
		{Reading{State: Unknown, BoxRow: 2, Box: "ls", Shell: true}, true, false, ActWait},
	} {
		o := Options{Force: tt.force, QueueWhileBusy: tt.queue}
		if got := o.Decide(tt.rd); got != tt.want {
			t.Errorf("Decide(%+v) with force=%v queue=%v = %s, want %s", tt.rd, tt.force, tt.queue, got, tt.want)
		}
	}
}

// One look can catch a frame half drawn, before or after the press (seen
// in CI: Codex's box showed the first 24 characters of our text right
// after a press it took). A delivery never stops on one such look: it
// looks again, and the second look decides.
func TestTornFrameNeverStopsADelivery(t *testing.T) {
	ours := string(testID) + ": hello"
	reader := readerFunc(func(lines []string) Reading {
		switch lines[len(lines)-1] {
		case "ready":
			return Reading{State: Ready, BoxRow: len(lines) - 1}
		case "ours":
			return Reading{State: Ready, BoxRow: 0, Box: ours}
		case "torn":
			return Reading{State: Ready, BoxRow: 0, Box: ours[:len(ours)-3]}
		case "empty":
			return Reading{State: Ready, BoxRow: 0}
		}
		panic(lines)
	})
	for _, tt := range []struct {
		name    string
		screens []string
	}{
		// Looks: two to agree before typing, one after the paste, one
		// before the press, then the confirm's.
		{"torn after the press", []string{"ready", "ready", "ours", "ours", "torn", "> " + ours + "\nready"}},
		{"empty before the press", []string{"ready", "ready", "ours", "empty", "ours", "> " + ours + "\nready"}},
		{"torn before the press", []string{"ready", "ready", "ours", "torn", "ours", "> " + ours + "\nready"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			term := &torn{screens: tt.screens}
			opts := DefaultOptions()
			opts.Settle = time.Millisecond // a fresh look before the press
			opts.Reader = reader
			d := &Deliverer{Term: term, Locks: &noLocks{}, Clock: &fakeClock{now: time.Unix(0, 0)}, Opts: opts}
			res := d.Deliver(context.Background(), "%1", testID, "hello")
			if res.Verdict != Submitted || !slices.Equal(term.typed, []string{"paste", "key"}) {
				t.Fatalf("verdict %s (%v) after %v; want submitted after one paste and one press", res.Verdict, res.Err, term.typed)
			}
		})
	}
	// A dialog seen before the press is never looked past: the next look
	// may be a frame half drawn over it that shows our text in the old
	// box, and a press would answer the dialog.
	reader2 := readerFunc(func(lines []string) Reading {
		if lines[len(lines)-1] == "dialog" {
			return Reading{State: Dialog, BoxRow: -1, Detail: "Do you want to proceed?"}
		}
		return reader.Read(lines)
	})
	term := &torn{screens: []string{"ready", "ready", "ours", "dialog", "ours"}}
	opts := DefaultOptions()
	opts.Settle = time.Millisecond
	opts.Reader = reader2
	d := &Deliverer{Term: term, Locks: &noLocks{}, Clock: &fakeClock{now: time.Unix(0, 0)}, Opts: opts}
	if res := d.Deliver(context.Background(), "%1", testID, "hello"); res.Verdict != Typed || slices.Contains(term.typed, "key") {
		t.Fatalf("verdict %s (%v) after %v; want typed, never pressed", res.Verdict, res.Err, term.typed)
	}

	// Two looks that agree still stop it: a person's text beside ours.
	term = &torn{screens: []string{"ready", "ready", "ours", "ours", "torn"}}
	opts = DefaultOptions()
	opts.Settle = time.Millisecond
	opts.Reader = reader
	d = &Deliverer{Term: term, Locks: &noLocks{}, Clock: &fakeClock{now: time.Unix(0, 0)}, Opts: opts}
	if res := d.Deliver(context.Background(), "%1", testID, "hello"); res.Verdict != Typed {
		t.Fatalf("verdict %s (%v) after %v; want typed, pressed once", res.Verdict, res.Err, term.typed)
	}
}

// torn is a terminal whose screens come from a script: one string a look,
// the last one repeating. It records every paste and key.
type torn struct {
	screens []string
	looks   int
	typed   []string
}

func (t *torn) LeaveMode(context.Context, string) error { return nil }
func (t *torn) Capture(context.Context, string, int) ([]string, error) {
	s := t.screens[min(t.looks, len(t.screens)-1)]
	t.looks++
	return strings.Split(s, "\n"), nil
}
func (t *torn) Paste(_ context.Context, _ string, text string) error {
	t.typed = append(t.typed, "paste")
	return nil
}
func (t *torn) SendBytes(context.Context, string, ...byte) error {
	t.typed = append(t.typed, "key")
	return nil
}

// A frame the agent is still drawing can show an empty box for one look
// (a permission dialog half drawn over the old box): nothing is typed
// until two looks in a row agree, so a dialog that shows on the second
// look is never typed into.
func TestTornFrameIsNeverTypedInto(t *testing.T) {
	term := &torn{screens: []string{"ready", "dialog"}}
	opts := DefaultOptions()
	opts.ReadyTimeout = 200 * time.Millisecond
	opts.Reader = readerFunc(func(lines []string) Reading {
		if lines[0] == "ready" {
			return Reading{State: Ready, BoxRow: 0}
		}
		return Reading{State: Dialog, BoxRow: -1, Detail: "Do you want to proceed?"}
	})
	d := &Deliverer{Term: term, Locks: &noLocks{}, Clock: &fakeClock{now: time.Unix(0, 0)}, Opts: opts}
	res := d.Deliver(context.Background(), "%1", testID, "hello")
	if len(term.typed) != 0 || res.Verdict != NotReady {
		t.Fatalf("typed %v, verdict %s (%v); want nothing typed, not ready", term.typed, res.Verdict, res.Err)
	}
}

// leaveAgent is the fake agent behind a terminal that leaves a mode and
// captures in one call (tmux.Exec).
type leaveAgent struct{ *fakeAgent }

func (a leaveAgent) LeaveModeCapture(ctx context.Context, pane string) ([]string, error) {
	if err := a.LeaveMode(ctx, pane); err != nil {
		return nil, err
	}
	return a.Capture(ctx, pane, 0)
}

// handoffLocks is a pane lock that was held by another delivery: it is
// ours after wait, with the look its last holder left (lock.Dir).
type handoffLocks struct {
	clock *fakeClock
	wait  time.Duration
	prior func(now time.Time) *lock.Look
	left  **lock.Look // what our delivery leaves for the next holder
}

func (l handoffLocks) Pane(ctx context.Context, socket, pane string) (func(), error) {
	panic("a handoff locker is asked for its handoff")
}

func (l handoffLocks) PaneHandoff(ctx context.Context, socket, pane string) (*lock.Look, func(*lock.Look), error) {
	l.clock.now = l.clock.now.Add(l.wait)
	return l.prior(l.clock.now), func(last *lock.Look) { *l.left = last }, nil
}

// A delivery that waited for the pane takes its last holder's look, when
// recent, as the first of the two looks that must agree, and so looks once
// before it pastes; an old look, a Resume, or one that does not agree with
// the fresh look counts for nothing. It leaves its own last look behind.
func TestHandoffLookStandsForTheFirstLook(t *testing.T) {
	ready, _ := newFakeAgent()
	readyScreen := ready.screen()
	dialog, _ := newFakeAgent()
	dialog.mode = "dialog"
	tests := []struct {
		name         string
		age          time.Duration
		screen       []string
		resume       bool
		wantLooks    int // captures before the paste
		wantVerdict  Verdict
		agentDialogs bool
	}{
		{name: "recent", age: 3 * time.Millisecond, screen: readyScreen, wantLooks: 1, wantVerdict: Submitted},
		{name: "at the limit", age: handoffMaxAge, screen: readyScreen, wantLooks: 1, wantVerdict: Submitted},
		{name: "too old", age: handoffMaxAge + time.Millisecond, screen: readyScreen, wantLooks: 2, wantVerdict: Submitted},
		// Resuming looks for traces first (its own look and the
		// scrollback), then twice before typing: the handoff is not used.
		{name: "resumed", age: time.Millisecond, screen: readyScreen, resume: true, wantLooks: 4, wantVerdict: Submitted},
		{name: "a dialog then, ready now", age: time.Millisecond, screen: dialog.screen(), wantLooks: 2, wantVerdict: Submitted},
		// A frame that shows the old box over a dialog being drawn could
		// agree with the handoff; the fresh look decides, and here it
		// shows the dialog: nothing is typed.
		{name: "ready then, a dialog now", age: time.Millisecond, screen: readyScreen, agentDialogs: true, wantLooks: -1, wantVerdict: NotReady},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, c := newFakeAgent()
			if tt.agentDialogs {
				a.mode = "dialog"
			}
			looks, pasted := 0, false
			a.onCall = func(op string) {
				if op == "capture" && !pasted {
					looks++
				}
				pasted = pasted || op == "paste"
			}
			var left *lock.Look
			opts := DefaultOptions()
			opts.ReadyTimeout, opts.Resume = 500*time.Millisecond, tt.resume
			locks := handoffLocks{clock: c, wait: 40 * time.Millisecond, left: &left,
				prior: func(now time.Time) *lock.Look { return &lock.Look{At: now.Add(-tt.age), Screen: tt.screen} }}
			d := &Deliverer{Term: leaveAgent{a}, Locks: locks, Clock: c, Opts: opts}
			res := d.Deliver(context.Background(), "%1", testID, "hello")
			if res.Verdict != tt.wantVerdict {
				t.Fatalf("verdict %s (%v), want %s", res.Verdict, res.Err, tt.wantVerdict)
			}
			if tt.wantLooks >= 0 && looks != tt.wantLooks {
				t.Errorf("%d looks before the paste, want %d", looks, tt.wantLooks)
			}
			if tt.wantVerdict == Submitted && len(a.submitted) != 1 {
				t.Errorf("submitted %q", a.submitted)
			}
			if len(a.keys) != 0 {
				t.Errorf("keys reached the dialog: %q", a.keys)
			}
			if left == nil || !strings.Contains(strings.Join(left.Screen, "\n"), "Bash command") && !strings.Contains(strings.Join(left.Screen, "\n"), string(testID)) {
				t.Errorf("left no look of the pane as it was at the end for the next holder: %+v", left)
			}
		})
	}
}

// gatheringAgent is a fakeAgent whose client gathers calls (tmux.Exec):
// it counts the deliveries at work, between one call and the next.
type gatheringAgent struct {
	*fakeAgent
	coming int
}

func (g *gatheringAgent) Gather(delta int) { g.coming += delta }

// A delivery counts itself as coming for the next call while it works
// (so that a tmux process waits for its call rather than leave without
// it), and as away while it sleeps or writes its records: a caller counted
// while asleep would hold every other delivery's call up to gatherWait.
func TestDeliveryTellsWhenItIsComing(t *testing.T) {
	for _, name := range []string{"ready", "busy a while", "press lost"} {
		t.Run(name, func(t *testing.T) {
			a, c := newFakeAgent()
			switch name {
			case "busy a while":
				a.mode, a.busyUntil = "busy", 50*time.Millisecond
			case "press lost":
				a.dropEnters = 1
			}
			g := &gatheringAgent{fakeAgent: a}
			var bad []string
			a.onCall = func(op string) {
				if g.coming != 1 {
					bad = append(bad, fmt.Sprintf("%s with %d coming", op, g.coming))
				}
			}
			c.onSleep = func(time.Duration) {
				if g.coming != 0 {
					bad = append(bad, fmt.Sprintf("asleep with %d coming", g.coming))
				}
			}
			opts := DefaultOptions()
			opts.Repress = 100 * time.Millisecond
			opts.OnStep = func(Step) error {
				if g.coming != 0 {
					bad = append(bad, fmt.Sprintf("recording a step with %d coming", g.coming))
				}
				return nil
			}
			d := &Deliverer{Term: g, Locks: &noLocks{}, Clock: c, Socket: "/tmp/s", Opts: opts}
			res := d.Deliver(context.Background(), "%1", testID, "hello")
			if res.Verdict != Submitted {
				t.Fatalf("verdict %s: %v", res.Verdict, res.Err)
			}
			if len(bad) > 0 || g.coming != 0 {
				t.Errorf("%d coming after the delivery; %v", g.coming, bad)
			}
		})
	}
}

// An agent that exits between the last look and the paste, its pane kept
// (remain-on-exit): tmux pastes nothing into it (tmux.Paste checks in the
// same turn), and the delivery says so: not typed, not ready, gone, so that
// the message waits for the agent to be back.
func TestPasteIntoAnExitedAgentTypesNothing(t *testing.T) {
	a, c := newFakeAgent()
	a.deadAtPaste = true
	res, _ := deliverTo(t, a, c, "hello", nil)
	var nr *NotReadyError
	if res.Verdict != NotReady || !errors.As(res.Err, &nr) || nr.State != Gone {
		t.Fatalf("verdict %s, err %v; want not ready, gone", res.Verdict, res.Err)
	}
	if res.Typings != 0 || res.Presses != 0 || len(a.submitted) != 0 {
		t.Errorf("typings %d, presses %d, submitted %q", res.Typings, res.Presses, a.submitted)
	}
}

// launcherAgent is the fake agent behind a launcher (sh) that hands the
// pane to it at handAt, on a terminal whose looks say the foreground
// command (tmux.Exec.LookForeground).
type launcherAgent struct {
	*fakeAgent
	handAt time.Duration
}

func (a launcherAgent) LookForeground(ctx context.Context, pane string, leave bool) ([]string, string, error) {
	if leave {
		if err := a.LeaveMode(ctx, pane); err != nil {
			return nil, "", err
		}
	}
	lines, err := a.Capture(ctx, pane, 0)
	if a.elapsed() < a.handAt {
		return lines, "sh", err
	}
	return lines, "claude", err
}

// A delivery read as the shell its pane showed at first (a launcher's)
// ends, with nothing typed, once its looks see another program take the
// pane that calls for another profile, for its caller to go on with that
// one; a program that calls for the same profile changes nothing.
func TestAProgramThatTakesThePaneEndsTheWait(t *testing.T) {
	never := readerFunc(func([]string) Reading {
		return Reading{State: Unknown, BoxRow: -1, Detail: "a shell is in the foreground"}
	})
	for _, other := range []bool{true, false} {
		a, c := newFakeAgent()
		term := launcherAgent{fakeAgent: a, handAt: 700 * time.Millisecond}
		opts := DefaultOptions()
		opts.ReadyTimeout, opts.Reader, opts.Foreground = 3*time.Second, never, "sh"
		var asked []string
		opts.Reprofile = func(command string, _ []string) bool {
			asked = append(asked, command)
			return other
		}
		d := &Deliverer{Term: term, Locks: &noLocks{}, Clock: c, Socket: "/tmp/s", Opts: opts}
		res := d.Deliver(context.Background(), "%1", testID, "hello")
		var changed *ForegroundChangedError
		switch {
		case a.pastes != 0 || res.Typings != 0:
			t.Fatalf("other profile %v: typed while the launcher had the pane: %+v", other, res)
		case len(asked) != 1 || asked[0] != "claude":
			t.Errorf("other profile %v: Reprofile asked of %q; want once, of claude", other, asked)
		case other && (!errors.As(res.Err, &changed) || changed.From != "sh" || changed.To != "claude" || res.Verdict != NotReady ||
			changed.Waited < term.handAt || changed.Waited > term.handAt+time.Second):
			t.Errorf("the wait ended with %s: %v (%+v); want the change from sh to claude after about %s", res.Verdict, res.Err, changed, term.handAt)
		case !other && (errors.As(res.Err, &changed) || !errors.Is(res.Err, ErrNotReady)):
			t.Errorf("a program read by the same profile ended the wait: %v", res.Err)
		}
	}
}
