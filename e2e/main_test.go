// Package e2e runs the real agentmsg binary against private tmux servers
// and stand-in agents. A stand-in's log, never its screen, decides whether
// a message arrived.
package e2e

import (
	"os"
	"slices"
	"testing"

	"github.com/agentmsg/agentmsg/e2e/harness"
)

func TestMain(m *testing.M) {
	code := m.Run()
	harness.Cleanup()
	os.Exit(code)
}

// wantCode fails the test unless res exited with code.
func wantCode(t *testing.T, res harness.Result, code int) {
	t.Helper()
	if res.Code != code {
		t.Fatalf("want exit %d, got %s", code, res)
	}
}

// sendJSON runs `--json send args...` (stdin when given) and decodes its report.
func sendJSON(t *testing.T, s *harness.TestServer, stdin *string, args ...string) (harness.SendReport, harness.Result) {
	t.Helper()
	args = append([]string{"--json", "send"}, args...)
	var res harness.Result
	if stdin != nil {
		res = s.RunStdin(*stdin, args...)
	} else {
		res = s.Run(args...)
	}
	rep, err := harness.Decode[harness.SendReport](res.Stdout)
	if err != nil {
		t.Fatalf("%v\n%s", err, res)
	}
	return rep, res
}

// wantReceived fails the test unless the agent's log holds exactly want, in
// order. Read right after agentmsg exits: the stand-in logs a prompt before
// its screen shows it submitted, so nothing needs waiting for.
func wantReceived(t *testing.T, a *harness.TestAgent, want ...string) {
	t.Helper()
	got := a.Received()
	if !slices.Equal(got, want) {
		t.Fatalf("%s received %d prompt(s):\n%q\nwant %d:\n%q", a.Session, len(got), clip(got), len(want), clip(want))
	}
}

// wantUntouched fails the test if the agent got a prompt or a key in a dialog.
func wantUntouched(t *testing.T, a *harness.TestAgent) {
	t.Helper()
	for _, r := range a.Records() {
		if r.Kind != "started" {
			t.Errorf("%s should have received nothing, got %s %q", a.Session, r.Kind, r.Text)
		}
	}
}

// clip keeps failure messages readable when a text is 20 KB long.
func clip(texts []string) []string {
	out := make([]string, len(texts))
	for i, s := range texts {
		if len(s) > 300 {
			s = s[:150] + "…" + s[len(s)-150:]
		}
		out[i] = s
	}
	return out
}
