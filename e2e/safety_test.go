package e2e

import (
	"strings"
	"testing"

	"github.com/agentmsg/agentmsg/e2e/harness"
)

// Metadata is typed with the message, so it is cleaned like the message:
// an ESC[201~ in a --meta value must not end the bracketed paste, and the
// CRs after it must not submit a second, id-less prompt.
func TestMetaCannotInject(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	carl := s.StartAgent("agent-alpha-carl")
	rep, res := sendJSON(t, s, nil, "--agent", "generic", "--meta", "k=v1\x1b[201~\rINJECTED\r", "alpha", "carl", "body")
	wantCode(t, res, 0)
	wantReceived(t, carl, harness.Submitted(rep.ID, "k=v1INJECTED body"))
	for _, p := range carl.Received() {
		if strings.ContainsAny(p, "\x1b\r") {
			t.Errorf("a control character reached the agent: %q", p)
		}
	}
}

// A mistyped team is exit 3 naming the teams that exist, never an empty
// inbox, log or request list.
func TestMistypedTeamIsNotFound(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	s.StartAgent("agent-alpha-ana")
	for _, args := range [][]string{{"inbox", "alpah", "ana"}, {"log", "alpah"}, {"--team", "alpah", "requests"}} {
		res := s.Run(args...)
		wantCode(t, res, 3)
		if !strings.Contains(res.Stderr, `"alpah"`) || !strings.Contains(res.Stderr, "teams: alpha") {
			t.Errorf("%v: stderr should name the teams that exist:\n%s", args, res)
		}
	}
}
