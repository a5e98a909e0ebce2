package tmux

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// A control client (tmux -C) reads commands a line at a time and parses
// each line as tmux's configuration language does; it answers each command
// with a block:
//
//	%begin TIME NUMBER FLAGS
//	...the command's output, unescaped...
//	%end TIME NUMBER FLAGS        (or %error, the output then being the error)
//
// FLAGS is 1 for commands of the lines the client sent, 0 for others (its
// own attach-session, hooks). Notifications (%session-changed, ...) come
// only between blocks and always start with "%". A line of output inside a
// block can be anything a pane shows, "%end ..." included; only the exact
// closing line of the open block closes it, and a forged one shows as a
// closing line or text outside any block, which real answers never have.

// controlLine is cmds as one line of tmux's command language: the commands
// separated by " ; ", every argument quoted (controlArg), payload
// placeholders replaced by payloadPath(i).
func controlLine(cmds [][]string, payloadPath func(i int) string) string {
	var b strings.Builder
	for i, cmd := range cmds {
		if i > 0 {
			b.WriteString(" ; ")
		}
		for j, a := range cmd {
			if j > 0 {
				b.WriteByte(' ')
			}
			if n, ok := payloadIndex(a); ok {
				a = payloadPath(n)
			}
			b.WriteString(controlArg(a))
		}
	}
	return b.String()
}

// controlArg quotes a so that tmux's parser gives it back byte for byte
// (checked on 3.2a to 3.7c): inside single quotes every byte stands for
// itself (no $VAR, ~, \ escapes, ; or #), except the quote itself, written
// \' outside the quotes, and control characters and the byte 0xff,
// written as octal escapes outside the quotes: a newline would end the
// line, tmux 3.7 reads a CR before it as part of the line end, and the
// parser reads bytes as signed chars, so 0xff is its end of input (it
// split "\xff\xfe" into two arguments).
func controlArg(a string) string {
	if a != "" && strings.IndexFunc(a, func(r rune) bool { return !plainArgRune(r) }) < 0 {
		return a
	}
	var b strings.Builder
	b.Grow(len(a) + 2)
	quoted := false
	for i := 0; i < len(a); i++ {
		ch := a[i]
		if ch == '\'' || ch < 0x20 || ch == 0x7f || ch == 0xff {
			if quoted {
				b.WriteByte('\'')
				quoted = false
			}
			if ch == '\'' {
				b.WriteString(`\'`)
			} else {
				fmt.Fprintf(&b, `\%03o`, ch)
			}
			continue
		}
		if !quoted {
			b.WriteByte('\'')
			quoted = true
		}
		b.WriteByte(ch)
	}
	if quoted {
		b.WriteByte('\'')
	}
	if b.Len() == 0 {
		return "''"
	}
	return b.String()
}

// plainArgRune: characters that mean nothing to tmux's parser anywhere in
// a word (a word starting with %, #, ~, { or holding $, ;, quotes or
// spaces means something).
func plainArgRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:,@+", r)
}

// payloadIndex reads a payload placeholder (payloadArg).
func payloadIndex(a string) (int, bool) {
	rest, ok := strings.CutPrefix(a, "\x00payload")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil
}

// controlBlock is one command's answer.
type controlBlock struct {
	guard  string // "TIME NUMBER FLAGS": the opening line's, repeated on the closing one
	ours   bool   // FLAGS 1: a command of a line we sent
	failed bool   // closed by %error
	lines  []string
}

// errGarbled: the client's output broke the protocol (a pane's text that
// forged a closing line, or a tmux that answers otherwise); nothing read
// from it since can be trusted.
var errGarbled = errors.New("the tmux control client's answer did not follow the protocol")

// controlParser splits a control client's output into blocks.
type controlParser struct {
	open *controlBlock
}

// line takes one line of output (without its newline). It returns the
// block that line closed, or the reason the client gave for leaving
// (%exit), or errGarbled.
func (p *controlParser) line(s string) (closed *controlBlock, exit string, left bool, err error) {
	if b := p.open; b != nil {
		if s == "%end "+b.guard || s == "%error "+b.guard {
			b.failed = strings.HasPrefix(s, "%error ")
			p.open = nil
			return b, "", false, nil
		}
		b.lines = append(b.lines, s)
		return nil, "", false, nil
	}
	switch {
	case strings.HasPrefix(s, "%begin "):
		guard := s[len("%begin "):]
		f := strings.Fields(guard)
		if len(f) != 3 || strings.Join(f, " ") != guard {
			return nil, "", false, errGarbled
		}
		p.open = &controlBlock{guard: guard, ours: f[2] == "1"}
	case s == "%exit" || strings.HasPrefix(s, "%exit "):
		return nil, strings.TrimPrefix(strings.TrimPrefix(s, "%exit"), " "), true, nil
	case strings.HasPrefix(s, "%end ") || strings.HasPrefix(s, "%error ") || !strings.HasPrefix(s, "%"):
		// A closing line with no block open, or text outside a block:
		// what a forged closing line leaves (never quoted in the error:
		// it is a pane's text).
		return nil, "", false, errGarbled
	}
	return nil, "", false, nil // a notification
}
