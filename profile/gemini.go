package profile

import (
	"slices"
	"strings"

	"github.com/agentmsg/agentmsg/delivery"
)

// Gemini reads Gemini CLI and its fork Qwen Code (Ink TUIs; reconstructed
// from their sources, snapshot tests and published screen captures). The
// input is a bordered box at the bottom, a footer under it:
//
//	╭──────────────────────────────────────╮     (2025 releases)
//	│ >   Type your message or @path/to/file │
//	╰──────────────────────────────────────╯
//	~/project (main*)   no sandbox   gemini-2.5-pro (97% context left)
//
// or, in later releases, between rows of half blocks ▀▀▀ and ▄▄▄. The
// prompt is ">" ("*" in YOLO mode, "!" in shell mode, "(r:)" while
// searching). Past prompts in the transcript are boxed too; only the
// bottom-most box counts. A tool confirmation hides the input box and shows
// "● 1. Allow once" choices.
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

func (g Gemini) Read(screen []string) delivery.Reading {
	lines := trimScreen(screen)
	if len(lines) == 0 {
		return unknown("the screen is empty")
	}
	if lastIsShellPrompt(lines) {
		return shellReading()
	}
	from := bottom(lines, bottomRows+10)
	top, prompt, text, ok := geminiBox(lines)
	if !ok {
		if d, ok := menuDialog(lines[from:]); ok {
			return dialog(d)
		}
		if l, ok := containsFold(lines[from:], geminiDialogs...); ok {
			return dialog("dialog: " + l)
		}
		if _, ok := containsFold(lines[from:], "esc to cancel"); ok {
			return delivery.Reading{State: delivery.Busy, BoxRow: -1, Detail: "the agent is working; no input box on screen"}
		}
		return unknown("no " + g.product() + " input box at the bottom of the screen")
	}
	switch prompt {
	case "!":
		return unknown(g.product() + " is in shell mode (!): typed text would run as a shell command")
	case "(r:)":
		return dialog("dialog: " + g.product() + " is searching history (r:)")
	}
	r := delivery.Reading{BoxRow: top, Box: text}
	if !strings.Contains(text, "\n") && slices.Contains(geminiPlaceholders, strings.TrimSpace(text)) {
		r.Box = ""
	}
	above := lines[max(0, top-4):top]
	if l, ok := containsFold(above, "waiting for user confirmation"); ok {
		return dialog("dialog: " + l)
	}
	_, busy := containsFold(above, "esc to cancel")
	switch {
	case busy:
		r.State, r.Detail = delivery.Busy, "the agent is working"
		if r.Box != "" {
			r.Detail += "; the input box holds text"
		}
	case r.Box != "":
		r.State, r.Detail = delivery.Draft, "the input box holds text"
	default:
		r.State = delivery.Ready
	}
	return r
}

func (g Gemini) product() string {
	if g.Product == "" {
		return "Gemini CLI"
	}
	return g.Product
}

// geminiBox finds the bottom-most box in the last rows and reads it as the
// input box if its first row starts with a prompt. top is the index of the
// box's first text row.
func geminiBox(lines []string) (top int, prompt, text string, ok bool) {
	from := bottom(lines, 8)
	for bot := len(lines) - 1; bot >= from; bot-- {
		var isTop func(string) bool
		switch l := strings.TrimSpace(lines[bot]); {
		case strings.HasPrefix(l, "╰") && strings.HasSuffix(l, "╯") && strings.Contains(l, "──"):
			isTop = func(s string) bool {
				s = strings.TrimSpace(s)
				return strings.HasPrefix(s, "╭") && strings.HasSuffix(s, "╮")
			}
		case len(l) >= 30 && strings.Trim(l, "▄") == "":
			isTop = func(s string) bool { s = strings.TrimSpace(s); return len(s) >= 30 && strings.Trim(s, "▀") == "" }
		default:
			continue
		}
		t := bot - 1
		for t >= 0 && bot-t < 60 && !isTop(lines[t]) {
			t--
		}
		if t < 0 || bot-t >= 60 || t+1 == bot {
			return 0, "", "", false
		}
		return readGeminiBox(lines[t+1:bot], t+1)
	}
	return 0, "", "", false
}

func readGeminiBox(rows []string, at int) (top int, prompt, text string, ok bool) {
	inner := make([]string, len(rows))
	for i, r := range rows {
		r = strings.TrimLeft(r, " ")
		r = strings.TrimPrefix(r, "│")
		r = strings.TrimRight(r, " ")
		r = strings.TrimSuffix(r, "│")
		inner[i] = strings.TrimRight(r, " ")
	}
	first := strings.TrimLeft(inner[0], " ")
	for _, p := range []string{">", "*", "!", "(r:)"} {
		if rest, ok := strings.CutPrefix(first, p); ok && (rest == "" || rest[0] == ' ') {
			// Continuation rows are indented to where the text starts.
			indent := len(inner[0]) - len(first) + len(p) + 1
			out := []string{strings.TrimPrefix(rest, " ")}
			for _, r := range inner[1:] {
				n := 0
				for n < indent && n < len(r) && r[n] == ' ' {
					n++
				}
				out = append(out, r[n:])
			}
			return at, p, joinBox(out), true
		}
	}
	return 0, "", "", false
}

func (g Gemini) recognize(lines []string) (string, bool) {
	r := g.Read(lines)
	if r.Shell || r.BoxRow < 0 {
		return "", false
	}
	_, qwen := containsFold(lines, "qwen")
	if (g.Product == "Qwen Code") != qwen {
		return "", false
	}
	return "screen shows " + g.product() + "'s input box", true
}
