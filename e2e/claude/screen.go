package claudeharness

import (
	"strings"
	"unicode/utf8"
)

// What Claude Code 2.1.x draws; see NOTES.md. These helpers read a
// `capture-pane -p -J` screen for the harness and its tests. They are
// observations of one version, not agentmsg's detector.
const (
	// BoxPrompt starts the input box's first line: ❯ and a no-break space.
	// A permission dialog's "❯ 1. Yes" has a plain space instead.
	BoxPrompt = "❯\u00a0"
	// BusyStatus is in the status line under the box while a turn runs
	// (hidden while the box holds text).
	BusyStatus = "esc to interrupt"
	// QueuedPlaceholder is shown (dimmed) in an empty box while messages
	// are queued behind a running turn.
	QueuedPlaceholder = "Press up to edit queued messages"
	// DialogQuestion heads a permission dialog.
	DialogQuestion = "Do you want to proceed?"
	// PastedLabel starts the label a folded paste shows in the box.
	PastedLabel = "[Pasted text #"
)

// spinnerGlyphs start the spinner line above the box while a turn runs
// ("✶ Noodling…"); the same glyphs start the line left after it ("✻ Churned
// for 0s"), which has no ellipsis.
const spinnerGlyphs = "·✢✳✶✻✽*"

// Box is the input box found on a screen.
type Box struct {
	Text   string // the box's text, lines joined with \n, trailing spaces cut
	Top    int    // line index of the rule above
	Bottom int    // line index of the rule below
	Status string // the line under the bottom rule, trimmed
}

// IsRule reports whether a line is a horizontal rule of ─ (at least 10).
func IsRule(line string) bool {
	t := strings.TrimRight(line, " ")
	return utf8.RuneCountInString(t) >= 10 && strings.Trim(t, "─") == ""
}

// FindBox finds the bottom-most input box: a line starting with BoxPrompt
// right under a rule, with the box's continuation lines (indented by two
// spaces) up to the next rule.
func FindBox(screen string) (Box, bool) {
	lines := strings.Split(screen, "\n")
	for i := len(lines) - 1; i >= 1; i-- {
		if !strings.HasPrefix(lines[i], BoxPrompt) || !IsRule(lines[i-1]) {
			continue
		}
		text := []string{strings.TrimRight(strings.TrimPrefix(lines[i], BoxPrompt), " ")}
		for j := i + 1; j < len(lines); j++ {
			if IsRule(lines[j]) {
				b := Box{Text: strings.Join(text, "\n"), Top: i - 1, Bottom: j}
				if j+1 < len(lines) {
					b.Status = strings.TrimSpace(lines[j+1])
				}
				return b, true
			}
			if !strings.HasPrefix(lines[j], "  ") {
				break
			}
			text = append(text, strings.TrimRight(lines[j][2:], " "))
		}
	}
	return Box{}, false
}

// IsBusy reports whether a turn is running: the status line says so, or
// (when the box holds text and the status line is blank) a spinner line
// with an ellipsis starts a line above the box.
func IsBusy(screen string) bool {
	b, ok := FindBox(screen)
	if !ok {
		return false
	}
	if strings.Contains(b.Status, BusyStatus) {
		return true
	}
	lines := strings.Split(screen, "\n")
	for i := b.Top - 1; i >= 0 && i >= b.Top-8; i-- {
		// At column 0: a message quoting a spinner shows it indented.
		t := strings.TrimRight(lines[i], " ")
		r, size := utf8.DecodeRuneInString(t)
		if r != utf8.RuneError && strings.ContainsRune(spinnerGlyphs, r) &&
			strings.HasPrefix(t[size:], " ") && strings.Contains(t, "…") {
			return true
		}
	}
	return false
}

// IsReady reports an empty input box on screen with no turn running.
func IsReady(screen string) bool {
	b, ok := FindBox(screen)
	return ok && b.Text == "" && !IsBusy(screen)
}

// IsQueued reports the queued-messages placeholder in the box.
func IsQueued(screen string) bool {
	b, ok := FindBox(screen)
	return ok && b.Text == QueuedPlaceholder
}

// IsDialog reports a choice dialog (permission, folder trust, API key):
// no input box, and a line whose selected choice reads "❯ N. " with a plain
// space. Which choice is selected differs: the API key dialog selects
// "2. No (recommended)", so a blind Enter refuses the key.
func IsDialog(screen string) bool {
	if _, ok := FindBox(screen); ok {
		return false
	}
	for _, line := range strings.Split(screen, "\n") {
		t := strings.TrimLeft(line, " ")
		rest, ok := strings.CutPrefix(t, "❯ ")
		if !ok {
			continue
		}
		i := 0
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		if i > 0 && strings.HasPrefix(rest[i:], ". ") {
			return true
		}
	}
	return false
}
