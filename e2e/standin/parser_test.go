package main

import (
	"reflect"
	"testing"
)

func feedAll(p *parser, chunks ...string) []event {
	var evs []event
	for _, c := range chunks {
		evs = append(evs, p.feed([]byte(c))...)
	}
	return evs
}

func runes(s string) []event {
	var evs []event
	for _, r := range s {
		evs = append(evs, event{kind: evRune, r: r})
	}
	return evs
}

func TestParser(t *testing.T) {
	paste := func(s string) event { return event{kind: evPaste, text: s} }
	enter := event{kind: evEnter}
	tests := []struct {
		name   string
		chunks []string
		want   []event
	}{
		{"typed text and enter", []string{"hi\r"}, append(runes("hi"), enter)},
		{"LF is enter too", []string{"\n"}, []event{enter}},
		{"paste in one chunk",
			[]string{"\x1b[200~MSG_X_1: hi; #{pane_id}\tq'\"\x1b[201~"},
			[]event{paste("MSG_X_1: hi; #{pane_id}\tq'\"")}},
		{"paste split everywhere",
			[]string{"\x1b", "[20", "0~ab", "c\x1b[2", "01", "~\r"},
			[]event{paste("abc"), enter}},
		{"end marker exactly at chunk boundary",
			[]string{"\x1b[200~one", "\x1b[201~", "x"},
			append([]event{paste("one")}, runes("x")...)},
		{"end marker split after ESC",
			[]string{"\x1b[200~one\x1b", "[201~"},
			[]event{paste("one")}},
		{"ESC inside a paste that is not the end marker",
			[]string{"\x1b[200~a\x1b[20", "2~b\x1b[201~"},
			[]event{paste("a\x1b[202~b")}},
		{"CR in a paste becomes LF, C-c in a paste is text",
			[]string{"\x1b[200~l1\rl2\x03\nl3\x1b[201~"},
			[]event{paste("l1\nl2\x03\nl3")}},
		{"unicode typed, split inside a rune",
			[]string{"é\xe2\x9d", "\xaf日"},
			runes("é❯日")},
		{"unicode pasted, split inside a rune",
			[]string{"\x1b[200~\xf0\x9f", "\x98\x80 ✓\x1b[201~"},
			[]event{paste("😀 ✓")}},
		{"C-c outside a paste", []string{"a\x03b"},
			append(append(runes("a"), event{kind: evInterrupt}), runes("b")...)},
		{"DEL and BS are backspace", []string{"\x7f\x08"},
			[]event{{kind: evBackspace}, {kind: evBackspace}}},
		{"arrows and other CSI are ignored", []string{"\x1b[A\x1b[1;5C\x1b[I", "x"}, runes("x")},
		{"ESC then a letter is Esc then the letter", []string{"\x1bq"},
			append([]event{{kind: evEsc}}, runes("q")...)},
		{"other control bytes are dropped", []string{"\x01\x15a"}, runes("a")},
		{"invalid UTF-8 is dropped", []string{"\xffa"}, runes("a")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p parser
			got := feedAll(&p, tt.chunks...)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %#v\nwant %#v", got, tt.want)
			}
			if p.inPaste || len(p.pending) != 0 {
				t.Errorf("left state behind: inPaste=%v pending=%q", p.inPaste, p.pending)
			}
		})
	}
}

func TestParserLoneEsc(t *testing.T) {
	var p parser
	if evs := p.feed([]byte("\x1b")); len(evs) != 0 {
		t.Fatalf("a trailing ESC must wait for more input, got %v", evs)
	}
	if !p.waitingForEsc() {
		t.Fatal("waitingForEsc() = false after a trailing ESC")
	}
	if got := p.flush(); !reflect.DeepEqual(got, []event{{kind: evEsc}}) {
		t.Fatalf("flush() = %v, want Esc", got)
	}
	if p.waitingForEsc() || p.flush() != nil {
		t.Fatal("Esc reported twice")
	}
}

func TestParserEscFollowedByCSIInNextChunk(t *testing.T) {
	var p parser
	p.feed([]byte("\x1b"))
	if evs := p.feed([]byte("[B")); len(evs) != 0 {
		t.Fatalf("ESC + [B across chunks is an arrow, got %v", evs)
	}
	if p.waitingForEsc() {
		t.Fatal("still waiting after the sequence completed")
	}
}

func TestParserFlushDuringPasteDoesNothing(t *testing.T) {
	var p parser
	p.feed([]byte("\x1b[200~abc\x1b"))
	if p.waitingForEsc() || p.flush() != nil {
		t.Fatal("an ESC inside a paste must not time out into an Esc key")
	}
	if got := p.feed([]byte("[201~")); !reflect.DeepEqual(got, []event{{kind: evPaste, text: "abc"}}) {
		t.Fatalf("got %v", got)
	}
}

func TestParserLargePasteInSmallChunks(t *testing.T) {
	var p parser
	body := make([]byte, 20000)
	for i := range body {
		body[i] = "abc;#{}\n\t"[i%9]
	}
	in := "\x1b[200~" + string(body) + "\x1b[201~"
	var got []event
	for i := 0; i < len(in); i += 7 {
		got = append(got, p.feed([]byte(in[i:min(i+7, len(in))]))...)
	}
	if len(got) != 1 || got[0].kind != evPaste || got[0].text != string(body) {
		t.Fatalf("got %d events, want the paste back intact", len(got))
	}
}
