package e2e

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/e2e/harness"
)

// An agent behind a launcher (sh -c 'sleep 2; exec standin …', the way
// pyenv's bash shim, npx or a wrapper script start an agent CLI) reads as
// a shell until the launcher execs it. A send, and a deliver, that find it
// so look at the pane's program with every look and read it as itself
// once it is there: submitted about 2 s in. Before, the shell's profile,
// fixed at the first look, read it for the whole ready timeout (15 s
// here, 30 s by default), and the message was deferred though the agent
// was up after 2 s. Nothing is typed into the launcher meanwhile: each
// agent gets its message once.
func TestAnAgentBehindALauncherGetsItsMessageWhenItStarts(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	const wait = 2 * time.Second
	var mu sync.Mutex
	agents := map[string]*harness.Agent{}
	started := make(chan error, 2)
	for _, session := range []string{"agent-alpha-ana", "agent-beta-bob"} {
		go func() {
			a, err := s.Server.StartAgent(session, harness.BehindLauncher(wait))
			mu.Lock()
			agents[session] = a
			mu.Unlock()
			started <- err
		}()
	}
	waitFor(t, "both launchers in their panes", 10*time.Second, func() bool {
		out, err := s.Server.Tmux("list-panes", "-a", "-F", "#{session_name} #{pane_current_command}")
		return err == nil && strings.Contains(out, "agent-alpha-ana sh\n") && strings.Contains(out, "agent-beta-bob sh\n")
	})
	// bob's message waits in his inbox for a deliver: his launcher has
	// the pane for longer than this send waits.
	kept, res := sendJSON(t, s, nil, "--ready-timeout", "100ms", "beta", "bob", "kept for bob")
	wantCode(t, res, 0)
	if kept.Verdict != "deferred" {
		t.Fatalf("a send into bob's launcher: %s, want deferred", res)
	}

	var wg sync.WaitGroup
	var sent, delivered harness.Result
	wg.Go(func() {
		sent, _ = s.Server.Run("--json", "send", "--ready-timeout", "15s", "alpha", "ana", "behind a launcher")
	})
	wg.Go(func() { delivered, _ = s.Server.Run("deliver", "--ready-timeout", "15s", "beta") })
	wg.Wait()
	for range 2 {
		if err := <-started; err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("send: exit %d after %s; deliver: exit %d after %s", sent.Code, sent.Elapsed.Round(time.Millisecond),
		delivered.Code, delivered.Elapsed.Round(time.Millisecond))
	rep, err := harness.Decode[harness.SendReport](sent.Stdout)
	if err != nil || rep.Verdict != "submitted" {
		t.Errorf("%v: the send to ana behind a launcher, want submitted:\n%s", err, sent)
	}
	wantCode(t, delivered, 0)
	want := map[string][]string{
		"agent-alpha-ana": {harness.Submitted(rep.ID, "behind a launcher")},
		"agent-beta-bob":  {harness.Submitted(kept.ID, "kept for bob")},
	}
	for session, a := range agents {
		got, err := a.Received()
		if err != nil || !slices.Equal(got, want[session]) {
			t.Errorf("%s received %q (%v), want %q\ndeliver said:\n%s\nlog:\n%s", session, got, err, want[session], delivered, s.Run("log", "beta", "bob"))
		}
	}
}
