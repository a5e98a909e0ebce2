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

// An agent calls agentmsg from its own pane with no -S and no
// AGENTMSG_FROM: the server is the one it runs in ($TMUX) and the sender is
// its own name.
func TestSendFromInsideAgentPane(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	ana := s.StartAgent("agent-alpha-ana")

	out := filepath.Join(s.Dir, "bob.out")
	var env []string
	for _, kv := range s.Env() {
		if strings.HasPrefix(kv, "XDG_") {
			env = append(env, "'"+kv+"'")
		}
	}
	script := fmt.Sprintf("env -u AGENTMSG_FROM %s '%s' --json send alpha ana 'from bob' > '%s.tmp' 2>&1; echo \"exit $?\" >> '%s.tmp'; mv '%s.tmp' '%s'",
		strings.Join(env, " "), s.Bins.Agentmsg, out, out, out, out)
	s.Tmux("new-session", "-d", "-s", "agent-alpha-bob", "-x", "200", "-y", "50", "/bin/sh", "-c", script+"; sleep 60")

	var got []byte
	deadline := time.Now().Add(20 * time.Second)
	for got == nil && time.Now().Before(deadline) {
		got, _ = os.ReadFile(out)
		time.Sleep(20 * time.Millisecond)
	}
	if got == nil {
		t.Fatalf("agentmsg in agent-alpha-bob did not finish; screen:\n%s", s.Capture("=agent-alpha-bob:"))
	}
	report, code, _ := strings.Cut(string(got), "exit ")
	if strings.TrimSpace(code) != "0" {
		t.Fatalf("agentmsg in agent-alpha-bob: exit %s\n%s", code, report)
	}
	rep, err := harness.Decode[harness.SendReport](report)
	if err != nil {
		t.Fatal(err)
	}
	if rep.From != "BOB" || !strings.HasPrefix(rep.ID, "MSG_BOB_") {
		t.Errorf("sender should be BOB, report says from %q id %q", rep.From, rep.ID)
	}
	wantReceived(t, ana, harness.Submitted(rep.ID, "from bob"))
}
