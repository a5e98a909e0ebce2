package profile

import (
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/agentmsg/agentmsg/delivery"
)

// Gemini reads Gemini CLI and its fork Qwen Code (Ink TUIs). Gemini CLI
// 0.61.0 was captured live (testdata/gemini/0.61.0); the input box sits
// under a rule, an optional hint row, and comes in two shapes by colour
// support. With COLORTERM=truecolor it is drawn between a row of ▄ above
// and a row of ▀ below:
//
//	 ⠸ Thinking... (esc to cancel, 11s)                      ? for shortcuts
//	──────────────────────────────────────────────────────────────────────
//	 Shift+Tab to accept edits
//	▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄
//	 >   Type your message or @path/to/file
//	▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀▀
//	 workspace (/directory)              sandbox                   /model
//	 ~/project                           no sandbox                  Auto
//
// and with 256 colours it has no border rows at all. Past prompts in the
// transcript look the same (" > text", between ▄ and ▀ rows in truecolor),
// so the live box is the bottom-most prompt with nothing under it but its
// own text and the footer (or a completion list): no rule, no border, no
// dialog box. Releases of 2025 drew a rounded box (╭ │ > … │ ╰) instead;
// that shape still reads. The prompt is ">" ("*" in YOLO mode, "!" in
// shell mode, "(r:)" while searching). A tool confirmation hides the input
// box and shows "● 1. Allow once" choices in a rounded box. "? for
// shortcuts" is a hint over the rule, never a question.
type Gemini struct {
	Product string // "Gemini CLI", "Qwen Code": for details
}

// geminiPlaceholders are what an empty box shows, dimmed.
var geminiPlaceholders = []string{
	"Type your message or @path/to/file",
	"Type your shell command",
	"Press 'Esc' for NORMAL mode.",
	"Press 'i' for INSERT mode.",
}

var geminiDialogs = []string{
	"allow execution", "apply this change?", "do you want to proceed?", "waiting for user confirmation",
	"do you trust this folder", "how would you like to authenticate", "(y/n)", "[y/n]",
}

// geminiPromptRe is the first row of an input box: the prompt, after a
// rounded border or one space, then a space or the end of the row. (A
// prompt at column 0 is aider's, or a shell's continuation.)
var geminiPromptRe = regexp.MustCompile(`^(│\s{1,2}| )(>|\*|!|\(r:\))(\s|$)`)

// geminiRuledPromptRe is the first row of Qwen Code's box: the prompt at
// column 0, right under a rule (the box is closed by another rule).
var geminiRuledPromptRe = regexp.MustCompile(`^(>|\*|!|\(r:\))(\s|$)`)

// geminiQueuedRe is Qwen Code's footer count of queued prompts: "⏳ 1 queued".
var geminiQueuedRe = regexp.MustCompile(`\b\d+ queued\b`)

// geminiHooksRe is its hooks' status row: " ⠙ Executing Hook: CMD" while
// one runs (a braille spinner; in tmux Qwen Code's is ". " or ".."),
// "  Executing Hooks: A, B" in the seconds after. Anchored, so that a reply
// that mentions hooks is not taken for it.
var geminiHooksRe = regexp.MustCompile(`^\s*(?:[\x{2800}-\x{28FF}]\s+|\.[. ]\s*)?Executing Hooks?: `)

// geminiTail is how many rows may follow the box: the footer (two rows,
// more when narrow) and a completion list.
const geminiTail = 12

