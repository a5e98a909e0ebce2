// Package message builds what agentmsg types into an agent: an id that the
// sender can find again on the receiver's screen, and text cleaned of
// anything a terminal would act on rather than display.
package message

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"unicode/utf8"
)

// ID is "MSG_<SENDER>_<8 hex>".
type ID string

var (
	senderBad = regexp.MustCompile(`[^A-Z0-9_]+`)
)

// ErrEmptySender is returned when no usable sender name is left.
var ErrEmptySender = errors.New("sender name is empty")

// Sender turns a name ("ana", "ana-2", "j.doe") into the id's sender part:
// upper case, runs of anything but letters, digits and _ become _.
func Sender(name string) (string, error) {
	s := senderBad.ReplaceAllString(strings.ToUpper(name), "_")
	s = strings.Trim(s, "_")
	if s == "" {
		return "", ErrEmptySender
	}
	if len(s) > 32 {
		s = s[:32] // the id must stay short and early on the receiver's line
	}
	return s, nil
}

// NewID makes a fresh id for sender (already normalised by Sender), reading
// 4 bytes from random (crypto/rand.Reader when nil).
func NewID(sender string, random io.Reader) (ID, error) {
	id, err := NewToken("MSG_"+sender+"_", random)
	if err != nil {
		return "", fmt.Errorf("making a message id: %w", err)
	}
	return ID(id), nil
}

// NewRequestID makes a fresh open-request id: "REQ_<8 hex>".
func NewRequestID() (string, error) {
	id, err := NewToken("REQ_", nil)
	if err != nil {
		return "", fmt.Errorf("making a request id: %w", err)
	}
	return id, nil
}

// NewWorkflowID makes a fresh workflow id: "WF_<8 hex>".
func NewWorkflowID() (string, error) {
	id, err := NewToken("WF_", nil)
	if err != nil {
		return "", fmt.Errorf("making a workflow id: %w", err)
	}
	return id, nil
}

// NewToken is the one random-id generator: prefix followed by 8 hex digits
// made of 4 bytes from random (crypto/rand.Reader when nil).
func NewToken(prefix string, random io.Reader) (string, error) {
	if random == nil {
		random = rand.Reader
	}
	var b [4]byte
	if _, err := io.ReadFull(random, b[:]); err != nil {
		return "", err
	}
	return prefix + hex.EncodeToString(b[:]), nil
}

// Valid reports whether s has the shape of an id.
//
// It is ^MSG_[A-Z0-9_]+_[0-9a-f]{8}$, checked by hand: every line of an
// inbox is checked on every read, and the regexp took a quarter of the
// time of reading one (mailbox.Summarize).
func Valid(s string) bool {
	const tail = 9 // "_" and 8 hex digits
	if len(s) < len("MSG_")+1+tail || s[:4] != "MSG_" || s[len(s)-tail] != '_' {
		return false
	}
	for _, c := range []byte(s[4 : len(s)-tail]) {
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	for _, c := range []byte(s[len(s)-tail+1:]) {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// Leading is the id text starts with, as Format puts it there ("ID: ..."),
// after any leading whitespace.
func Leading(text string) (ID, bool) {
	text = strings.TrimLeft(text, " \t\n")
	head, _, ok := strings.Cut(text, ": ")
	if !ok || !Valid(head) {
		return "", false
	}
	return ID(head), true
}

// Format is the exact text typed into the agent: the id, then text as
// Clean leaves it. Whatever a caller passes, and whichever fields it was
// built from (body, metadata, a reply's or a request's text), nothing
// reaches a pane without going through Clean here.
func Format(id ID, text string) string { return string(id) + ": " + Clean(text) }

// Clean is the one cleaning of text for an agent's input box. What it
// returns holds nothing a terminal or the agent's line editor would act on
// rather than show:
//
//   - No ESC at all. An escape sequence is removed whole (CSI up to its
//     final byte; OSC, DCS, SOS, PM and APC strings up to BEL or ESC \;
//     any other ESC with the character after it), and a lone or malformed
//     ESC goes too. So ESC[201~, which ends a bracketed paste (and ESC[200~,
//     which starts one), can never be formed, not even when a removal joins
//     what was on either side of it: without an ESC, "[201~" is just text.
//   - No C0 control but newline and tab: a lone CR, NUL, C-c, BS and the
//     rest are removed; CRLF becomes LF.
//   - No DEL and no C1 control (U+0080 to U+009F, U+009B being the
//     one-character CSI).
//   - Invalid UTF-8 becomes U+FFFD, so no stray byte can be read as a C1
//     control either.
//   - Newlines and tabs stay: messages may have several lines (they go as
//     one bracketed paste) and tabs (Claude Code shows one as spaces).
//     Trailing newlines are dropped: one would be a second, empty line in
//     the box. A field that must stay on one line uses CleanLine.
//
// Everything else is kept as written: unicode, quotes, tmux and shell
// syntax. Clean is idempotent.
func Clean(text string) string {
	text = strings.ToValidUTF8(text, "\uFFFD")
	text = strings.ReplaceAll(text, "\r\n", "\n")
	var b strings.Builder
	b.Grow(len(text))
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		switch {
		case r == '\x1b':
			i += escapeLen(text[i:])
			continue
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case isControl(r):
			// C0 (CR and NUL among them), DEL and C1: drop.
		default:
			b.WriteRune(r)
		}
		i += size
	}
	return strings.TrimRight(b.String(), "\n")
}

// CleanLine is Clean for a field that must stay on one line, such as a
// metadata key or value: newlines and tabs become spaces as well.
func CleanLine(text string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' {
			return ' '
		}
		return r
	}, Clean(text))
}

// isControl reports a C0 control, DEL or a C1 control.
func isControl(r rune) bool { return r < 0x20 || (r >= 0x7f && r < 0xa0) }

// escapeLen is the length of the escape sequence at the start of s (which
// begins with ESC): a CSI sequence up to its final byte, an OSC/DCS/APC/PM
// string up to its terminator, or ESC plus one character.
func escapeLen(s string) int {
	if len(s) < 2 {
		return len(s)
	}
	switch s[1] {
	case '[': // CSI: parameters and intermediates 0x20-0x3f, final 0x40-0x7e
		for j := 2; j < len(s); j++ {
			if s[j] >= 0x40 && s[j] <= 0x7e {
				return j + 1
			}
			if s[j] < 0x20 || s[j] > 0x3f {
				return j // malformed: drop what we consumed, keep the rest as text
			}
		}
		return len(s)
	case ']', 'P', 'X', '_', '^': // OSC, DCS, SOS, APC, PM: strings ended by BEL or ESC \
		for j := 2; j < len(s); j++ {
			if s[j] == '\a' {
				return j + 1
			}
			if s[j] == '\x1b' && j+1 < len(s) && s[j+1] == '\\' {
				return j + 2
			}
		}
		return len(s)
	}
	_, size := utf8.DecodeRuneInString(s[1:])
	return 1 + size
}
