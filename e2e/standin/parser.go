package main

import (
	"bytes"
	"unicode"
	"unicode/utf8"
)

// eventKind says what a piece of terminal input means to the stand-in.
type eventKind int

const (
	evRune      eventKind = iota // a printable character typed outside a paste
	evBackspace                  // DEL (0x7f) or BS (0x08)
	evEnter                      // CR or LF outside a paste
	evInterrupt                  // C-c (0x03) outside a paste
	evEsc                        // a lone ESC
	evPaste                      // a whole bracketed paste
)

// event is one decoded key press or paste.
type event struct {
	kind eventKind
	r    rune   // evRune only
	text string // evPaste only: the pasted text, CR turned into LF
}

var (
	pasteStart = []byte("\x1b[200~")
	pasteEnd   = []byte("\x1b[201~")
)

// parser turns raw terminal input into events. It is fed chunks as read(2)
// returns them, so any escape sequence, paste marker or UTF-8 rune may be
// split across calls; the unfinished tail is kept until the next call.
type parser struct {
	pending []byte // unconsumed tail: a partial sequence, rune or paste marker
	inPaste bool
	paste   []byte // content of the paste in progress
}

// feed decodes one chunk and returns the events it completes.
func (p *parser) feed(chunk []byte) []event {
	buf := chunk
	if len(p.pending) > 0 {
		buf = append(p.pending, chunk...)
		p.pending = nil
	}
	var evs []event
	for i := 0; i < len(buf); {
		var ev *event
		var n int
		if p.inPaste {
			ev, n = p.scanPaste(buf[i:])
		} else {
			ev, n = p.scanKey(buf[i:])
		}
		if ev != nil {
			evs = append(evs, *ev)
		}
		if n == 0 { // the rest is an unfinished sequence: wait for more input
			p.pending = append([]byte(nil), buf[i:]...)
			break
		}
		i += n
	}
	return evs
}

// waitingForEsc reports whether the input so far ends in an ESC that may be
// a lone Esc key or the start of a sequence; the caller decides after a short
// quiet time by calling flush.
func (p *parser) waitingForEsc() bool {
	return !p.inPaste && len(p.pending) == 1 && p.pending[0] == 0x1b
}

// flush is called when no input followed a pending ESC for a while: it was
// the Esc key.
func (p *parser) flush() []event {
	if !p.waitingForEsc() {
		return nil
	}
	p.pending = nil
	return []event{{kind: evEsc}}
}

// scanPaste consumes paste content up to and including the end marker. It
// returns n == 0 only when b is a prefix of the end marker.
func (p *parser) scanPaste(b []byte) (*event, int) {
	if end := bytes.Index(b, pasteEnd); end >= 0 {
		p.paste = append(p.paste, b[:end]...)
		text := string(bytes.ReplaceAll(p.paste, []byte{'\r'}, []byte{'\n'}))
		p.inPaste, p.paste = false, nil
		return &event{kind: evPaste, text: text}, end + len(pasteEnd)
	}
	// Keep back a tail that could be the start of the end marker.
	keep := markerPrefixLen(b, pasteEnd)
	p.paste = append(p.paste, b[:len(b)-keep]...)
	return nil, len(b) - keep
}

// markerPrefixLen returns the length of the longest suffix of b that is a
// proper prefix of marker.
func markerPrefixLen(b, marker []byte) int {
	for k := min(len(b), len(marker)-1); k > 0; k-- {
		if bytes.HasSuffix(b, marker[:k]) {
			return k
		}
	}
	return 0
}

// scanKey decodes one key or escape sequence at the start of b (outside a
// paste). n == 0 means b holds only an unfinished sequence or rune.
func (p *parser) scanKey(b []byte) (*event, int) {
	switch c := b[0]; {
	case c == 0x1b:
		return p.scanEscape(b)
	case c == '\r' || c == '\n':
		return &event{kind: evEnter}, 1
	case c == 0x7f || c == 0x08:
		return &event{kind: evBackspace}, 1
	case c == 0x03:
		return &event{kind: evInterrupt}, 1
	case c < 0x20:
		return nil, 1 // other control keys mean nothing to the stand-in
	}
	if !utf8.FullRune(b) {
		return nil, 0
	}
	r, size := utf8.DecodeRune(b)
	if r == utf8.RuneError && size == 1 || unicode.IsControl(r) {
		return nil, size // invalid byte or C1 control: dropped
	}
	return &event{kind: evRune, r: r}, size
}

// scanEscape decodes a sequence starting with ESC. Only CSI sequences are
// understood; ESC followed by anything but '[' is the Esc key, and the byte
// after it is decoded on its own.
func (p *parser) scanEscape(b []byte) (*event, int) {
	if len(b) == 1 {
		return nil, 0
	}
	if b[1] != '[' {
		return &event{kind: evEsc}, 1
	}
	// CSI: parameter and intermediate bytes (0x20-0x3f), then a final byte.
	for j := 2; j < len(b); j++ {
		c := b[j]
		switch {
		case c >= 0x20 && c <= 0x3f:
			continue
		case c >= 0x40 && c <= 0x7e:
			if bytes.Equal(b[:j+1], pasteStart) {
				p.inPaste, p.paste = true, nil
			}
			return nil, j + 1 // arrows, focus events, a stray paste end...
		default:
			return nil, j // malformed: drop the ESC [ ... and decode c afresh
		}
	}
	return nil, 0
}
