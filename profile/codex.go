package profile

import (
	"regexp"
	"slices"
	"strings"

	"github.com/agentmsg/agentmsg/delivery"
)

// Codex reads OpenAI Codex CLI's TUI (codex-rs/tui; 0.169.0 captured live
// in testdata/codex/0.169.0, older shapes reconstructed from its snapshot
// tests). The composer is the bottom-most line starting with › at column 0,
// continuation lines indented by two, then a blank line and a footer whose
// lines are indented by two:
//
//   - Working (0s • esc to interrupt)
//
//     › Ask Codex to do anything        (dim placeholder when empty)
//
//     GPT-6.1-Sol default · ~/project
//     ← for agents · ? for shortcuts
//
// The composer grows with its text until it fills the screen (a 12-line
// text at 40 rows starts 14 rows from the bottom), so the whole screen is
// read, not only its bottom rows; once it is taller than the screen its
// first row is gone and the screen reads Unknown (the profile sends such
// texts as a pointer instead). Text typed while a turn runs steers it
// (Enter) or queues (Tab).
//
// Older versions draw the composer as lines starting with ▌, footer
// "⏎ send   ⌃J newline …". An approval overlay replaces the composer with
// "Would you like to run the following command?" and "› 1. Yes, proceed".
type Codex struct{}

// codexPlaceholders are the dim hints an empty composer shows (one chosen at
// random per session), from codex-rs/tui's PLACEHOLDERS and default text.
// Without colour they read like typed text. A person's draft that is exactly
// one of them reads as empty.
var codexPlaceholders = []string{
	"Ask Codex to do anything",
	"Explain this codebase",
	"Summarize recent commits",
	"Implement {feature}",
	"Find and fix a bug in @filename",
	"Write tests for @filename",
	"Improve documentation in @filename",
	"Run /review on my current changes",
	"Use /skills to list available skills",
	"Explore /status to view session info",
}

var codexDialogs = []string{
	"would you like to", "press enter to confirm or esc to cancel", "allow command?",
	"do you trust", "(y/n)", "[y/n]",
	"esc dismiss & close", // the startup warnings overlay (f2)
}

// codexModelRe is the footer row naming the model and the directory:
// "  GPT-6.1-Sol default · ~/project".
var codexModelRe = regexp.MustCompile(`^  \S.* · [~/]`)

// codexFooter are hints of Codex's footer under the composer.
var codexFooter = []string{"context left", "? for shortcuts", "⏎ send", "tab to queue message", "f2 to view", "← for agents"}

func (Codex) Read(screen []string) delivery.Reading {
	lines := trimScreen(screen)
	if len(lines) == 0 {
		return unknown("the screen is empty")
	}
	if lastIsShellPrompt(lines) {
		return shellReading()
	}
	from := bottom(lines, bottomRows)
	top, text, ok := codexComposer(lines, 0)
	// A menu's selected choice at column 0 ("› 1. Yes, proceed (y)") is
	// no composer: the menu has taken its place.
	ok = ok && !menuRe.MatchString(lines[top])
	if !ok {
		if d, ok := menuDialog(lines[from:]); ok {
			return dialog(d)
		}
		if l, ok := containsFold(lines[from:], codexDialogs...); ok {
			return dialog("dialog: " + l)
		}
		if _, ok := containsFold(lines[from:], "esc to interrupt"); ok {
			return delivery.Reading{State: delivery.Busy, BoxRow: -1, Detail: "the agent is working; no composer on screen"}
		}
		return unknown("no Codex composer at the bottom of the screen")
	}
	// Only what is drawn under the composer can be a menu of Codex's: above
	// it is the transcript, where a message may quote one.
	if d, ok := menuDialog(lines[top+1:]); ok {
		return dialog(d)
	}
	r := delivery.Reading{BoxRow: top, Box: text}
	if !strings.Contains(r.Box, "\n") && slices.Contains(codexPlaceholders, strings.TrimSpace(r.Box)) {
		r.Box = ""
	}
	above := lines[max(0, top-8):top]
	r.Queued = codexQueued(above)
	// The status row starts at column 0 with a bullet that blinks ("•
	// Working (3s • esc to interrupt)", "◦ Working …"); a quoted one is
	// indented under its message.
	busy := slices.ContainsFunc(above, func(l string) bool {
		return (strings.HasPrefix(l, "• ") || strings.HasPrefix(l, "◦ ")) && strings.Contains(strings.ToLower(l), "esc to interrupt")
	})
	if !busy {
		// While the reply streams, Codex 0.169 shows no "Working" line:
		// a prompt answered but without its "Worked for" line is a turn
		// still running, and typing now shows "tab to queue message".
		// (0.169's footer names the model and directory; older
		// releases drew no end-of-turn line for a short turn.)
		_, queueHint := containsFold(lines[top:], "tab to queue message")
		busy = queueHint || (codexNewFooter(lines[top:]) && codexTurnRunning(lines[:top]))
	}
	return boxState(r, busy, "composer")
}

