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

// claudeTornRows: how far above the box a half-drawn dialog is looked for,
// by its selected choice ("❯ 1. Yes"; an assistant's "● 1." list is not one).
// Only under the rule a dialog starts with: above it is the transcript,
// where a message may quote a dialog (submitted prompts show there with
// their lines indented: "  ❯ 1. Yes").
const claudeTornRows = 12

var claudeChoiceRe = regexp.MustCompile(`^\s*│?\s*❯\s*\d+\.\s`)

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
			return claudeDialog(lines, d)
		}
		if l, ok := containsFold(lines[from:], claudeDialogs...); ok {
			return claudeDialog(lines, "dialog: "+l)
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
	// A dialog drawn over the box replaces it from the top down: a frame
	// caught half drawn shows the dialog, from its rule on, above the old
	// box.
	if l, ok := claudeTornDialog(lines, top); ok {
		return dialog("dialog (half drawn over the box): " + strings.TrimSpace(l))
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
	// Queued messages wait right on top of the box, indented ("  ❯ MSG…");
	// the transcript ends with a blank row above it.
	for i := top - 1; i >= 0 && lines[i] != ""; i-- {
		if strings.HasPrefix(lines[i], "  ❯ ") {
			r.Queued = true
		}
	}
	return noteQueued(boxState(r, claudeBusy(lines, top, near[:min(len(near), 2)]), "input box"))
}

// claudeDialog is a dialog in place of the box, placed at the rule it
// starts with (the transcript draws no rule at column 0), so that our id
// in the transcript above it proves a message taken: Claude Code opens a
// permission dialog as soon as its model answers with a tool call.
func claudeDialog(lines []string, detail string) delivery.Reading {
	r := dialog(detail)
	for i := len(lines) - 1; i > 0; i-- {
		if isRule(lines[i]) {
			r.DialogRow = i
			break
		}
	}
	return r
}

// claudeTornDialog finds a dialog's selected choice within claudeTornRows
// above the box's top rule (row top) and under the nearest rule above it,
// the dialog's own: the transcript draws no rule at column 0.
func claudeTornDialog(lines []string, top int) (string, bool) {
	for r := top - 1; r >= 0; r-- {
		if !isRule(lines[r]) {
			continue
		}
		for _, l := range lines[max(r+1, top-claudeTornRows):top] {
			if claudeChoiceRe.MatchString(l) {
				return l, true
			}
		}
		return "", false
	}
	return "", false
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
// ellipsis, or "esc to interrupt", stands in the few lines above row top.
// The spinner starts at column 0, where the transcript has no quoted text:
// a message's or an answer's lines after its first are indented.
func claudeBusy(lines []string, top int, status []string) bool {
	if _, ok := containsFold(status, "esc to interrupt"); ok {
		return true
	}
	for _, l := range lines[max(0, top-8):top] {
		r, size := utf8.DecodeRuneInString(l)
		if r != utf8.RuneError && strings.ContainsRune(claudeSpinner, r) && strings.HasPrefix(l[size:], " ") &&
			(strings.Contains(l, "…") || strings.Contains(strings.ToLower(l), "esc to interrupt")) {
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
