package message

import (
	"bytes"
	"math/rand/v2"
	"regexp"
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

// cleanSeeds are inputs that once got, or could get, something through.
var cleanSeeds = []string{
	"x\x1b[201~y\x03\r\n",
	"k=v1\x1b[201~\rINJECTED\r", // issue 10: metadata typed raw
	"\x1b\x1b[201~",             // ESC ESC eats one; "[201~" is left, without ESC
	"\x1b[\x1b[201~201~",        // a malformed CSI around a real one
	"\x1b[20\x1b[201~1~",        // removing the inner one joins "\x1b[20" and "1~"
	"\x1b]0;\x1b[201~\x07after", // a marker inside an OSC string
	"\x1bP\x1b\\[201~",          // DCS ended by ST, then the marker's tail
	"\u009b201~",                // C1 CSI
	"\xc2\x9b201~",              // the same, as bytes
	"\x9b201~",                  // a lone C1 byte: invalid UTF-8
	"\x00\x1b\x00[201~",         // NULs around ESC
	"\x1b[200~pasted\x1b[201~",
	"a\r\r\nb\r",
	"\x1bX sos \x1b\\ text",
	"tab\there\nnext line\n\n",
	"\xff\xfe\x00",
}

func TestCleanJoins(t *testing.T) {
	for _, in := range cleanSeeds {
		out := Clean(in)
		if strings.Contains(out, "\x1b") || strings.Contains(out, "\r") || strings.ContainsRune(out, 0x9b) {
			t.Errorf("Clean(%q) = %q", in, out)
		}
	}
	for in, want := range map[string]string{
		"\x1b\x1b[201~":         "[201~",
		"\x1b[20\x1b[201~1~":    "1~",
		"\x1b]0;\x1b[201~\x07a": "a",
		"\x1bX sos \x1b\\ text": " text",
		"\x00nul\x00":           "nul",
		"\u009b201~":            "201~",
	} {
		if got := Clean(in); got != want {
			t.Errorf("Clean(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCleanLine(t *testing.T) {
	for in, want := range map[string]string{
		"v1\x1b[201~\rINJECTED\r": "v1INJECTED",
		"two\nlines\tand tab\n":   "two lines and tab",
		"plain":                   "plain",
	} {
		if got := CleanLine(in); got != want {
			t.Errorf("CleanLine(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestFormatCleans(t *testing.T) {
	if got := Format("MSG_A_deadbeef", "k=v\x1b[201~\rX\r"); got != "MSG_A_deadbeef: k=vX" {
		t.Errorf("Format = %q", got)
	}
}

// FuzzClean checks what Clean promises, for any input: nothing a terminal
// acts on survives, so the end of a bracketed paste cannot be formed.
func FuzzClean(f *testing.F) {
	for _, s := range cleanSeeds {
		f.Add(s)
	}
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
		if strings.Contains(out, "\x1b") || strings.Contains(out, "\x1b[201~") || strings.Contains(out, "\x1b[200~") {
			t.Fatalf("Clean(%q) = %q holds an ESC", in, out)
		}
		if strings.HasSuffix(out, "\n") {
			t.Fatalf("Clean(%q) = %q ends in a newline", in, out)
		}
		if again := Clean(out); again != out {
			t.Fatalf("Clean is not idempotent: %q -> %q -> %q", in, out, again)
		}
		line := CleanLine(in)
		if strings.ContainsAny(line, "\n\t\r\x1b") {
			t.Fatalf("CleanLine(%q) = %q is not one clean line", in, line)
		}
		typed := Format("MSG_X_00000000", in)
		if strings.ContainsAny(typed, "\r\x1b") {
			t.Fatalf("Format(id, %q) = %q", in, typed)
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

// Request and workflow ids come from the same generator as message ids:
// a prefix and 8 fresh hex digits.
func TestOtherIDs(t *testing.T) {
	for _, tt := range []struct {
		make func() (string, error)
		re   string
	}{
		{NewRequestID, `^REQ_[0-9a-f]{8}$`},
		{NewWorkflowID, `^WF_[0-9a-f]{8}$`},
	} {
		a, errA := tt.make()
		b, errB := tt.make()
		if errA != nil || errB != nil || a == b || !regexp.MustCompile(tt.re).MatchString(a) {
			t.Errorf("two fresh ids: %q %v, %q %v; want %s", a, errA, b, errB, tt.re)
		}
	}
	if tok, err := NewToken("X_", bytes.NewReader([]byte{1, 2, 3, 4})); tok != "X_01020304" || err != nil {
		t.Errorf("NewToken = %q, %v", tok, err)
	}
}

func TestPrintable(t *testing.T) {
	tests := []struct{ in, want, line string }{
		{"plain text", "plain text", "plain text"},
		{"w\x1b[2Jy", `w\x1b[2Jy`, `w\x1b[2Jy`},
		{"m\x1b]52;c;aGk=\x07", `m\x1b]52;c;aGk=\x07`, `m\x1b]52;c;aGk=\x07`},
		{"two\nlines\tand tab", "two\nlines\tand tab", `two\nlines\tand tab`},
		{"cr\rover", `cr\rover`, `cr\rover`},
		{"c1 \u009b2J del \x7f nul \x00", `c1 \u009b2J del \x7f nul \x00`, `c1 \u009b2J del \x7f nul \x00`},
		{"bidi \u202egnp.exe\u202c \u2066x\u2069", `bidi \u202egnp.exe\u202c \u2066x\u2069`, `bidi \u202egnp.exe\u202c \u2066x\u2069`},
		{"bad \xff\xfe utf8", `bad \xff\xfe utf8`, `bad \xff\xfe utf8`},
		{"kept: é 世界 🎉 \uFFFD", "kept: é 世界 🎉 \uFFFD", "kept: é 世界 🎉 \uFFFD"},
	}
	for _, tt := range tests {
		if got := Printable(tt.in); got != tt.want {
			t.Errorf("Printable(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if got := PrintableLine(tt.in); got != tt.line {
			t.Errorf("PrintableLine(%q) = %q, want %q", tt.in, got, tt.line)
		}
	}
}

// FuzzPrintable checks that nothing Printable returns can act on a
// terminal or reorder text.
func FuzzPrintable(f *testing.F) {
	for _, s := range cleanSeeds {
		f.Add(s)
	}
	f.Add("\u202e\u2066\u2028\u0085")
	f.Fuzz(func(t *testing.T, in string) {
		for _, oneLine := range []bool{false, true} {
			out := printable(in, oneLine)
			if !utf8.ValidString(out) {
				t.Fatalf("printable(%q, %v) = %q is not valid UTF-8", in, oneLine, out)
			}
			for _, r := range out {
				if Unsafe(r) && (oneLine || (r != '\n' && r != '\t')) {
					t.Fatalf("printable(%q, %v) = %q holds %U", in, oneLine, out, r)
				}
			}
		}
	})
}

// Valid is exactly the regexp it replaces, on ids and near misses.
func TestValidIsTheRegexp(t *testing.T) {
	re := regexp.MustCompile(`^MSG_[A-Z0-9_]+_[0-9a-f]{8}$`)
	cases := []string{"", "MSG_", "MSG__0badcafe", "MSG_A_0badcafe", "MSG_LEAD_0badcafe", "MSG_A_B_0badcafe",
		"MSG_a_0badcafe", "MSG_A_0BADCAFE", "MSG_A_0badcaf", "MSG_A_0badcafe0", "MSG_A-0badcafe", "msg_A_0badcafe",
		"MSG_A_0badcafe\n", "MSG_É_0badcafe", "MSG___0badcafe", "MSG_A__0badcafe"}
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := []byte("MSG_AZ09az_fx-\n")
	for range 20000 {
		b := []byte("MSG_")
		for range rng.IntN(16) {
			b = append(b, alphabet[rng.IntN(len(alphabet))])
		}
		cases = append(cases, string(b))
	}
	for range 20000 {
		b := []byte("MSG_")
		for range 1 + rng.IntN(5) {
			b = append(b, "AZ09_"[rng.IntN(5)])
		}
		b = append(b, '_')
		for range 8 {
			b = append(b, "0123456789abcdef"[rng.IntN(16)])
		}
		if rng.IntN(2) == 0 {
			b[rng.IntN(len(b))] = alphabet[rng.IntN(len(alphabet))]
		}
		cases = append(cases, string(b))
	}
	valid := 0
	for _, c := range cases {
		if re.MatchString(c) {
			valid++
		}
		if Valid(c) != re.MatchString(c) {
			t.Errorf("Valid(%q) = %v, the regexp says %v", c, Valid(c), re.MatchString(c))
		}
	}
	if valid < 5000 {
		t.Errorf("only %d of %d cases were ids", valid, len(cases))
	}
}
