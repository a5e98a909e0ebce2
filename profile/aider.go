package profile

import (
	"regexp"
	"slices"
	"strings"

	"github.com/agentmsg/agentmsg/delivery"
)

// Aider reads aider's prompt_toolkit prompt (reconstructed from aider's
// io.py, not captured here). Before each prompt aider prints a rule of ─ and
// the files in the chat, then the prompt "> ", prefixed by the edit format
// when it is not the default and by "multi" in multi-line mode ("ask> ",
// "architect multi> "). While aider works there is no prompt at the bottom;
// questions end with "(Y)es/(N)o … [Yes]: ".
type Aider struct{}

var (
	aiderPromptRe   = regexp.MustCompile(`^((?:[a-z][\w-]*)(?: multi)?|multi)?>(?: |$)`)
	aiderQuestionRe = regexp.MustCompile(`\(Y\)es/\(N\)o|\[(?:Yes|No|y|n)\]:?$|\(y/n\)|\[y/n\]`)
	aiderBusy       = []string{"waiting for", "ctrl+c to interrupt", "esc to interrupt"}
)

func (Aider) Read(screen []string) delivery.Reading {
	lines := trimScreen(screen)
	if len(lines) == 0 {
		return unknown("the screen is empty")
	}
	last := lines[len(lines)-1]
	if isShellPrompt(last) {
		return shellReading()
	}
	if aiderQuestionRe.MatchString(last) {
		return dialog("question: " + strings.TrimSpace(last))
	}
	// The prompt is the last line starting with one, with at most a few
	// continuation lines after it.
	for i := len(lines) - 1; i >= bottom(lines, 8); i-- {
		m := aiderPromptRe.FindString(lines[i])
		if m == "" {
			continue
		}
		// A prompt followed by a blank line or a busy line was submitted:
		// what follows is aider's answer.
		after := lines[i+1:]
		if slices.Contains(after, "") {
			break
		}
		if _, busy := containsFold(after, aiderBusy...); busy {
			break
		}
		text := []string{lines[i][len(m):]}
		indent := strings.Repeat(" ", len(m))
		for _, l := range after {
			text = append(text, strings.TrimPrefix(l, indent))
		}
		r := delivery.Reading{State: delivery.Ready, BoxRow: i, Box: joinBox(text)}
		if r.Box != "" {
			r.State, r.Detail = delivery.Draft, "the prompt holds text"
		}
		return r
	}
	from := bottom(lines, bottomRows)
	if _, ok := containsFold(lines[from:], aiderBusy...); ok {
		return delivery.Reading{State: delivery.Busy, BoxRow: -1, Detail: "the agent is working"}
	}
	return unknown("no aider prompt at the bottom of the screen")
}

func (a Aider) recognize(lines []string) (string, bool) {
	if lastIsShellPrompt(lines) {
		return "", false
	}
	for _, l := range lines {
		if strings.HasPrefix(l, "Aider v") {
			return "screen shows aider's banner", true
		}
	}
	return "", false
}
