package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/e2e/harness"
)

// runInPane runs agentmsg args inside a new session, as an agent calling it
// as a tool would: no -S, no AGENTMSG_FROM, $TMUX and $TMUX_PANE set by
// tmux. It returns stdout and stderr together, and the exit code.
func runInPane(t *testing.T, s *harness.TestServer, session string, args ...string) (string, string) {
	t.Helper()
	out := filepath.Join(s.Dir, session+".out")
	var env []string
	for _, kv := range s.Env() {
		if strings.HasPrefix(kv, "XDG_") {
			env = append(env, "'"+kv+"'")
		}
	}
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = "'" + a + "'"
	}
	script := fmt.Sprintf("env -u AGENTMSG_FROM %s '%s' %s > '%s.tmp' 2>&1; echo \"exit $?\" >> '%s.tmp'; mv '%s.tmp' '%s'",
		strings.Join(env, " "), s.Bins.Agentmsg, strings.Join(quoted, " "), out, out, out, out)
	s.Tmux("new-session", "-d", "-s", session, "-x", "200", "-y", "50", "/bin/sh", "-c", script+"; sleep 60")

	var got []byte
	deadline := time.Now().Add(20 * time.Second)
	for got == nil && time.Now().Before(deadline) {
		got, _ = os.ReadFile(out)
		time.Sleep(20 * time.Millisecond)
	}
	if got == nil {
		t.Fatalf("agentmsg in %s did not finish; screen:\n%s", session, s.Capture("="+session+":"))
	}
	report, code, _ := strings.Cut(string(got), "exit ")
	return report, strings.TrimSpace(code)
}

// An agent calls agentmsg from its own pane with no -S and no
// AGENTMSG_FROM: the server is the one it runs in ($TMUX) and the sender is
// its own name.
func TestSendFromInsideAgentPane(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	ana := s.StartAgent("agent-alpha-ana")

	report, code := runInPane(t, s, "agent-alpha-bob", "--json", "send", "alpha", "ana", "from bob")
	if code != "0" {
		t.Fatalf("agentmsg in agent-alpha-bob: exit %s\n%s", code, report)
	}
	rep, err := harness.Decode[harness.SendReport](report)
	if err != nil {
		t.Fatal(err)
	}
	if rep.From != "bob" || !strings.HasPrefix(rep.ID, "MSG_BOB_") {
		t.Errorf("sender should be bob (MSG_BOB_ in the id), report says from %q id %q", rep.From, rep.ID)
	}
	wantReceived(t, ana, harness.Submitted(rep.ID, "from bob"))
}

// An agent broadcasting to its own team is busy running agentmsg: it must
// leave itself out rather than wait for its own prompt and fail.
func TestBroadcastFromInsideAgentPaneSkipsSelf(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	ana := s.StartAgent("agent-alpha-ana")
	cy := s.StartAgent("agent-alpha-cy")

	report, code := runInPane(t, s, "agent-alpha-bob", "--json", "--ready-timeout", "2s", "broadcast", "alpha", "team news")
	if code != "0" {
		t.Fatalf("broadcast from agent-alpha-bob: exit %s\n%s", code, report)
	}
	rep, err := harness.Decode[harness.BroadcastReport](report)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Delivered != 2 || rep.Failed != 0 || len(rep.Results) != 2 {
		t.Errorf("report: %d delivered, %d failed, %d results; want 2, 0, 2 (bob left out)", rep.Delivered, rep.Failed, len(rep.Results))
	}
	wantReceived(t, ana, harness.Submitted(rep.ID, "team news"))
	wantReceived(t, cy, harness.Submitted(rep.ID, "team news"))

	report, code = runInPane(t, s, "agent-alpha-dee", "send", "alpha", "dee", "talking to myself")
	if code != "2" || !strings.Contains(report, "you run in") {
		t.Errorf("send to oneself: exit %s, want 2 and a reason\n%s", code, report)
	}
}
