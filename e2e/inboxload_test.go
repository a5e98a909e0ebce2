package e2e

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentmsg/agentmsg/e2e/harness"
)

// 1,500 senders to one inbox at once, all waiting for its lock together:
// every message is recorded and none fails. A sender waits for the lock as
// long as a running process holds it; before, 1,162 of 1,500 gave up after
// 10 s, taking the last holder named in the lock file (which had exited)
// for one stopped while writing. The test holds the lock while it starts
// them, so that all of them wait at once, then lets go.
func TestFifteenHundredSendersToOneInbox(t *testing.T) {
	if testing.Short() {
		t.Skip("1,500 agentmsg processes at once (about 10 s on 2 cores)")
	}
	if !namesLockHolders {
		t.Skip("no lock holder can be named here, so a sender gives up after two checks (20 s) behind running holders too: docs/platforms.md")
	}
	const senders = 1500
	s := harness.NewTestServer(t)
	wantCode(t, s.Run("send", "--mailbox-only", "--create", "alpha", "ana", "the first"), 0)
	unlock := holdInboxLock(t, s, "ana")

	// Each sender's output goes to files, not pipes: 3,000 pipes and as
	// many goroutines in this process would be its own load.
	out := t.TempDir()
	cmds := make([]*exec.Cmd, senders)
	for i := range cmds {
		cmds[i] = exec.Command(s.Bins.Agentmsg, "-S", s.Socket, "send", "--mailbox-only", "alpha", "ana", fmt.Sprintf("sender %04d", i))
		cmds[i].Env = s.Env()
		stderr, err := os.Create(filepath.Join(out, fmt.Sprintf("%04d.err", i)))
		if err != nil {
			t.Fatal(err)
		}
		cmds[i].Stderr = stderr
		err = cmds[i].Start()
		stderr.Close()
		if err != nil {
			unlock()
			t.Fatalf("starting sender %d: %v", i, err)
		}
	}
	start := time.Now()
	unlock()
	var wg sync.WaitGroup
	failed := make([]string, senders)
	for i, c := range cmds {
		wg.Go(func() {
			if err := c.Wait(); err != nil {
				msg, _ := os.ReadFile(filepath.Join(out, fmt.Sprintf("%04d.err", i)))
				failed[i] = fmt.Sprintf("sender %04d: %v: %s", i, err, msg)
			}
		})
	}
	wg.Wait()
	t.Logf("%d senders done %s after the lock was let go", senders, time.Since(start).Round(time.Millisecond))
	var fails []string
	for _, f := range failed {
		if f != "" {
			fails = append(fails, f)
		}
	}
	if len(fails) > 0 {
		t.Errorf("%d of %d sends failed; the first: %s", len(fails), senders, strings.Join(fails[:min(3, len(fails))], "\n"))
	}

	res := s.Run("--json", "log", "alpha", "ana")
	wantCode(t, res, 0)
	log, err := harness.Decode[struct {
		Messages []struct {
			Content string `json:"content"`
		} `json:"messages"`
	}](res.Stdout)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, m := range log.Messages {
		seen[m.Content]++
	}
	for i := range senders {
		if text := fmt.Sprintf("sender %04d", i); seen[text] != 1 {
			t.Errorf("%q recorded %d times, want once", text, seen[text])
		}
	}
}

// holdInboxLock takes the lock of agent's inbox (whose file the mailbox
// already holds) as a writer does, and returns the function that lets it go.
func holdInboxLock(t *testing.T, s *harness.TestServer, agent string) (unlock func()) {
	t.Helper()
	var path string
	_ = filepath.WalkDir(filepath.Join(s.Dir, "state"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == agent+".lock" {
			path = p
			return filepath.SkipAll
		}
		return nil
	})
	if path == "" {
		t.Fatalf("no lock file of %s's inbox under %s", agent, s.Dir)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	unlock = func() { once.Do(func() { f.Close() }) }
	t.Cleanup(unlock)
	return unlock
}
