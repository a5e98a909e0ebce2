package message

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestClean(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain", "hello", "hello"},
		{"keeps tab and newline", "a\tb\nc", "a\tb\nc"},
		{"drops trailing newlines", "a\n\n", "a"},
		{"crlf", "a\r\nb", "a\nb"},
		{"lone cr", "a\rb", "ab"},
		{"ctrl-c", "stop\x03now", "stopnow"},
		{"paste end marker", "x\x1b[201~y", "xy"},
		{"colour", "\x1b[31mred\x1b[0m", "red"},
		{"osc title", "\x1b]0;title\x07text", "text"},
		{"osc st", "\x1b]8;;http://x\x1b\\link", "link"},
		{"esc alone at end", "a\x1b", "a"},
		{"esc plus char", "a\x1bcb", "ab"},
		{"del and c1", "a\x7fb\u0085c", "abc"},
		{"unicode kept", "héllo 世界 🎉", "héllo 世界 🎉"},
		{"tmux syntax kept", `a; -b "c" 'd' #{pane_id} \;`, `a; -b "c" 'd' #{pane_id} \;`},
		{"invalid utf8", "a\xffb", "a\uFFFDb"},
	}
	for _, tt := range tests {
		if got := Clean(tt.in); got != tt.want {
			t.Errorf("%s: Clean(%q) = %q, want %q", tt.name, tt.in, got, tt.want)
		}
	}
}

func FuzzClean(f *testing.F) {
	f.Add("x\x1b[201~y\x03\r\n")
	f.Fuzz(func(t *testing.T, in string) {
		out := Clean(in)
		if !utf8.ValidString(out) {
			t.Fatalf("Clean(%q) = %q is not valid UTF-8", in, out)
		}
		for _, r := range out {
			if (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f || (r >= 0x80 && r < 0xa0) {
				t.Fatalf("Clean(%q) = %q still holds control %U", in, out, r)
			}
		}
		if strings.HasSuffix(out, "\n") {
			t.Fatalf("Clean(%q) = %q ends in a newline", in, out)
		}
	})
}

func TestSender(t *testing.T) {
	for in, want := range map[string]string{"ana": "ANA", "ana-2": "ANA_2", "j.doe": "J_DOE", "--x--": "X", "Lead_1": "LEAD_1"} {
		if got, err := Sender(in); err != nil || got != want {
			t.Errorf("Sender(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "---", "..."} {
		if _, err := Sender(in); err == nil {
			t.Errorf("Sender(%q) accepted an empty sender", in)
		}
	}
}

func TestNewID(t *testing.T) {
	id, err := NewID("ANA", bytes.NewReader([]byte{0xde, 0xad, 0xbe, 0xef}))
	if err != nil || id != "MSG_ANA_deadbeef" {
		t.Fatalf("NewID = %q, %v", id, err)
	}
	if !Valid(string(id)) {
		t.Errorf("Valid(%q) = false", id)
	}
	if _, err := NewID("ANA", bytes.NewReader(nil)); err == nil {
		t.Error("NewID with an empty random source succeeded")
	}
	a, _ := NewID("X", nil)
	b, _ := NewID("X", nil)
	if a == b || !Valid(string(a)) {
		t.Errorf("two fresh ids: %q %q", a, b)
	}
	if got := Format(id, "hi"); got != "MSG_ANA_deadbeef: hi" {
		t.Errorf("Format = %q", got)
	}
}
