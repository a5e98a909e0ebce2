package delivery

import (
	"regexp"
	"strings"
)

// State is what an agent's screen says about typing into it now.
type State string

const (
	Ready   State = "ready"   // input box on screen and empty
	Busy    State = "busy"    // the agent is working
	Dialog  State = "dialog"  // a permission, trust or selection dialog is open
	Draft   State = "draft"   // the box holds text that is not ours (a person typing)
	Unknown State = "unknown" // no input box found
	// Locked is no screen state: another sender held the pane's lock.
	Locked State = "locked"
	// Gone is none either: the pane found for the agent is no longer
	// there (its session ended, it moved, or the server was replaced).
	Gone State = "gone"
)

// States are every screen state, with what each means.
var States = []struct {
	State State
	Doc   string
}{
	{Ready, "its input box is on screen and empty"},
	{Busy, "the agent is working"},
	{Dialog, "a permission, trust or selection dialog is open"},
	{Draft, "its box holds text that is not ours (a person typing)"},
	{Unknown, "no input box its profile knows is on screen"},
	{Locked, "another sender held the pane"},
	{Gone, "the pane is no longer there"},
}

// Reading is one interpretation of a screen.
type Reading struct {
	State State
	// Box is the text in the input box, continuation lines joined with
	// "\n"; empty when the box is empty or absent.
	Box string
	// BoxRow is the index of the box's first row in the lines read; rows
	// above it are the transcript. -1 when there is no box.
	BoxRow int
	// DialogRow, for a dialog the profile can place, is the index of its
	// first row: rows above it are the transcript, where our id proves a
	// submission as it does above a box (a fast agent opens a permission
	// dialog right after taking a message). 0, the default, places
	// nothing: nothing on the screen is proof then.
	DialogRow int
	// Detail says why, for a person: "permission dialog: Do you want to proceed?".
	Detail string
	// Queued: the screen shows messages the agent has queued behind its
	// current turn (Claude Code: "Press up to edit queued messages"), so an
	// id seen above the box may be waiting rather than taken.
	Queued bool
	// Shell: the pane shows a shell prompt, not an agent: typed text would
	// run as a command.
	Shell bool
	// Hold: the agent is busy in a way that loses or mangles what is typed
	// now, even where it queues what comes during a turn (Gemini CLI
	// running its hooks), so nothing is typed until it is over.
	Hold bool
}

// ScreenReader interprets the visible lines of an agent's pane. Agent
// profiles implement it; Generic handles Claude-Code-like boxes and plain
// "> " prompts.
type ScreenReader interface {
	Read(lines []string) Reading
}

// Generic reads the two box shapes most agent CLIs use: a prompt line
// starting with ❯ between two horizontal rules (Claude Code), and a plain
// "> " prompt on the last line. It looks only at the bottom of the screen:
// a ❯ or "Do you want" higher up belongs to the transcript.
type Generic struct{}

const (
	nbsp = "\u00a0"
	// bottomRows is how far up from the last non-blank row the box or a
	// dialog may start.
	bottomRows = 14
)

var (
	// A selection menu's cursor: "❯ 1. Yes".
	menuRe = regexp.MustCompile(`^\s*[❯›>]\s*\d+\.\s`)
	// Phrases that only dialogs put at the bottom of the screen.
	dialogPhrases = []string{
		"do you want to proceed", "do you want to make this edit", "do you want to create",
		"do you trust the files", "esc to cancel", "(y/n)", "[y/n]", "press enter to continue",
	}
	busyPhrases = []string{"esc to interrupt", "ctrl+c to interrupt"}
)

func (Generic) Read(lines []string) Reading {
	lines = TrimScreen(lines)
	from := max(0, len(lines)-bottomRows)
	bottom := lines[from:]

	if r, below, ok := readRuledBox(lines, from); ok {
		// Only what is drawn under the box can be a menu or dialog of the
		// agent's; lines above it are transcript, which may quote anything.
		if d := findDialog(below); d != "" {
			return Reading{State: Dialog, BoxRow: -1, Detail: d}
		}
		return r
	}
	if r, ok := readPlainPrompt(lines); ok {
		// A menu's cursor on the prompt's row ("> 1. Yes") is a menu; one
		// above it is the transcript's (a message may quote one), and one
		// under it is the prompt's own text. A question above it may be
		// the one the prompt answers.
		if d := findMenu(lines[r.BoxRow : r.BoxRow+1]); d != "" {
			return Reading{State: Dialog, BoxRow: -1, Detail: d}
		}
		if d := findQuestion(lines[from:r.BoxRow]); d != "" {
			return Reading{State: Dialog, BoxRow: -1, Detail: d}
		}
		return r
	}
	if d := findDialog(bottom); d != "" {
		return Reading{State: Dialog, BoxRow: -1, Detail: d}
	}
	if busy(bottom) {
		return Reading{State: Busy, BoxRow: -1, Detail: "the agent is working"}
	}
	return Reading{State: Unknown, BoxRow: -1, Detail: "the bottom of the screen shows neither a prompt nor a dialog"}
}

