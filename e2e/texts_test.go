package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentmsg/agentmsg/e2e/harness"
)

// Every text reaches the agent exactly as written, except what a terminal
// would act on (escape sequences, C-c), which is removed.
func TestTextsArriveExactly(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("0123456789abcdef", 20*1024/16-1) + "the end;"
	tests := []struct {
		name  string
		text  string
		stdin bool   // pass the text on stdin rather than as arguments
		want  string // received after the id; "" means text itself
	}{
		{name: "ends in semicolon", text: "run the tests;"},
		{name: "just a semicolon", text: ";"},
		{name: "escaped semicolon", text: `a \; b`},
		{name: "starts with dash", text: "-v is verbose"},
		{name: "starts with dash on stdin", text: "--json is a flag", stdin: true},
		{name: "quotes", text: `it's "quoted" and 'single'`},
		{name: "tmux format", text: "#{pane_id} #(echo pwned) #[fg=red]"},
		{name: "key names", text: "Enter C-c Escape"},
		{name: "unicode", text: "emoji 🎉👩‍💻 CJK 世界 combining e\u0301 and n\u0303"},
		{name: "tab", text: "col1\tcol2", stdin: true},
		{name: "lines", text: "first line\nsecond line\n\nfourth line", stdin: true},
		{name: "20 KB", text: big},
		{name: "colour escapes", text: "\x1b[31mred\x1b[0m plain", stdin: true, want: "red plain"},
		{name: "paste end marker", text: "before\x1b[201~after", stdin: true, want: "beforeafter"},
		{name: "paste end then enter", text: "x\x1b[201~\rrm -rf /\r", stdin: true, want: "xrm -rf /"},
		{name: "ctrl-c", text: "stop\x03 now", stdin: true, want: "stop now"},
		{name: "trailing newline", text: "piped\n", stdin: true, want: "piped"},
	}
	s := harness.NewTestServer(t)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			name := fmt.Sprintf("c%02d", i)
			a := s.StartAgent("agent-alpha-" + name)
			var rep harness.SendReport
			var res harness.Result
			if tt.stdin {
				rep, res = sendJSON(t, s, &tt.text, "--agent", "nofold", "alpha", name, "-")
			} else {
				// "--" ends the flags so that a text starting with "-" is a text.
				rep, res = sendJSON(t, s, nil, "--agent", "nofold", "alpha", name, "--", tt.text)
			}
			wantCode(t, res, 0)
			want := tt.want
			if want == "" {
				want = tt.text
			}
			wantReceived(t, a, harness.Submitted(rep.ID, want))
			if got := a.OfKind("interrupt"); len(got) > 0 {
				t.Errorf("the agent was interrupted")
			}
		})
	}
}

// A message with no text left after cleaning is a usage error, not an
// empty prompt.
func TestEmptyMessageIsRefused(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	ana := s.StartAgent("agent-alpha-ana")
	for _, stdin := range []string{"", "\n\n", "\x03", "\x1b[31m\x1b[0m"} {
		res := s.RunStdin(stdin, "send", "alpha", "ana")
		if res.Code != 2 {
			t.Errorf("stdin %q: want exit 2, got %s", stdin, res)
		}
	}
	wantUntouched(t, ana)
}
