package profile

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agentmsg/agentmsg/delivery"
)

// bottomRows is how far up from the last non-blank row a reader looks for
// dialogs and status lines; the same reach as delivery.Generic.
const bottomRows = 14

const (
	nbsp        = "\u00a0"
	shellDetail = "a shell prompt, not an agent"
)

// menuRe is a selection menu's highlighted choice: "❯ 1. Yes" (Claude),
// "› 1. Yes, proceed (y)" (Codex), "● 1. Allow once" (Gemini, Qwen), in a
// box border or not.
var menuRe = regexp.MustCompile(`^\s*│?\s*[❯›>●]\s*\d+\.\s`)

// trimScreen is delivery.TrimScreen, which every reader starts with.
func trimScreen(lines []string) []string { return delivery.TrimScreen(lines) }

// boxState sets the state of an agent whose input box is on screen: busy
// while it works (noting text in the box), else a draft when the box holds
// text, else ready. box is what the agent calls its box ("input box",
// "composer").
func boxState(r delivery.Reading, busy bool, box string) delivery.Reading {
	switch {
	case busy:
		r.State, r.Detail = delivery.Busy, "the agent is working"
		if r.Box != "" {
			r.Detail += "; the " + box + " holds text"
		}
	case r.Box != "":
		r.State, r.Detail = delivery.Draft, "the "+box+" holds text"
	default:
		r.State = delivery.Ready
	}
	return r
}

// noteQueued adds to r's detail that messages are queued, when they are.
func noteQueued(r delivery.Reading) delivery.Reading {
	if r.Queued {
		r.Detail = strings.TrimPrefix(r.Detail+"; messages are queued", "; ")
	}
	return r
}

// bottom returns the index of the first of the last n lines.
func bottom(lines []string, n int) int {
	return max(0, len(lines)-n)
}

// isRule is a line made only of ─, at least 10: the rules Claude Code draws
// around its box and aider before its prompt. Box corners do not count.
func isRule(l string) bool {
	l = strings.TrimRight(l, " ")
	return utf8.RuneCountInString(l) >= 10 && strings.Trim(l, "─") == ""
}

// isShellPrompt reports whether a line looks like an interactive shell's
// prompt: "$", "#" or " %" at its end ("bash-5.2# ", "user@host:~$ ",
// "host ~ % "), starting at column 0 with no agent glyph. Agents' status
// lines start with spaces, slash commands with "/"; a progress figure
// ("100%") needs the space before % to count.
func isShellPrompt(l string) bool {
	l = strings.TrimRight(l, " ")
	if l == "" || len(l) > 160 {
		return false
	}
	switch l[len(l)-1] {
	case '$', '#':
	case '%':
		if len(l) > 1 && l[len(l)-2] != ' ' {
			return false
		}
	default:
		return false
	}
	r, _ := utf8.DecodeRuneInString(l)
	return !unicode.IsSpace(r) && !strings.ContainsRune("/│❯›>▌●•*·✻✶✽✢✳⎿", r)
}

// lastFilled is the last row at or above i that is not blank, or -1.
func lastFilled(lines []string, i int) int {
	for i >= 0 && strings.TrimSpace(lines[i]) == "" {
		i--
	}
	return i
}

// startsWithSpinner: the row's first glyph is a braille spinner's, as the
// busy rows of Gemini CLI, Qwen Code and Droid start.
func startsWithSpinner(l string) bool {
	r, _ := utf8.DecodeRuneInString(strings.TrimLeft(l, " "))
	return r >= 0x2800 && r <= 0x28FF
}

// lastIsShellPrompt reports whether the last non-blank line is a shell prompt.
func lastIsShellPrompt(lines []string) bool {
	return len(lines) > 0 && isShellPrompt(lines[len(lines)-1])
}

func shellReading() delivery.Reading {
	return delivery.Reading{State: delivery.Unknown, BoxRow: -1, Shell: true, Detail: shellDetail}
}

func unknown(detail string) delivery.Reading {
	return delivery.Reading{State: delivery.Unknown, BoxRow: -1, Detail: detail}
}

func dialog(detail string) delivery.Reading {
	return delivery.Reading{State: delivery.Dialog, BoxRow: -1, Detail: detail}
}

// containsFold reports whether any line contains any of the phrases,
// ignoring case, and returns the first such line, trimmed.
func containsFold(lines []string, phrases ...string) (string, bool) {
	for _, l := range lines {
		low := strings.ToLower(l)
		for _, p := range phrases {
			if strings.Contains(low, strings.ToLower(p)) {
				return strings.TrimSpace(l), true
			}
		}
	}
	return "", false
}

// wrappedContainsFold is containsFold for a phrase a TUI may have wrapped
// onto the next row: Qwen Code's busy row, with a long loading phrase,
// ends "(2s · esc to" and the next row holds "cancel)" (seen live at 100
// columns). Consecutive rows are joined with one space, their padding
// trimmed.
func wrappedContainsFold(lines []string, phrase string) bool {
	phrase = strings.ToLower(phrase)
	for i, l := range lines {
		low := strings.ToLower(strings.TrimSpace(l))
		if strings.Contains(low, phrase) {
			return true
		}
		if i+1 < len(lines) && strings.Contains(low+" "+strings.ToLower(strings.TrimSpace(lines[i+1])), phrase) {
			return true
		}
	}
	return false
}

// menuDialog finds a selection menu in lines and describes it by its
// question: the nearest line above the menu that ends with "?" (else holds
// one), or the highlighted choice.
func menuDialog(lines []string) (string, bool) {
	for i, l := range lines {
		if !menuRe.MatchString(l) {
			continue
		}
		return "dialog: " + question(lines[:i], strings.Trim(l, " │")), true
	}
	return "", false
}

// question returns the last line of above that ends with "?", else the last
// that contains one, else def; box borders trimmed.
func question(above []string, def string) string {
	from := max(0, len(above)-8)
	for _, want := range []func(string) bool{
		func(s string) bool { return strings.HasSuffix(s, "?") },
		func(s string) bool { return strings.Contains(s, "?") },
	} {
		for i := len(above) - 1; i >= from; i-- {
			if s := strings.Trim(above[i], " │"); want(s) {
				return s
			}
		}
	}
	return def
}

// joinBox joins a box's text lines and drops trailing blanks.
func joinBox(text []string) string {
	return strings.TrimRight(strings.Join(text, "\n"), " \n")
}
