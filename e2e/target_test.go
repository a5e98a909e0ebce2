package e2e

import (
	"strings"
	"testing"

	"github.com/agentmsg/agentmsg/e2e/harness"
)

// tmux prefix-matches "-t agent-alpha-ana" to agent-alpha-ana-2 when the
// first does not exist; agentmsg must not.
func TestSendTargetsExactSession(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	ana2 := s.StartAgent("agent-alpha-ana-2")

	res := s.Run("send", "alpha", "ana", "hi")
	wantCode(t, res, 3)
	if !strings.Contains(res.Stderr, "agent-alpha-ana") {
		t.Errorf("stderr should name the missing session:\n%s", res.Stderr)
	}
	wantUntouched(t, ana2)

	rep, res := sendJSON(t, s, nil, "alpha", "ana-2", "hi")
	wantCode(t, res, 0)
	if rep.Session != "agent-alpha-ana-2" || rep.Pane != ana2.Pane || rep.Verdict != "submitted" {
		t.Errorf("report names the wrong target or verdict: %+v", rep)
	}
	wantReceived(t, ana2, harness.Submitted(rep.ID, "hi"))
}

func TestInvalidNamesAreUsageErrors(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	ana := s.StartAgent("agent-alpha-ana")
	for _, args := range [][]string{
		{"send", "Alpha", "ana", "hi"},
		{"send", "alpha", "ana;rm", "hi"},
		{"send", "alpha", "Ana", "hi"},
		{"send", "alpha", "ana-", "hi"},
		{"send", "alpha"},
		{"broadcast", "Alpha", "hi"},
		{"list", "al-pha"},
	} {
		res := s.Run(args...)
		if res.Code != 2 {
			t.Errorf("agentmsg %q: want exit 2, got %s", args, res)
		}
		if res.Stderr == "" {
			t.Errorf("agentmsg %q: no message on stderr", args)
		}
	}
	wantUntouched(t, ana)

	for _, args := range [][]string{{"--help"}, {"send", "--help"}, {"broadcast", "--help"}, {"list", "--help"}} {
		res := s.Run(args...)
		wantCode(t, res, 0)
		if !strings.Contains(res.Stdout, "Usage:") {
			t.Errorf("agentmsg %q: no usage on stdout:\n%s", args, res)
		}
	}
}
