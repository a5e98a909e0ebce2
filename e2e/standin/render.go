package main

import (
	"strings"

	"github.com/mattn/go-runewidth"
)

// widths measures cells as tmux does outside CJK locales: box-drawing rules,
// "…" and other ambiguous-width runes are one cell wide.
var widths = func() *runewidth.Condition {
	c := runewidth.NewCondition()
	c.EastAsianWidth = false
	return c
}()

const (
	nbsp          = "\u00a0"
	claudePrompt  = "❯" + nbsp
	plainPrompt   = "> "
	indent        = "  "
	statusIdle    = "  ? for shortcuts"
	statusBusy    = "  ✻ Working… (esc to interrupt)"
	plainBusyLine = "working..."
)

var dialogLines = []string{
	" Bash command",
	"   rm -rf /tmp/standin-victim",
	" Do you want to proceed?",
	" ❯ 1. Yes",
	"   2. Yes, and don't ask again for this command",
	"   3. No, and tell Claude what to do differently",
	" Esc to cancel",
}

// sanitize makes text safe to print: control characters would move the
// cursor or change modes and break the row counting, so they are shown in
// caret notation; a tab becomes spaces.
func sanitize(s string) string {
	clean := true
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\t':
			b.WriteString("    ")
		case r < 0x20:
			b.WriteByte('^')
			b.WriteByte(byte(r) + '@')
		case r == 0x7f:
			b.WriteString("^?")
		case r >= 0x80 && r < 0xa0:
			b.WriteRune('\uFFFD')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// wrap breaks one line (no newlines, no control characters) into rows of at
// most width cells. It always returns at least one row.
func wrap(line string, width int) []string {
	width = max(width, 1)
	var rows []string
	start, cells := 0, 0
	for i, r := range line {
		w := widths.RuneWidth(r)
		if cells+w > width && cells > 0 {
			rows = append(rows, line[start:i])
			start, cells = i, 0
		}
		cells += w
	}
	return append(rows, line[start:])
}

// block wraps multi-line text so that every row fits in width cells, its
// very first row starting with first and every other row with more.
// first and more must be equally wide.
func block(text, first, more string, width int) []string {
	inner := width - widths.StringWidth(first)
	var rows []string
	for _, line := range strings.Split(text, "\n") {
		for _, row := range wrap(sanitize(line), inner) {
			prefix := more
			if rows == nil {
				prefix = first
			}
			rows = append(rows, prefix+row)
		}
	}
	return rows
}

// wrapAll wraps each line on its own.
func wrapAll(lines []string, width int) []string {
	var rows []string
	for _, l := range lines {
		rows = append(rows, wrap(sanitize(l), width)...)
	}
	return rows
}

// echoRows is how a submitted prompt appears in the transcript.
func echoRows(text string, width int) []string {
	return block(text, plainPrompt, indent, width)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// regionRows renders the redrawn bottom region: queued messages, then the
// input box and status line, or the permission dialog in their place.
func regionRows(a *agent, width int) []string {
	var rows []string
	if a.cfg.style != "plain" {
		// Claude Code 2.1.197 leaves a blank row between the transcript
		// and what it draws under it.
		rows = append(rows, "")
	}
	// As Claude Code 2.1.197 draws them: indented above the box, with a
	// plain space after the glyph (the box's own has a no-break space).
	for _, q := range a.queued {
		rows = append(rows, wrap(sanitize("  ❯ "+firstLine(q)), width)...)
	}
	switch {
	case a.state == stateDialog:
		rows = append(rows, wrapAll(dialogLines, width)...)
	case a.cfg.style == "plain":
		rows = append(rows, plainBox(a, width)...)
	default:
		rows = append(rows, claudeBox(a, width)...)
	}
	return rows
}

func plainBox(a *agent, width int) []string {
	if a.state == stateBusy {
		return wrap(plainBusyLine, width)
	}
	return block(a.draft.display(), plainPrompt, indent, width)
}

func claudeBox(a *agent, width int) []string {
	rule := strings.Repeat("─", max(width, 1))
	rows := []string{rule}
	shown := a.draft.display()
	if shown == "" && len(a.queued) > 0 {
		// A dim placeholder inside the empty box, as the real one shows.
		shown = "Press up to edit queued messages"
	}
	rows = append(rows, block(shown, claudePrompt, indent, width)...)
	rows = append(rows, rule)
	return append(rows, wrapAll(claudeStatus(a), width)...)
}

// claudeStatus is the text under the box. While messages are queued the hint
// joins the busy line rather than replacing it, so a sender still sees that
// the agent is busy, as on the real screen.
func claudeStatus(a *agent) []string {
	var lines []string
	if a.state == stateBusy {
		lines = append(lines, statusBusy)
	}
	if lines == nil {
		lines = []string{statusIdle}
	}
	return lines
}
