package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

type agentState int

const (
	stateReady agentState = iota
	stateBusy
	stateDialog
)

var stateNames = map[string]agentState{"ready": stateReady, "busy": stateBusy, "dialog": stateDialog}

// config holds the behaviour chosen by flags.
type config struct {
	style           string // "claude" or "plain"
	queue           bool
	busyAfterSubmit time.Duration
	enterGuard      time.Duration
	foldBytes       int // <= 0: never fold by size
	foldLines       int // <= 0: never fold by line count
	dropEnter       int
	echoDelay       time.Duration // a submitted prompt shows in the transcript this late
	outputLines     int           // lines of output the agent prints under each prompt
	bracketedPaste  bool          // ask the terminal for bracketed paste, as agent CLIs do
	onSubmit        string        // shell command run for each submitted prompt (empty: none)
	onTurnEnd       string        // shell command run when a turn ends (empty: none)
}

// hookRun is one run of a hook command: the command and what it reads on
// stdin.
type hookRun struct {
	command string
	input   []byte
}

// record is one line of the log file.
type record struct {
	T      string `json:"t"`
	Kind   string `json:"kind"`
	Text   string `json:"text"`
	Queued bool   `json:"queued,omitempty"`
}

// agent is the stand-in's behaviour, free of I/O: the caller feeds it events
// and the time, then drains records (for the log) and echoes (submitted texts
// for the transcript) and checks exitCode.
type agent struct {
	cfg       config
	state     agentState
	busyUntil time.Time // zero while busy: busy until a cue says otherwise
	draft     draft
	queued    []string
	pastes    int // folded pastes so far, numbers their labels
	dropsLeft int
	lastInput time.Time // last typed rune or paste, for the enter guard

	records    []record
	hooks      []hookRun // due to run, in order
	echoes     []string
	lateEchoes []lateEcho // submitted, not yet shown (echoDelay)
	exitCode   int        // non-zero: the program must stop with this status
}

type lateEcho struct {
	at   time.Time
	text string
}

func newAgent(cfg config, initial agentState) *agent {
	return &agent{cfg: cfg, state: initial, dropsLeft: cfg.dropEnter}
}

func (a *agent) log(now time.Time, kind, text string, queued bool) {
	a.records = append(a.records, record{
		T: now.UTC().Format(time.RFC3339Nano), Kind: kind, Text: text, Queued: queued,
	})
}

// handle applies one input event.
func (a *agent) handle(ev event, now time.Time) {
	if ev.kind == evInterrupt {
		// Like a real CLI killed by C-c: whatever else is going on, it is over.
		a.log(now, "interrupt", "", false)
		a.exitCode = 130
		return
	}
	if a.state == stateDialog {
		a.dialogInput(ev, now)
		return
	}
	switch ev.kind {
	case evRune:
		a.draft.addText(string(ev.r))
		a.lastInput = now
	case evPaste:
		a.paste(ev.text)
		a.lastInput = now
	case evBackspace:
		a.draft.backspace()
	case evEnter:
		a.enter(now)
	}
}

func (a *agent) paste(text string) {
	lines := strings.Count(text, "\n")
	if a.cfg.foldBytes > 0 && len(text) > a.cfg.foldBytes || a.cfg.foldLines > 0 && lines+1 > a.cfg.foldLines {
		a.pastes++
		a.draft.addFolded(text, fmt.Sprintf("[Pasted text #%d +%d lines]", a.pastes, lines))
		return
	}
	a.draft.addText(text)
}

func (a *agent) enter(now time.Time) {
	switch {
	case a.draft.empty():
	case a.cfg.enterGuard > 0 && now.Sub(a.lastInput) < a.cfg.enterGuard:
		// Codex-style paste-burst detection: Enter right after fast input
		// is taken as part of the text.
		a.draft.addText("\n")
	case a.state == stateBusy:
		if a.cfg.queue {
			a.queued = append(a.queued, a.draft.text())
			a.draft.clear()
		}
	case a.dropsLeft > 0:
		a.dropsLeft--
	default:
		a.submit(a.draft.text(), false, now)
		a.draft.clear()
	}
}

func (a *agent) submit(text string, queued bool, now time.Time) {
	a.log(now, "prompt", text, queued)
	if a.cfg.onSubmit != "" {
		// What Claude Code gives its UserPromptSubmit hook, in the fields a
		// hook reads.
		input, _ := json.Marshal(map[string]string{"hook_event_name": "UserPromptSubmit", "prompt": text})
		a.hooks = append(a.hooks, hookRun{a.cfg.onSubmit, input})
	}
	if a.cfg.echoDelay > 0 {
		a.lateEchoes = append(a.lateEchoes, lateEcho{now.Add(a.cfg.echoDelay), text})
	} else {
		a.echoes = append(a.echoes, text)
	}
	if a.cfg.busyAfterSubmit > 0 {
		a.state = stateBusy
		a.busyUntil = now.Add(a.cfg.busyAfterSubmit)
	}
}

// dialogInput logs every key or paste: the tests assert that none arrives.
func (a *agent) dialogInput(ev event, now time.Time) {
	a.log(now, "dialog-key", describe(ev), false)
	if ev.kind == evEsc || ev.kind == evEnter || ev.kind == evRune && ev.r == '1' {
		a.becomeReady(now) // cancelled or approved
	}
}

func describe(ev event) string {
	switch ev.kind {
	case evEnter:
		return "enter"
	case evEsc:
		return "esc"
	case evBackspace:
		return "backspace"
	case evPaste:
		return "paste:" + ev.text
	default:
		return string(ev.r)
	}
}

// becomeReady ends busy or dialog state and submits what was queued
// meanwhile. The end of busy is the end of a turn: its hook runs before the
// queued prompts start the next one.
func (a *agent) becomeReady(now time.Time) {
	if a.state == stateBusy && a.cfg.onTurnEnd != "" {
		input, _ := json.Marshal(map[string]string{"hook_event_name": "Stop"})
		a.hooks = append(a.hooks, hookRun{a.cfg.onTurnEnd, input})
	}
	a.state, a.busyUntil = stateReady, time.Time{}
	q := a.queued
	a.queued = nil
	for _, text := range q {
		a.submit(text, true, now)
	}
}

// cue switches state on the test's request; unknown words are ignored.
func (a *agent) cue(word string, now time.Time) {
	st, ok := stateNames[word]
	if !ok {
		return
	}
	switch st {
	case stateReady:
		a.becomeReady(now)
	case stateBusy:
		a.state, a.busyUntil = stateBusy, time.Time{}
	case stateDialog:
		a.state = stateDialog
	}
}

// deadline is when busy-after-submit ends or a late echo is due, whichever
// comes first, or zero.
func (a *agent) deadline() time.Time {
	var d time.Time
	if a.state == stateBusy {
		d = a.busyUntil
	}
	if len(a.lateEchoes) > 0 && (d.IsZero() || a.lateEchoes[0].at.Before(d)) {
		d = a.lateEchoes[0].at
	}
	return d
}

// tick shows the late echoes that are due, and ends a timed busy period
// once its deadline has passed.
func (a *agent) tick(now time.Time) {
	for len(a.lateEchoes) > 0 && !now.Before(a.lateEchoes[0].at) {
		a.echoes = append(a.echoes, a.lateEchoes[0].text)
		a.lateEchoes = a.lateEchoes[1:]
	}
	if a.state == stateBusy && !a.busyUntil.IsZero() && !now.Before(a.busyUntil) {
		a.becomeReady(now)
	}
}
