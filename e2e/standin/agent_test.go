package main

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

func defaultConfig() config {
	return config{style: "claude", foldBytes: 800, foldLines: 3}
}

// typeText types s key by key, as send-keys -l would.
func typeText(a *agent, s string, now time.Time) {
	for _, r := range s {
		a.handle(event{kind: evRune, r: r}, now)
	}
}

func press(a *agent, k eventKind, now time.Time) { a.handle(event{kind: k}, now) }

func pasteText(a *agent, s string, now time.Time) { a.handle(event{kind: evPaste, text: s}, now) }

type logged struct {
	kind, text string
	queued     bool
}

func drain(a *agent) []logged {
	var out []logged
	for _, r := range a.records {
		out = append(out, logged{r.Kind, r.Text, r.Queued})
	}
	a.records = nil
	return out
}

func TestSubmitLogsExactDraft(t *testing.T) {
	a := newAgent(defaultConfig(), stateReady)
	pasteText(a, "MSG_X_1: hi; #{pane_id}\nline2", t0)
	typeText(a, "!x", t0)
	press(a, evBackspace, t0)
	press(a, evEnter, t0)
	want := []logged{{"prompt", "MSG_X_1: hi; #{pane_id}\nline2!", false}}
	if got := drain(a); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if !a.draft.empty() || !reflect.DeepEqual(a.echoes, []string{want[0].text}) {
		t.Fatalf("draft %q echoes %q", a.draft.text(), a.echoes)
	}
}

func TestRecordTimestamp(t *testing.T) {
	a := newAgent(defaultConfig(), stateReady)
	local := t0.Add(123456789 * time.Nanosecond).In(time.FixedZone("X", 3600))
	a.log(local, "started", "", false)
	if got := a.records[0].T; got != "2025-01-02T03:04:05.123456789Z" {
		t.Fatalf("timestamp %q, want RFC 3339 nano in UTC", got)
	}
}

func TestEmptyEnterDoesNothing(t *testing.T) {
	a := newAgent(defaultConfig(), stateReady)
	press(a, evEnter, t0)
	typeText(a, "é", t0)
	press(a, evBackspace, t0)
	press(a, evEnter, t0)
	if got := drain(a); got != nil {
		t.Fatalf("logged %v", got)
	}
}

func TestFoldedPaste(t *testing.T) {
	a := newAgent(defaultConfig(), stateReady)
	long := "a\nb\nc\nd"
	pasteText(a, long, t0)
	pasteText(a, "short", t0)
	pasteText(a, strings.Repeat("x", 801), t0)
	want := "[Pasted text #1 +3 lines]short[Pasted text #2 +0 lines]"
	if got := a.draft.display(); got != want {
		t.Fatalf("display %q, want %q", got, want)
	}
	press(a, evBackspace, t0) // removes the whole second folded paste
	press(a, evEnter, t0)
	if got := drain(a); !reflect.DeepEqual(got, []logged{{"prompt", long + "short", false}}) {
		t.Fatalf("got %v", got)
	}
}

func TestDialogSwallowsEverything(t *testing.T) {
	a := newAgent(defaultConfig(), stateDialog)
	typeText(a, "2x", t0)
	pasteText(a, "MSG 1", t0)
	press(a, evBackspace, t0)
	press(a, evEnter, t0)
	want := []logged{
		{"dialog-key", "2", false}, {"dialog-key", "x", false},
		{"dialog-key", "paste:MSG 1", false}, {"dialog-key", "backspace", false},
		{"dialog-key", "enter", false},
	}
	if got := drain(a); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
	if a.state != stateReady || !a.draft.empty() {
		t.Fatalf("state %v draft %q: Enter must approve and close", a.state, a.draft.text())
	}
	for _, k := range []event{{kind: evEsc}, {kind: evRune, r: '1'}} {
		a.cue("dialog", t0)
		a.handle(k, t0)
		if a.state != stateReady {
			t.Fatalf("%v did not close the dialog", k)
		}
	}
}

func TestInterrupt(t *testing.T) {
	a := newAgent(defaultConfig(), stateDialog)
	press(a, evInterrupt, t0)
	if a.exitCode != 130 || !reflect.DeepEqual(drain(a), []logged{{"interrupt", "", false}}) {
		t.Fatalf("exit %d", a.exitCode)
	}
}

func TestBusyWithoutQueueKeepsDraft(t *testing.T) {
	a := newAgent(defaultConfig(), stateBusy)
	typeText(a, "hi", t0)
	press(a, evEnter, t0)
	if drain(a) != nil || a.draft.text() != "hi" {
		t.Fatalf("draft %q", a.draft.text())
	}
	a.cue("ready", t0)
	press(a, evEnter, t0)
	if got := drain(a); !reflect.DeepEqual(got, []logged{{"prompt", "hi", false}}) {
		t.Fatalf("got %v", got)
	}
}

