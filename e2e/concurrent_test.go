package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/agentmsg/agentmsg/e2e/harness"
)

// Senders that type and submit in separate commands interleave unless they
// take turns: every message must arrive whole, alone, and once.
func TestConcurrentSendersNeverMerge(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	ana := s.StartAgent("agent-alpha-ana")
	want := sendAtOnce(t, s, 8, 25, func(i int) []string { return nil })
	wantExactlyOnce(t, ana, want)
}

// Senders whose environments differ take the same locks: one with its own
// XDG_RUNTIME_DIR, one with none and another TMPDIR, as an agent's hook, an
// MCP server or a desktop app's backend may run. The pane's lock is beside
// the server's socket, the inbox's and the message's in the mailbox. (With
// the locks under each one's runtime directory, two such senders typed
// into the pane at once.)
func TestSendersInDifferentEnvironmentsShareLocks(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	ana := s.StartAgent("agent-alpha-ana")
	run, tmp := filepath.Join(s.Dir, "run-a"), filepath.Join(s.Dir, "tmp-b")
	for _, dir := range []string{run, tmp} {
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	envs := [][]string{{"XDG_RUNTIME_DIR=" + run}, {"XDG_RUNTIME_DIR=", "TMPDIR=" + tmp}}
	want := sendAtOnce(t, s, 6, 10, func(i int) []string { return envs[i%2] })
	wantExactlyOnce(t, ana, want)
	for _, dir := range []string{run, tmp} {
		if left, _ := filepath.Glob(filepath.Join(dir, "*", "*")); len(left) > 0 {
			t.Errorf("locks under a sender's own runtime directory: %v", left)
		}
	}
}

// sendAtOnce runs senders concurrent senders of perSender messages each to
// alpha/ana, sender i with env(i) added to its environment, and returns
// the prompt each reported message must arrive as (harness.Submitted),
// mapped to false. A send that fails fails the test.
func sendAtOnce(t *testing.T, s *harness.TestServer, senders, perSender int, env func(i int) []string) map[string]bool {
	t.Helper()
	want := map[string]bool{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, senders*perSender)
	for i := range senders {
		wg.Go(func() {
			for j := range perSender {
				text := fmt.Sprintf("sender %d message %02d", i, j)
				res, err := s.Server.RunEnv(env(i), "--json", "send", "alpha", "ana", text)
				if err == nil && res.Code != 0 {
					err = fmt.Errorf("%q: %s", text, res)
				}
				if err != nil {
					errs <- err
					continue
				}
				rep, err := harness.Decode[harness.SendReport](res.Stdout)
				if err != nil {
					errs <- err
					continue
				}
				mu.Lock()
				want[harness.Submitted(rep.ID, text)] = false
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if len(want) != senders*perSender {
		t.Errorf("%d sends reported, want %d", len(want), senders*perSender)
	}
	return want
}