// readRuledBox finds "❯ text" lines between two rules of ─, the lower rule
// at the bottom of the screen (from on). below is what is drawn under it.
func readRuledBox(lines []string, from int) (r Reading, below []string, ok bool) {
	// The bottom rule: the last rule line with a ❯ line somewhere above it
	// before the previous rule.
	for bot := len(lines) - 1; bot > from; bot-- {
		if !isRule(lines[bot]) {
			continue
		}
		// The top rule may be far up: a person's draft can be tall.
		top := bot - 1
		for top >= 0 && !isRule(lines[top]) {
			top--
		}
		if top < 0 || top == bot-1 {
			return Reading{}, nil, false
		}
		first := strings.TrimLeft(lines[top+1], " │")
		body, isPrompt := strings.CutPrefix(first, "❯")
		if !isPrompt || menuRe.MatchString(first) {
			return Reading{}, nil, false
		}
		box := []string{strings.TrimPrefix(strings.TrimPrefix(body, nbsp), " ")}
		for _, l := range lines[top+2 : bot] {
			box = append(box, strings.TrimPrefix(strings.TrimLeft(l, "│"), "  "))
		}
		r = Reading{BoxRow: top, Box: strings.TrimRight(strings.Join(box, "\n"), " \n")}
		// The status lines just above and below the box say whether the
		// agent is working.
		around := lines[max(0, top-3):top]
		around = append(around[:len(around):len(around)], lines[bot+1:]...)
		switch {
		case busy(around):
			r.State, r.Detail = Busy, "the agent is working"
		case r.Box != "":
			r.State, r.Detail = Draft, "the input box holds text that is not ours"
		default:
			r.State = Ready
		}
		return r, lines[bot+1:], true
	}
	return Reading{}, nil, false
}

// readPlainPrompt finds "> text" on the last lines, with continuation lines
// indented by two spaces under it.
func readPlainPrompt(lines []string) (Reading, bool) {
	for i := len(lines) - 1; i >= 0 && i >= len(lines)-bottomRows; i-- {
		l := lines[i]
		if body, ok := strings.CutPrefix(l, "> "); ok || l == ">" {
			if !ok {
				body = ""
			}
			box := append([]string{body}, lines[i+1:]...)
			for j := 1; j < len(box); j++ {
				box[j] = strings.TrimPrefix(box[j], "  ")
			}
			r := Reading{State: Ready, BoxRow: i, Box: strings.TrimRight(strings.Join(box, "\n"), " \n")}
			if r.Box != "" {
				r.State, r.Detail = Draft, "the prompt holds text that is not ours"
			}
			return r, true
		}
		if !strings.HasPrefix(l, "  ") {
			return Reading{}, false
		}
	}
	return Reading{}, false
}

func findDialog(bottom []string) string {
	if d := findMenu(bottom); d != "" {
		return d
	}
	return findQuestion(bottom)
}

// findMenu describes the first selection menu cursor in lines, or "".
func findMenu(lines []string) string {
	for _, l := range lines {
		if menuRe.MatchString(l) {
			return "selection menu: " + strings.TrimSpace(l)
		}
	}
	return ""
}

// findQuestion describes the first line holding a dialog's phrase, or "".
func findQuestion(bottom []string) string {
	for _, l := range bottom {
		low := strings.ToLower(l)
		for _, p := range dialogPhrases {
			if strings.Contains(low, p) {
				return "dialog: " + strings.TrimSpace(l)
			}
		}
	}
	return ""
}

func busy(lines []string) bool {
	for _, l := range lines {
		low := strings.ToLower(l)
		for _, p := range busyPhrases {
			if strings.Contains(low, p) {
				return true
			}
		}
	}
	return false
}

// isRule is a line of at least 8 ─, possibly with box corners.
func isRule(l string) bool {
	l = strings.Trim(l, " ╭╮╰╯")
	return strings.Count(l, "─") >= 8 && strings.Trim(l, "─") == ""
}

// TrimScreen drops trailing spaces on each line (not no-break spaces:
// Claude Code marks its box with one) and blank lines at the end: the first
// step of every screen reader.
func TrimScreen(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = strings.TrimRight(l, " ")
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}
