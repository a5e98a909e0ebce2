package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/agentmsg/agentmsg/e2e/harness"
)

// Senders that type and submit in separate commands interleave unless they
// take turns: every message must arrive whole, alone, and once.
func TestConcurrentSendersNeverMerge(t *testing.T) {
	t.Parallel()
	const senders, perSender = 8, 25
	s := harness.NewTestServer(t)
	ana := s.StartAgent("agent-alpha-ana")

	want := map[string]bool{} // exact prompt -> seen
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, senders*perSender)
	for i := range senders {
		wg.Go(func() {
			for j := range perSender {
				text := fmt.Sprintf("sender %d message %02d", i, j)
				res, err := s.Server.Run("--json", "send", "alpha", "ana", text)
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
	const senders, perSender = 6, 10
	s := harness.NewTestServer(t)
	ana := s.StartAgent("agent-alpha-ana")
	var envs [][]string
	for _, name := range []string{"run-a", "tmp-b"} {
		dir := filepath.Join(s.Dir, name)
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if name == "run-a" {
			envs = append(envs, []string{"XDG_RUNTIME_DIR=" + dir})
		} else {
			envs = append(envs, []string{"XDG_RUNTIME_DIR=", "TMPDIR=" + dir})
		}
	}
	want := map[string]bool{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, senders*perSender)
	for i := range senders {
		wg.Go(func() {
			for j := range perSender {
				text := fmt.Sprintf("sender %d (env %d) message %02d", i, i%2, j)
				cmd := exec.Command(s.Bins.Agentmsg, "-S", s.Socket, "--json", "send", "alpha", "ana", text)
				cmd.Env = append(s.Env(), envs[i%2]...)
				out, err := cmd.Output()
				if err != nil {
					errs <- fmt.Errorf("%q: %v: %s", text, err, out)
					continue
				}
				rep, err := harness.Decode[harness.SendReport](string(out))
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
	wantExactlyOnce(t, ana, want)
	for _, name := range []string{"run-a", "tmp-b"} {
		if left, _ := filepath.Glob(filepath.Join(s.Dir, name, "*", "*")); len(left) > 0 {
			t.Errorf("locks under a sender's own runtime directory: %v", left)
		}
	}
}