func (g Gemini) Read(screen []string) delivery.Reading {
	lines := trimScreen(screen)
	if len(lines) == 0 {
		return unknown("the screen is empty")
	}
	if lastIsShellPrompt(lines) {
		return shellReading()
	}
	b, ok := geminiBox(lines)
	if !ok {
		from := bottom(lines, bottomRows+10)
		if d, ok := menuDialog(lines[from:]); ok {
			return dialog(d)
		}
		if l, ok := containsFold(lines[from:], geminiDialogs...); ok {
			return dialog("dialog: " + l)
		}
		if wrappedContainsFold(lines[from:], "esc to cancel") || slices.ContainsFunc(lines[from:], geminiHooksRe.MatchString) {
			return delivery.Reading{State: delivery.Busy, BoxRow: -1, Detail: "the agent is working; no input box on screen"}
		}
		return unknown("no " + g.product() + " input box at the bottom of the screen")
	}
	switch b.prompt {
	case "!":
		return unknown(g.product() + " is in shell mode (!): typed text would run as a shell command")
	case "(r:)":
		return dialog("dialog: " + g.product() + " is searching history (r:)")
	}
	if d, ok := menuDialog(b.tail); ok {
		return dialog(d)
	}
	r := delivery.Reading{BoxRow: b.top, Box: b.text}
	if !strings.Contains(b.text, "\n") && slices.Contains(geminiPlaceholders, strings.TrimSpace(b.text)) {
		r.Box = ""
	}
	// The status rows (spinner, queue) stand over the rule above the box.
	status := lines[max(0, b.top-6):b.top]
	spinner := geminiSpinnerRow(lines, b.top)
	if l, ok := containsFold(spinner, "waiting for user confirmation"); ok {
		return dialog("dialog: " + l)
	}
	if _, ok := containsFold(lines[max(0, b.top-30):b.top], "Queued (press", "to edit queued messages"); ok {
		r.Queued = true
	}
	for _, l := range b.tail {
		if geminiQueuedRe.MatchString(l) {
			r.Queued = true
		}
	}
	// While it shows its hooks running (" ⠙ Executing Hook: CMD", or
	// "Hooks:" for more than one, before and after a turn, and for at
	// least 3 s each) a paste is lost or doubled: it showed twice in the
	// box, or vanished from it before the press (seen live with 0.61.0,
	// TestLiveHooks, 1 send in 4). Nothing is typed then, not even into
	// its queue.
	hooks := slices.ContainsFunc(status, geminiHooksRe.MatchString)
	// A long loading phrase wraps the end of the busy row onto the next.
	busy := wrappedContainsFold(spinner, "esc to cancel")
	r = noteQueued(boxState(r, busy || hooks, "input box"))
	if hooks {
		r.Hold = true
		r.Detail += "; it is running its hooks"
	}
	return r
}

// geminiSpinnerRow is the busy row over the box whose prompt is on row
// top: the last row above the rule (or the rounded box's edge) over it, or
// above Qwen Code's queue there, when a spinner opens it ("⠸
// Thinking... (esc to cancel, 11s)", "⠏ Waiting for user
// confirmation..."), with the row a long one wrapped onto. Rows above it
// are the transcript, where a message or an answer may quote one (Qwen
// Code draws no blank row between the two).
func geminiSpinnerRow(lines []string, top int) []string {
	edge := top - 1
	for edge >= max(0, top-4) && !isRule(lines[edge]) && !isRoundedEdge(lines[edge]) {
		edge--
	}
	i := lastFilled(lines, edge-1)
	if i >= 0 && strings.Contains(lines[i], "to edit queued messages") {
		// Qwen Code's queue: the messages, then this hint.
		for i >= 0 && strings.TrimSpace(lines[i]) != "" {
			i--
		}
		i = lastFilled(lines, i)
	}
	switch {
	case edge < max(0, top-4) || i < 0:
		return nil
	case opensBusyRow(lines[i]):
		return lines[i : i+1]
	case i > 0 && opensBusyRow(lines[i-1]):
		return lines[i-1 : i+1] // its end wrapped onto the row under it
	}
	return nil
}

// opensBusyRow: the row starts with a spinner. In tmux (with $TMUX set, as
// for anyone who runs it there) Qwen Code 0.24.4 draws its spinner as ". "
// or ".." rather than braille (RespondingSpinner.tsx, TMUX_SPINNER_FRAMES);
// the reader, built from captures taken without $TMUX, read a busy Qwen
// Code in tmux as ready (seen live: TestLiveBusy/qwen, every try).
func opensBusyRow(l string) bool {
	if startsWithSpinner(l) {
		return true
	}
	t := strings.TrimLeft(l, " ")
	return (strings.HasPrefix(t, ". ") || strings.HasPrefix(t, "..")) && strings.TrimLeft(t[2:], ". ") != ""
}

func (g Gemini) product() string {
	if g.Product == "" {
		return "Gemini CLI"
	}
	return g.Product
}

// geminiInput is the live input box found on a screen.
type geminiInput struct {
	top    int // the prompt row
	prompt string
	text   string
	tail   []string // the rows under the box: footer, completions
}

// isBlockRow is a row of one half-block glyph (▄ or ▀), at least 10 wide.
func isBlockRow(l, glyph string) bool {
	l = strings.TrimSpace(l)
	return utf8.RuneCountInString(l) >= 10 && strings.Trim(l, glyph) == ""
}

func isRoundedEdge(l string) bool {
	l = strings.TrimSpace(l)
	return strings.HasPrefix(l, "╭") || strings.HasPrefix(l, "╰")
}

