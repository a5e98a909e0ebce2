package e2e

import (
	"fmt"
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
