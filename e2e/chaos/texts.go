package chaos

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
)

// Every line of a message the scenario sends carries the message's tag,
// zq<n>x, with the line's number: zq17xL2. Whatever part of a message turns
// up in whatever program, the oracle can say whose it is. Only lines meant
// to be dangerous on their own (a bare /exit) carry none. A person's drafts
// carry zd<n>x.
var (
	msgTag   = regexp.MustCompile(`zq(\d+)x`)
	draftTag = regexp.MustCompile(`zd(\d+)x`)
)

func messageTag(n int) string { return fmt.Sprintf("zq%dx", n) }

func draftText(n int) string { return fmt.Sprintf("half-typed zd%dx by a person", n) }

// textShape is one kind of message text.
type textShape string

const (
	shapeShort     textShape = "short"
	shapeLines     textShape = "lines"      // a few lines
	shapeBareLines textShape = "bare-lines" // lines that are commands on their own: /exit, !cmd
	shapeEscapes   textShape = "escapes"    // escape sequences, C-c, CR, DEL, a paste end marker
	shapeBytes     textShape = "bytes"      // NUL bytes, invalid UTF-8, tabs
	shapeLong      textShape = "long"       // one long line
	shapeTall      textShape = "tall"       // many lines
	shapeUnicode   textShape = "unicode"
	shapeDialog    textShape = "dialog" // a line that looks like a dialog's menu
)

var nastyShapes = []textShape{shapeLines, shapeBareLines, shapeEscapes, shapeBytes, shapeLong, shapeTall, shapeUnicode, shapeDialog}

// pickShape is short, or with nasty texts on, any shape (short half the time).
func pickShape(rng *rand.Rand, nasty bool) textShape {
	if !nasty || rng.IntN(2) == 0 {
		return shapeShort
	}
	return nastyShapes[rng.IntN(len(nastyShapes))]
}

// messageText is the text of message n, of the given shape.
func messageText(rng *rand.Rand, n int, shape textShape) string {
	tag := messageTag(n)
	line := func(i int, s string) string { return fmt.Sprintf("%sL%d %s", tag, i, s) }
	switch shape {
	case shapeLines:
		var ls []string
		for i := range 2 + rng.IntN(4) {
			ls = append(ls, line(i, "part of a message in several lines"))
		}
		return strings.Join(ls, "\n")
	case shapeBareLines:
		return strings.Join([]string{line(0, "please read the next lines"), "/exit",
			"!echo " + tag + "L2 ran as a command", line(3, "end")}, "\n")
	case shapeEscapes:
		return line(0, "\x1b[31mred\x1b[0m \x1b]0;title\a bell\a cc\x03 cr\r del\x7f end\x1b[201~ after a paste end \x1b[200~")
	case shapeBytes:
		return line(0, "nul\x00byte bad\xff\xfeutf8 \xc3( tab\there") + "\n" + line(1, "\x00\x00")
	case shapeLong:
		return line(0, strings.Repeat("long text ", 300+rng.IntN(1700)))
	case shapeTall:
		var ls []string
		for i := range 30 + rng.IntN(90) {
			ls = append(ls, line(i, "row"))
		}
		return strings.Join(ls, "\n")
	case shapeUnicode:
		return line(0, "héllo wörld 日本語 🎉 ❯ ─── ✻ a\u00a0b \u200b")
	case shapeDialog:
		return line(0, "hi") + "\n" + "❯ 1. Yes\n  2. No\n" + line(3, "Do you want to proceed?")
	}
	return line(0, "hello from the chaos test")
}