// geminiBox finds the live input box: the bottom-most prompt row whose box
// is followed only by a short tail with no rule, border or box in it.
func geminiBox(lines []string) (geminiInput, bool) {
	p := len(lines) - 1
	ruled := func(p int) bool { return p > 0 && geminiRuledPromptRe.MatchString(lines[p]) && isRule(lines[p-1]) }
	for p >= 0 && !geminiPromptRe.MatchString(lines[p]) && !ruled(p) {
		p--
	}
	if p < 0 {
		return geminiInput{}, false
	}
	row := lines[p]
	rounded := strings.HasPrefix(row, "│")
	// Qwen Code 0.24 draws its box between two rules, the prompt at
	// column 0, and a zero-width space where the cursor is.
	between := ruled(p)
	inner := func(l string) string {
		l = strings.ReplaceAll(l, "\u200b", "")
		if rounded {
			l = strings.TrimPrefix(l, "│")
			l = strings.TrimSuffix(strings.TrimRight(l, " "), "│")
		}
		return strings.TrimRight(l, " ")
	}
	first := inner(row)
	var prompt string
	if between {
		prompt = geminiRuledPromptRe.FindStringSubmatch(first)[1]
	} else {
		prompt = geminiPromptRe.FindStringSubmatch(first)[2]
	}
	at := strings.Index(first, prompt) + len(prompt)
	indent := at + 1 // continuation rows are indented to where the text starts
	text := []string{strings.TrimPrefix(first[at:], " ")}

	// The box's own rows: continuation rows, up to its bottom border; a
	// box with a border may hold blank rows.
	bordered := p > 0 && isBlockRow(lines[p-1], "▄")
	j := p + 1
	closed := false
	for ; j < len(lines); j++ {
		l := lines[j]
		if between {
			if isRule(l) {
				j, closed = j+1, true
				break
			}
		} else if rounded {
			if isRoundedEdge(l) {
				j++
				break
			}
			if !strings.HasPrefix(l, "│") {
				return geminiInput{}, false
			}
		} else if isBlockRow(l, "▀") {
			j++
			break
		}
		c := inner(l)
		if c == "" && !rounded && !between && !bordered {
			// A blank row inside a borderless box (an Enter taken as a
			// newline) only if the box's text goes on below it.
			k := j + 1
			for k < len(lines) && inner(lines[k]) == "" {
				k++
			}
			if k == len(lines) || !strings.HasPrefix(inner(lines[k]), strings.Repeat(" ", indent)) {
				break
			}
		} else if !rounded && c != "" && !strings.HasPrefix(c, strings.Repeat(" ", indent)) {
			break
		}
		text = append(text, trimIndent(c, indent))
	}
	if between && !closed {
		return geminiInput{}, false
	}
	tail := lines[j:]
	if len(tail) > geminiTail || (!rounded && !between && !isBlockRow(lines[j-1], "▀") && len(tail) == 0) {
		// Without a border, only the footer under it tells the box from
		// any "> " prompt.
		return geminiInput{}, false
	}
	for _, l := range tail {
		if geminiPromptRe.MatchString(l) || isRule(l) || isBlockRow(l, "▀") || isBlockRow(l, "▄") ||
			isRoundedEdge(l) || strings.HasPrefix(strings.TrimSpace(l), "│") {
			return geminiInput{}, false
		}
	}
	// Over the box: its top border (if any), then hint rows and the rule.
	// The rounded shape of 2025 had no rule above it.
	if !rounded && !between {
		i := p - 1
		if i >= 0 && isBlockRow(lines[i], "▄") {
			i--
		}
		ruled := false
		for k := i; k >= 0 && k >= i-3; k-- {
			if isRule(lines[k]) {
				ruled = true
				break
			}
		}
		if !ruled {
			return geminiInput{}, false
		}
	}
	return geminiInput{top: p, prompt: prompt, text: joinBox(text), tail: tail}, true
}

// trimIndent cuts up to n leading spaces.
func trimIndent(s string, n int) string {
	k := 0
	for k < n && k < len(s) && s[k] == ' ' {
		k++
	}
	return s[k:]
}

func (g Gemini) recognize(lines []string) (string, bool) {
	b, ok := geminiBox(lines)
	if !ok || lastIsShellPrompt(lines) {
		return "", false
	}
	// Its footer, hints or banner, beside the box.
	if _, ok := containsFold(lines, "workspace (/directory)", "no sandbox", "? for shortcuts",
		"Type your message or @path/to/file", "Gemini CLI", "Qwen Code", "context left"); !ok && len(b.tail) == 0 {
		return "", false
	}
	_, qwen := containsFold(lines, "qwen")
	if (g.Product == "Qwen Code") != qwen {
		return "", false
	}
	return "screen shows " + g.product() + "'s input box", true
}
