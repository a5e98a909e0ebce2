package e2e

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/e2e/harness"
)

// A deliver killed while it compacts an inbox leaves the compaction's new
// file, a full copy of the inbox, beside it: the next compaction removes
// it. Before, nothing did. The inbox holds 112,000 delivered messages, and
// keeps 100,000, so that writing the new file takes long enough to be
// killed in; the test kills deliver as soon as the file appears.
func TestKilledCompactionsLeftoversAreRemoved(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	s.RunsDirect() // a process of its own: see harness.RunsDirect
	s.StartAgent("agent-alpha-ana")
	env := []string{"AGENTMSG_KEEP_COUNT=100000"}
	wantCode(t, s.Run("send", "--mailbox-only", "alpha", "ana", "the first"), 0)
	inbox := findFile(t, filepath.Join(s.Dir, "state"), "ana.jsonl")
	leftovers := func() []string {
		left, _ := filepath.Glob(filepath.Join(filepath.Dir(inbox), ".ana.jsonl.tmp*"))
		return left
	}

	for try := 1; len(leftovers()) == 0; try++ {
		if try > 5 {
			t.Fatal("deliver finished its compaction before it could be killed, five times")
		}
		writeDeliveredInbox(t, inbox, 112_000)
		deliver := exec.Command(s.Bins.Agentmsg, "-S", s.Socket, "deliver")
		deliver.Env = append(s.Env(), env...)
		if err := deliver.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- deliver.Wait() }()
		killed := false
		for !killed {
			select {
			case <-done:
				killed = true // too late: it compacted and exited
				continue
			case <-time.After(200 * time.Microsecond):
			}
			if len(leftovers()) > 0 {
				_ = deliver.Process.Kill()
				<-done
				killed = true
			}
		}
	}
	t.Logf("a killed compaction left %v", leftovers())

	res, err := s.Server.RunEnv(env, "deliver")
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, res, 0)
	if left := leftovers(); len(left) > 0 {
		t.Fatalf("the next compaction left a killed one's new file: %v", left)
	}
	if n := countLines(t, inbox); n != 100_001 {
		t.Fatalf("the inbox has %d lines after compaction, want a header and 100,000 messages", n)
	}
}

// writeDeliveredInbox replaces the inbox with n messages, each submitted,
// the kind compaction may drop past keep_count.
func writeDeliveredInbox(t *testing.T, inbox string, n int) {
	t.Helper()
	var b strings.Builder
	at := time.Now().UTC().Add(-time.Hour)
	fmt.Fprintf(&b, `{"gen":"%08x","created":"%s"}`+"\n", time.Now().UnixNano()&0xffffffff, at.Format(time.RFC3339Nano))
	for i := range n {
		ts := at.Add(time.Duration(i) * time.Millisecond).Format(time.RFC3339Nano)
		fmt.Fprintf(&b, `{"id":"MSG_TESTER_%08x","from":"tester","to":"ana","type":"text","content":"message %d","timestamp":"%s","delivery":{"state":"submitted","attempts":1,"updated":"%s"}}`+"\n",
			i, i, ts, ts)
	}
	if err := os.WriteFile(inbox, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
}

func countLines(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		n++
	}
	return n
}

// findFile finds the file called name under dir.
func findFile(t *testing.T, dir, name string) string {
	t.Helper()
	var found []string
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == name {
			found = append(found, p)
		}
		return nil
	})
	if len(found) != 1 {
		t.Fatalf("%d files called %s under %s, want 1: %v", len(found), name, dir, found)
	}
	return found[0]
}
