package profile

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agentmsg/agentmsg/delivery"
)

// Prompt reads a program that asks for each line with a prompt: a REPL
// (python's ">>> "), a read loop (read -p "my> "). The live prompt is the
// last row on screen, and what follows it on that row is the input box.
// A line is taken when a new prompt row appears under it: the row that
// held it is then above the box, in the transcript, where a delivery
// looks for proof (nothing below or beside a prompt is proof).
type Prompt struct {
	re     *regexp.Regexp // the prompt, anchored at the start of a row
	source string         // as written, for a person
}

// NewPrompt compiles a prompt pattern: a regular expression that matches
// the prompt at the start of a row ("^" is implied). The text typed after
// the prompt shares its row, so the pattern may not end in "$", and it
// must match something: a pattern that matches an empty row would take
// any row for the prompt.
func NewPrompt(pattern string) (Prompt, error) {
	if endsInDollar(pattern) {
		return Prompt{}, fmt.Errorf("%q ends in $, but what is typed follows the prompt on its row: leave the $ out (%q)",
			pattern, strings.TrimSuffix(pattern, "$"))
	}
	re, err := regexp.Compile(`^(?:` + strings.TrimPrefix(pattern, "^") + `)`)
	if err != nil {
		return Prompt{}, fmt.Errorf("%q: %w", pattern, err)
	}
	if re.MatchString("") || re.MatchString(" ") {
		return Prompt{}, fmt.Errorf("%q matches an empty row, so any row would read as the prompt", pattern)
	}
	return Prompt{re: re, source: pattern}, nil
}

// mustPrompt is NewPrompt for the builtin profiles' patterns.
func mustPrompt(pattern string) Prompt {
	p, err := NewPrompt(pattern)
	if err != nil {
		panic(err)
	}
	return p
}

// endsInDollar reports whether a pattern ends in an unescaped "$".
func endsInDollar(pattern string) bool {
	if !strings.HasSuffix(pattern, "$") {
		return false
	}
	slashes := len(pattern) - 1 - len(strings.TrimRight(pattern[:len(pattern)-1], `\`))
	return slashes%2 == 0
}

func (p Prompt) Read(screen []string) delivery.Reading {
	lines := trimScreen(screen)
	if len(lines) == 0 {
		return unknown("the screen is empty")
	}
	last := len(lines) - 1
	if box, ok := p.box(lines[last]); ok {
		r := delivery.Reading{State: delivery.Ready, BoxRow: last, Box: box}
		if box != "" {
			r.State, r.Detail = delivery.Draft, "the prompt holds text"
		}
		return r
	}
	if isShellPrompt(lines[last]) {
		return shellReading()
	}
	return unknown(fmt.Sprintf("the last row is not the prompt (%s): the program is working, or shows something else", p.source))
}

// box is the text after the prompt on row, when row starts with it. The
// pattern is matched as the screen shows the row: its trailing spaces are
// gone (an empty "my> " prompt reads "my>"), so a row that does not match
// is tried again with one space put back.
func (p Prompt) box(row string) (string, bool) {
	for _, s := range []string{row, row + " "} {
		if loc := p.re.FindStringIndex(s); loc != nil {
			return strings.TrimSpace(s[loc[1]:]), true
		}
	}
	return "", false
}

// SuggestPrompt guesses a prompt pattern from a screen whose last row may
// be a program's empty prompt ("my>", ">>>", "(Pdb)"): short, and ending
// in a mark rather than a letter or digit. The row is quoted, and its
// trailing space, trimmed from the screen, put back.
func SuggestPrompt(screen []string) (string, bool) {
	lines := trimScreen(screen)
	if len(lines) == 0 {
		return "", false
	}
	row := strings.TrimLeft(lines[len(lines)-1], " ")
	last, _ := utf8.DecodeLastRuneInString(row)
	if row == "" || utf8.RuneCountInString(row) > 24 || unicode.IsLetter(last) || unicode.IsDigit(last) || isShellPrompt(row) {
		return "", false
	}
	pattern := regexp.QuoteMeta(row) + " "
	if _, err := NewPrompt(pattern); err != nil {
		return "", false
	}
	return pattern, true
}
