package profile

import (
	"regexp"
	"slices"
	"strings"

	"github.com/agentmsg/agentmsg/delivery"
)

// Droid reads Factory's Droid CLI (@factory/cli; 0.225.2 captured live in
// testdata/droid/0.225.2, offline in its Airgap Mode against e2e/fakeapi).
// The input box is a rounded box whose first row holds the prompt ">";
// continuation rows (and a long line's wrapped rows) are indented to the
// text. Above it a mode row, and while it works a spinner row; under it a
// footer row, or the slash-command list:
//
//	 ⠘ Thinking...  (Press ESC to stop)
//
//	 Auto (Off) · all actions require approval                Fake Chat
//	╭──────────────────────────────────────────────────────────────────╮
//	│ > Enter to steer · Ctrl+Enter to queue                           │
//	╰──────────────────────────────────────────────────────────────────╯
//	[⏱ 1s] ? for help                                            TMUX ⧉
//
// An empty box shows a dim placeholder ('Try "Fix all lint warnings"');
// while it works the placeholder is "Enter to steer · Ctrl+Enter to
// queue", and text typed then gets that hint as an extra row. Enter while
// it works puts the text under "Steering messages:" and sends it after the
// running turn (measured: once). Pastes of more than 8 lines or about 450
// characters fold to "[first 50 characters... N lines]".
//
// A tool approval replaces the box with a box of choices ("Yes, allow",
// "No, cancel") under "Command to approve"; the folder-trust menu ("> 1.
// Trust this folder") and the login screen ("Please login with your
// Factory account", shown without a Factory login unless Airgap Mode is
// on) have no input box either.
type Droid struct{}

// droidPlaceholders are the dim texts an empty box shows (one picked per
// session; read from the 0.225.2 binary), and the one it shows while busy.
var droidPlaceholders = []string{
	`Try "How do I handle errors in async functions?"`,
	`Try "Write unit tests for this file"`,
	`Try "Search the documentation for this library"`,
	`Try "Optimize the performance of this component"`,
	`Try "Debug why users can't login"`,
	`Try "Implement a REST endpoint for user data"`,
	`Try "Add proper error handling to API calls"`,
	`Try "Set up GitHub Actions for CI/CD"`,
	`Try "Fix all lint warnings"`,
	`Try "Create a PR with these changes"`,
	`Try "Review the changes in my current branch"`,
	`Try "Explain how the codebase is organized"`,
	`Type "Review this code for security issues"`,
	droidSteerHint,
}

// droidSteerHint is the busy box's placeholder, and its last row when text
// is typed while busy.
const droidSteerHint = "Enter to steer · Ctrl+Enter to queue"

var droidDialogs = []string{
	"command to approve", "why this needs approval", "enter select", "esc cancel",
	"please login with your factory account", "enter to confirm · esc to exit",
	"(y/n)", "[y/n]",
}

// droidBusy are the spinner row's phrases ("⠘ Thinking...  (Press ESC to
// stop)", "Streaming...").
var droidBusy = []string{"press esc to stop"}

// droidPromptRe is the box's first row: "│ > text" or "│ >".
var droidPromptRe = regexp.MustCompile(`^│ >( |$)`)

// droidTail is how many rows may follow the box: the footer, or the slash
// command list that replaces it.
const droidTail = 16

func (Droid) Read(screen []string) delivery.Reading {
	lines := trimScreen(screen)
	if len(lines) == 0 {
		return unknown("the screen is empty")
	}
	if lastIsShellPrompt(lines) {
		return shellReading()
	}
	top, text, ok := droidBox(lines)
	if !ok {
		from := bottom(lines, bottomRows+10)
		if d, ok := menuDialog(lines[from:]); ok {
			return dialog(d)
		}
		if l, ok := containsFold(lines[from:], droidDialogs...); ok {
			return dialog("dialog: " + l)
		}
		if _, ok := containsFold(lines[from:], droidBusy...); ok {
			return delivery.Reading{State: delivery.Busy, BoxRow: -1, Detail: "the agent is working; no input box on screen"}
		}
		return unknown("no Droid input box at the bottom of the screen")
	}
	hinted := false
	if rest, ok := strings.CutSuffix(text, "\n"+droidSteerHint); ok {
		text, hinted = rest, true
	}
	if !strings.Contains(text, "\n") && slices.Contains(droidPlaceholders, text) {
		hinted = hinted || text == droidSteerHint
		text = ""
	}
	r := delivery.Reading{BoxRow: top, Box: text}
	// Over the box's top edge its mode row; over that the spinner row, and
	// over that the steering messages, closed by their hint. Rows above are
	// the transcript, which may quote any of them.
	i := lastFilled(lines, top-3)
	busy := false
	if i >= 0 && startsWithSpinner(lines[i]) {
		_, busy = containsFold(lines[i:i+1], droidBusy...)
		i = lastFilled(lines, i-1)
	}
	if i >= 0 && strings.Contains(lines[i], "to modify queue") {
		r.Queued = true
	}
	return noteQueued(boxState(r, busy || hinted, "input box"))
}

// droidBox finds the live input box: the bottom-most "│ > " row under a
// rounded top edge, its rows down to the bottom edge, and under that only
// a short tail without box rows. It returns the prompt row and the text.
func droidBox(lines []string) (int, string, bool) {
	p := len(lines) - 1
	for p > 0 && !(droidPromptRe.MatchString(lines[p]) && strings.HasPrefix(lines[p-1], "╭")) {
		p--
	}
	if p <= 0 {
		return 0, "", false
	}
	inner := func(l string) string {
		l = strings.TrimPrefix(l, "│")
		return strings.TrimRight(strings.TrimSuffix(strings.TrimRight(l, " "), "│"), " ")
	}
	text := []string{strings.TrimPrefix(strings.TrimPrefix(inner(lines[p]), " >"), " ")}
	j := p + 1
	for ; j < len(lines); j++ {
		l := lines[j]
		if strings.HasPrefix(l, "╰") {
			break
		}
		if !strings.HasPrefix(l, "│") {
			return 0, "", false
		}
		text = append(text, trimIndent(inner(l), 3))
	}
	if j == len(lines) {
		return 0, "", false
	}
	tail := lines[j+1:]
	if len(tail) > droidTail {
		return 0, "", false
	}
	for _, l := range tail {
		if strings.HasPrefix(l, "│") || strings.HasPrefix(l, "╭") || strings.HasPrefix(l, "╰") {
			return 0, "", false
		}
	}
	return p, joinBox(text), true
}

func (Droid) recognize(lines []string) (string, bool) {
	if lastIsShellPrompt(lines) {
		return "", false
	}
	if _, _, ok := droidBox(lines); !ok {
		return "", false
	}
	if _, ok := containsFold(lines, "? for help", droidSteerHint, "all actions require approval", "Factory CLI", "D R O I D"); ok {
		return "screen shows Droid's input box", true
	}
	return "", false
}
