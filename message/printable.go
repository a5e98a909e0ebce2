package message

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Printable is the one way agentmsg shows text that came from another party
// (a message, metadata, a status, a name read from a file, a pane's
// command or screen, an error that quotes any of them) to a person. Nothing
// in it can act on the reader's terminal: every control character but
// newline and tab, and every character that reorders or hides text, is
// shown as an escape a person can read, and kept in that form:
//
//   - C0 controls, DEL and C1 controls: \r, \x1b, \x7f, \u009b ...
//     (ESC[2J or an OSC 52 clipboard write shows as \x1b[2J, \x1b]52;...);
//   - bidirectional controls (U+202A-U+202E, U+2066-U+2069, U+200E,
//     U+200F, U+061C) and the line and paragraph separators U+2028 and
//     U+2029: \u202e ...;
//   - invalid UTF-8, byte by byte: \xff.
//
// Newlines and tabs stay, for multi-line text; PrintableLine escapes them
// too. JSON output needs none of this: it escapes with JSON escapes
// (see Unsafe).
func Printable(s string) string { return printable(s, false) }

// PrintableLine is Printable for a value that must stay on one line (a
// table cell, a name, a label): newlines and tabs are escaped as \n and \t.
func PrintableLine(s string) string { return printable(s, true) }

func printable(s string, oneLine bool) string {
	if isPlain(s, oneLine) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n' && oneLine:
			b.WriteString(`\n`)
		case r == '\t' && oneLine:
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r < 0x80 && Unsafe(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case Unsafe(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// isPlain reports whether s needs no escaping, the common case.
func isPlain(s string, oneLine bool) bool {
	for _, r := range s {
		if r == utf8.RuneError || Unsafe(r) && (oneLine || r != '\n' && r != '\t') {
			return false
		}
	}
	return true
}

// Unsafe reports whether r must not reach a terminal as it is: a control
// character (C0, DEL, C1; newline and tab included, callers that keep them
// say so), a bidirectional control, or a line or paragraph separator.
func Unsafe(r rune) bool {
	switch {
	case isControl(r):
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true // bidirectional controls: they reorder what follows
	case r == 0x2028, r == 0x2029:
		return true // line and paragraph separators
	}
	return false
}