// codexQueued reports messages queued behind the running turn in the rows
// above the composer: "  ↳ text" opening a block of its own (a blank row
// above it) or under the header "• Messages to be submitted after next
// tool call". A "↳" a message quotes sits inside that message's block.
func codexQueued(above []string) bool {
	for i, l := range above {
		if !strings.HasPrefix(l, "  ↳ ") {
			continue
		}
		if i == 0 || above[i-1] == "" || strings.HasPrefix(above[i-1], "  ↳ ") ||
			strings.Contains(above[i-1], "Messages to be submitted") {
			return true
		}
	}
	return false
}

// codexComposer finds the composer: its first row and its text. Below it
// only continuation lines, blank lines and the footer may follow; a › line
// followed by anything else is a past prompt in the transcript. A composer
// taller than its room scrolls: its first visible row ends with ↑ (its last
// with ↓), and the text read starts with a "…" line for the hidden part.
func codexComposer(lines []string, from int) (int, string, bool) {
	for i := len(lines) - 1; i >= from; i-- {
		l := lines[i]
		switch {
		case l == "›" || strings.HasPrefix(l, "› "):
			first, above := cutScroll(strings.TrimPrefix(strings.TrimPrefix(l, "›"), " "), "↑")
			var text []string
			if above {
				text = append(text, "…")
			}
			text = append(text, first)
			j := i + 1
			for ; j < len(lines) && lines[j] != ""; j++ {
				if !strings.HasPrefix(lines[j], "  ") {
					return 0, "", false
				}
				t, below := cutScroll(strings.TrimPrefix(lines[j], "  "), "↓")
				text = append(text, t)
				if below {
					text = append(text, "…")
				}
			}
			for ; j < len(lines); j++ {
				if lines[j] != "" && !strings.HasPrefix(lines[j], "  ") {
					return 0, "", false
				}
			}
			return i, joinBox(text), true
		case strings.HasPrefix(l, "▌"):
			// Older composer: a column of ▌, then the key hints.
			end := i
			for i > from && strings.HasPrefix(lines[i-1], "▌") {
				i--
			}
			for _, f := range lines[end+1:] {
				if f != "" && !strings.Contains(f, "send") {
					return 0, "", false
				}
			}
			var text []string
			for _, t := range lines[i : end+1] {
				text = append(text, strings.TrimPrefix(strings.TrimPrefix(t, "▌"), " "))
			}
			return i, joinBox(text), true
		}
	}
	return 0, "", false
}

// codexNewFooter reports the footer of 0.169: a row naming the model and
// the directory.
func codexNewFooter(below []string) bool {
	for _, l := range below {
		if codexModelRe.MatchString(l) {
			return true
		}
	}
	return false
}

// codexTurnRunning reads the transcript above the composer from the bottom
// up: an answer ("• …") under the last prompt ("› …" at column 0) with no
// end-of-turn line after it ("Worked for 6s • 15:38", "■ …" for an
// interruption or error) is a turn still streaming.
func codexTurnRunning(transcript []string) bool {
	answered := false
	for i := len(transcript) - 1; i >= 0; i-- {
		l := transcript[i]
		t := strings.TrimLeft(l, " ")
		switch {
		case strings.HasPrefix(t, "Worked for ") || strings.HasPrefix(t, "■ ") || strings.HasPrefix(t, "─ Worked for"):
			return false
		case strings.HasPrefix(l, "• "):
			answered = true
		case strings.HasPrefix(l, "› "):
			return answered
		}
	}
	return false
}

// cutScroll removes a scroll indicator drawn at the right end of a
// composer row, after a gap of spaces.
func cutScroll(row, arrow string) (string, bool) {
	t := strings.TrimRight(row, " ")
	if rest, ok := strings.CutSuffix(t, arrow); ok && strings.HasSuffix(rest, "  ") {
		return strings.TrimRight(rest, " "), true
	}
	return row, false
}

func (c Codex) recognize(lines []string) (string, bool) {
	if lastIsShellPrompt(lines) {
		return "", false
	}
	if _, ok := containsFold(lines, ">_ OpenAI Codex"); ok {
		return "screen shows the OpenAI Codex banner", true
	}
	if top, text, ok := codexComposer(lines, 0); ok {
		if _, ok := containsFold(lines[top:], codexFooter...); ok {
			return "screen shows Codex's composer", true
		}
		for _, l := range lines[top+1:] {
			if codexModelRe.MatchString(l) {
				return "screen shows Codex's composer", true
			}
		}
		// Scrolled (↑ on its first row): only Codex's composer does that.
		if strings.HasPrefix(text, "…\n") {
			return "screen shows Codex's composer", true
		}
	}
	return "", false
}
