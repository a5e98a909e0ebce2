package e2e

import (
	"regexp"
	"strings"
	"testing"

	"github.com/agentmsg/agentmsg/e2e/harness"
)

// Every command a message suggests works (issue 31, item 7). A send to a
// host whose daemon is down says to run agentmsg log --id: that command
// says what became of the message, rather than "no such message".
func TestASuggestedLogCommandAnswers(t *testing.T) {
	t.Parallel()
	h1, h2 := harness.TwoHosts(t)
	h2.StartAgent("agent-alpha-ana")
	waitListed(t, h1, "alpha/ana")
	if err := h2.StopDaemon(); err != nil {
		t.Fatal(err)
	}
	res := h1.Run("send", "--host", "h2", "--ready-timeout", "3s", "alpha", "ana", "are you there")
	m := regexp.MustCompile(`agentmsg (log --id MSG_[A-Z0-9_]+_[0-9a-f]{8})`).FindStringSubmatch(res.Stdout + res.Stderr)
	if m == nil {
		t.Fatalf("the send suggests no agentmsg log --id:\n%s", res)
	}
	hint := h1.Run(strings.Fields(m[1])...)
	if hint.Code != 0 || !strings.Contains(hint.Stdout, "h2") {
		t.Fatalf("the suggested agentmsg %s: exit %d; want 0 and what host h2 last said:\n%s", m[1], hint.Code, hint)
	}
}
