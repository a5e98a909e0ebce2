package profile

import (
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/agentmsg/agentmsg/delivery"
)

// Claude reads Claude Code's screen (2.1.x, e2e/claude/NOTES.md). Its input
// box is a line starting with ❯ and a no-break space right under a rule of
// ─, closed by another rule, with a status line under it:
//
//	────────────
//	❯ <text>           (❯ + U+00A0; continuation lines indented by two)
//	────────────
//	  ? for shortcuts · ← for agents
//
// Only the bottom-most pair of rules counts: a ❯ anywhere else is the
// transcript (past prompts use a plain space) or a dialog's choice.
type Claude struct{}

const (
	claudeQueued = "Press up to edit queued messages"
	claudeResume = "Resume this session with:"
	// Spinner glyphs start the line above the box while a turn runs
	// ("✶ Julienning…"); the line left after a turn ("✻ Churned for 0s")
	// has no ellipsis.
	claudeSpinner = "·✢✳✶✻✽*"
)

var (
	// A slash-command picker row under the box: "/exit   Exit the CLI".
	claudePickerRe = regexp.MustCompile(`^/\S+\s{2,}\S`)
	claudeDialogs  = []string{
		"do you want to proceed", "do you want to", "esc to cancel", "enter to confirm",
		"do you trust", "(y/n)", "[y/n]",
	}
)

func (Claude) Read(screen []string) delivery.Reading {
	lines := trimScreen(screen)
	if len(lines) == 0 {
		return unknown("the screen is empty")
	}
	top, bot, ok := claudeBox(lines)
	// After /exit the last frame stays on screen above the shell: a box is
	// only live when no exit notice or shell prompt follows it.
	below := lines
	if ok {
		below = lines[bot+1:]
	}
	if _, exited := containsFold(below, claudeResume); exited || lastIsShellPrompt(below) {
		return shellReading()
	}
	if !ok {
		from := bottom(lines, bottomRows+6)
		if d, ok := menuDialog(lines[from:]); ok {
			return dialog(d)
		}
		if l, ok := containsFold(lines[from:], claudeDialogs...); ok {
			return dialog("dialog: " + l)
		}
		if claudeBusy(lines, len(lines), nil) {
			return delivery.Reading{State: delivery.Busy, BoxRow: -1, Detail: "the agent is working; no input box on screen"}
		}
		return unknown("no Claude Code input box at the bottom of the screen")
	}

	// Menus drawn under the box take Enter: the slash-command picker runs
	// the highlighted command.
	near := below[:min(len(below), 16)]
	for _, l := range near {
		if claudePickerRe.MatchString(l) {
			return dialog("slash-command picker open: Enter would run " + strings.Fields(l)[0])
		}
	}
	if d, ok := menuDialog(near); ok {
		return dialog(d)
	}

	first := strings.TrimPrefix(lines[top+1], "❯")
	first = strings.TrimPrefix(first, nbsp)
	first = strings.TrimPrefix(first, " ")
	text := []string{first}
	for _, l := range lines[top+2 : bot] {
		text = append(text, strings.TrimPrefix(l, "  "))
	}
	r := delivery.Reading{BoxRow: top, Box: joinBox(text)}
	if r.Box == claudeQueued {
		// Dimmed placeholder; without capture -e it reads as text.
		r.Box, r.Queued = "", true
	}
	for _, l := range lines[max(0, top-8):top] {
		// A queued message waits above the box, indented: "  ❯ MSG…".
		if strings.HasPrefix(l, "  ❯ ") {
			r.Queued = true
		}
	}
	return noteQueued(boxState(r, claudeBusy(lines, top, near[:min(len(near), 2)]), "input box"))
}

// claudeBox finds the bottom-most pair of rules with a box prompt under the
// upper one. ok is false when the bottom-most pair is no box (a dialog).
func claudeBox(lines []string) (top, bot int, ok bool) {
	bot = len(lines) - 1
	for bot >= 0 && !isRule(lines[bot]) {
		bot--
	}
	if bot < 1 {
		return 0, 0, false
	}
	top = bot - 1
	for top >= 0 && !isRule(lines[top]) {
		top--
	}
	if top < 0 || top+1 == bot || !isClaudePrompt(lines[top+1]) {
		return 0, 0, false
	}
	return top, bot, true
}

func isClaudePrompt(l string) bool {
	if menuRe.MatchString(l) {
		return false
	}
	return l == "❯" || strings.HasPrefix(l, "❯"+nbsp) || strings.HasPrefix(l, "❯ ")
}

// claudeBusy: the status line under the box says "esc to interrupt", or
// (the status line is blank while the box holds text) a spinner line with an
// ellipsis stands in the few lines above row top.
func claudeBusy(lines []string, top int, status []string) bool {
	if _, ok := containsFold(status, "esc to interrupt"); ok {
		return true
	}
	for _, l := range lines[max(0, top-8):top] {
		r, size := utf8.DecodeRuneInString(l)
		if r != utf8.RuneError && strings.ContainsRune(claudeSpinner, r) &&
			strings.HasPrefix(l[size:], " ") && strings.Contains(l, "…") {
			return true
		}
		if strings.Contains(strings.ToLower(l), "esc to interrupt") {
			return true
		}
	}
	return false
}

func (c Claude) recognize(lines []string) (string, bool) {
	r := c.Read(lines)
	switch {
	case r.Shell:
		return "", false
	case r.BoxRow >= 0:
		return "screen shows Claude Code's input box", true
	case r.State == delivery.Dialog:
		if _, ok := containsFold(lines, "Claude Code"); ok {
			return "screen shows a Claude Code dialog", true
		}
	}
	return "", false
}