func TestQueueAndBusyAfterSubmit(t *testing.T) {
	cfg := defaultConfig()
	cfg.queue, cfg.busyAfterSubmit = true, time.Second
	a := newAgent(cfg, stateReady)
	typeText(a, "one", t0)
	press(a, evEnter, t0)
	if a.state != stateBusy || !a.deadline().Equal(t0.Add(time.Second)) {
		t.Fatalf("state %v deadline %v", a.state, a.deadline())
	}
	pasteText(a, "two\nmore", t0)
	press(a, evEnter, t0)
	typeText(a, "three", t0)
	press(a, evEnter, t0)
	if !reflect.DeepEqual(a.queued, []string{"two\nmore", "three"}) || !a.draft.empty() {
		t.Fatalf("queued %q", a.queued)
	}
	a.tick(t0.Add(999 * time.Millisecond))
	if a.state != stateBusy {
		t.Fatal("busy ended early")
	}
	a.tick(t0.Add(time.Second))
	want := []logged{{"prompt", "one", false}, {"prompt", "two\nmore", true}, {"prompt", "three", true}}
	if got := drain(a); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v", got)
	}
	if a.state != stateBusy || a.queued != nil {
		t.Fatal("the queued prompts must start a new busy period")
	}
}

func TestDropEnter(t *testing.T) {
	cfg := defaultConfig()
	cfg.dropEnter = 1
	a := newAgent(cfg, stateReady)
	press(a, evEnter, t0) // empty: does not count
	typeText(a, "m", t0)
	press(a, evEnter, t0)
	if drain(a) != nil {
		t.Fatal("first Enter must be dropped")
	}
	press(a, evEnter, t0)
	if got := drain(a); !reflect.DeepEqual(got, []logged{{"prompt", "m", false}}) {
		t.Fatalf("got %v", got)
	}
}

func TestEnterGuard(t *testing.T) {
	cfg := defaultConfig()
	cfg.enterGuard = 100 * time.Millisecond
	a := newAgent(cfg, stateReady)
	pasteText(a, "m", t0)
	press(a, evEnter, t0.Add(50*time.Millisecond))
	if drain(a) != nil || a.draft.text() != "m\n" {
		t.Fatalf("draft %q: a quick Enter must become a newline", a.draft.text())
	}
	press(a, evEnter, t0.Add(150*time.Millisecond))
	if got := drain(a); !reflect.DeepEqual(got, []logged{{"prompt", "m\n", false}}) {
		t.Fatalf("got %v", got)
	}
}

func TestEchoDelay(t *testing.T) {
	cfg := defaultConfig()
	cfg.echoDelay = time.Second
	a := newAgent(cfg, stateReady)
	pasteText(a, "m", t0)
	press(a, evEnter, t0)
	if got := drain(a); !reflect.DeepEqual(got, []logged{{"prompt", "m", false}}) {
		t.Fatalf("got %v: the prompt is logged at once", got)
	}
	if a.echoes != nil || !a.deadline().Equal(t0.Add(time.Second)) {
		t.Fatalf("echoes %q deadline %v: want the echo due in a second", a.echoes, a.deadline())
	}
	a.tick(t0.Add(999 * time.Millisecond))
	if a.echoes != nil {
		t.Fatal("echoed early")
	}
	a.tick(t0.Add(time.Second))
	if !reflect.DeepEqual(a.echoes, []string{"m"}) || !a.deadline().IsZero() {
		t.Fatalf("echoes %q deadline %v", a.echoes, a.deadline())
	}
}

// hooksRun drains the hooks due, as "command input" strings.
func hooksRun(a *agent) []string {
	var out []string
	for _, h := range a.hooks {
		out = append(out, h.command+" "+string(h.input))
	}
	a.hooks = nil
	return out
}

func TestHooksRunAsClaudeCodeRunsThem(t *testing.T) {
	cfg := defaultConfig()
	cfg.queue, cfg.busyAfterSubmit = true, time.Second
	cfg.onSubmit, cfg.onTurnEnd = "rec", "deliver"
	a := newAgent(cfg, stateReady)
	pasteText(a, "one\n\"two\"", t0)
	press(a, evEnter, t0)
	typeText(a, "q", t0)
	press(a, evEnter, t0) // queued: its hook runs when it is sent
	want := []string{`rec {"hook_event_name":"UserPromptSubmit","prompt":"one\n\"two\""}`}
	if got := hooksRun(a); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	a.tick(t0.Add(time.Second)) // the turn ends; the queued prompt starts the next
	want = []string{`deliver {"hook_event_name":"Stop"}`, `rec {"hook_event_name":"UserPromptSubmit","prompt":"q"}`}
	if got := hooksRun(a); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	a.cue("ready", t0.Add(time.Second)) // a cue that ends busy ends the turn too
	a.cue("dialog", t0.Add(time.Second))
	a.cue("ready", t0.Add(time.Second)) // closing a dialog does not
	if got := hooksRun(a); !reflect.DeepEqual(got, []string{`deliver {"hook_event_name":"Stop"}`}) {
		t.Fatalf("got %q", got)
	}
}

func TestNoHooksUnlessAsked(t *testing.T) {
	cfg := defaultConfig()
	cfg.busyAfterSubmit = time.Second
	a := newAgent(cfg, stateReady)
	typeText(a, "m", t0)
	press(a, evEnter, t0)
	a.tick(t0.Add(time.Second))
	if a.hooks != nil {
		t.Fatalf("hooks %v", a.hooks)
	}
}
