package main

import (
	"strings"
	"unicode/utf8"
)

// segment is a run of draft text. A folded paste is its own segment so that
// the box can show a label while the full text is what gets submitted.
type segment struct {
	text  []byte // kept as bytes: typing appends and backspace truncates in O(1)
	label string // non-empty for a folded paste: what the box shows instead
}

// draft is the text in the input box, not yet submitted.
type draft struct {
	segs []segment // never holds an empty segment
}

func (d *draft) empty() bool { return len(d.segs) == 0 }

func (d *draft) clear() { d.segs = nil }

// addText appends typed or pasted-inline text.
func (d *draft) addText(s string) {
	if s == "" {
		return
	}
	if n := len(d.segs); n > 0 && d.segs[n-1].label == "" {
		d.segs[n-1].text = append(d.segs[n-1].text, s...)
		return
	}
	d.segs = append(d.segs, segment{text: []byte(s)})
}

// addFolded appends a paste that the box shows as label.
func (d *draft) addFolded(s, label string) {
	d.segs = append(d.segs, segment{text: []byte(s), label: label})
}

// backspace deletes the last rune; a folded paste goes as a whole, since
// its label is one token on screen.
func (d *draft) backspace() {
	n := len(d.segs)
	if n == 0 {
		return
	}
	last := &d.segs[n-1]
	if last.label == "" {
		_, size := utf8.DecodeLastRune(last.text)
		last.text = last.text[:len(last.text)-size]
	}
	if last.label != "" || len(last.text) == 0 {
		d.segs = d.segs[:n-1]
	}
}

// text is what Enter submits.
func (d *draft) text() string {
	var b strings.Builder
	for _, s := range d.segs {
		b.Write(s.text)
	}
	return b.String()
}

// display is what the box shows.
func (d *draft) display() string {
	var b strings.Builder
	for _, s := range d.segs {
		if s.label != "" {
			b.WriteString(s.label)
		} else {
			b.Write(s.text)
		}
	}
	return b.String()
}
