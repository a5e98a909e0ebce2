package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/e2e/harness"
	"github.com/agentmsg/agentmsg/mailbox"
)

// Senders queued behind another for an agent showing a dialog: the wait
// for the pane's lock counts against each sender's own ready timeout, so
// each gives up (deferred) after about that long, naming the holder,
// instead of one timeout after another (1, 2, 3, 4 s). Deliver then types
// each once. The holder waits longer (3 s) than the others (1 s), so that
// every one of them is still behind it when it gives up.
func TestSendersBehindADialogEachWaitOnlyTheirTimeout(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	s.RunsDirect() // a process of its own: see harness.RunsDirect
	ana := s.StartAgent("agent-alpha-ana", harness.InitialState("dialog"))
	holder := startAgentmsg(t, s, nil, nil, "--json", "send", "--ready-timeout", "3s", "alpha", "ana", "the holder")
	waitForPaneLock(t, s, holder.cmd.Process.Pid)
	const n = 4
	reps := make([]harness.SendReport, n)
	results := make([]harness.Result, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			results[i], errs[i] = s.Server.Run("--json", "send", "--ready-timeout", "1s", "alpha", "ana", fmt.Sprintf("waiting %d", i))
			if errs[i] == nil {
				reps[i], errs[i] = harness.Decode[harness.SendReport](results[i].Stdout)
			}
		})
	}
	wg.Wait()
	held := fmt.Sprintf("held by pid %d (agentmsg send", holder.cmd.Process.Pid)
	for i := range n {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		res, rep := results[i], reps[i]
		if res.Code != 0 || rep.Verdict != "deferred" {
			t.Errorf("sender %d: want deferred (exit 0), got %s", i, res)
		}
		// A second's wait, and some slack for a loaded machine; one
		// sender after another would take 1, 2, 3 and 4 s.
		if rep.ElapsedMS > 2500 {
			t.Errorf("sender %d took %.0fms with a 1s ready timeout", i, rep.ElapsedMS)
		}
		if !strings.Contains(rep.Error, held) {
			t.Errorf("sender %d should name the holder (%s ...): %q", i, held, rep.Error)
		}
	}
	first := holder.finish(t)
	var hrep harness.SendReport
	if err := json.Unmarshal([]byte(first.Stdout), &hrep); err != nil || hrep.Verdict != "deferred" {
		t.Fatalf("the holder: want deferred, got %s", first)
	}
	wantUntouched(t, ana)

	ana.SetState("ready")
	wantCode(t, s.Run("deliver"), 0)
	got := ana.Received()
	if len(got) != n+1 {
		t.Fatalf("received %d prompts, want each of %d once: %q", len(got), n+1, got)
	}
	for _, rep := range append(reps, hrep) {
		if st := deliveryState(t, s, "alpha", "ana", rep.ID); st != mailbox.StateSubmitted {
			t.Errorf("%s is %s, want submitted", rep.ID, st)
		}
	}
}

// waitForPaneLock waits until the agentmsg with this pid holds a pane's
// lock: its pid is in a pane lock file, beside the server's socket.
func waitForPaneLock(t *testing.T, s *harness.TestServer, pid int) {
	t.Helper()
	locks := filepath.Join(filepath.Dir(s.Socket), ".agentmsg-locks")
	waitFor(t, "the holder's lock file", 10*time.Second, func() bool {
		files, _ := filepath.Glob(filepath.Join(locks, "*.lock"))
		for _, f := range files {
			if b, _ := os.ReadFile(f); strings.Contains(string(b), `"pid":`+strconv.Itoa(pid)) {
				return true
			}
		}
		return false
	})
}

// A sender stopped (SIGSTOP) while it holds the pane's lock blocks no one
// past their own deadline: the next sender defers its message and names
// the holder, stopped. Once the holder is gone, deliver types both.
func TestStoppedLockHolderBlocksNoOne(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	s.RunsDirect() // a process of its own: see harness.RunsDirect
	ana := s.StartAgent("agent-alpha-ana", harness.InitialState("dialog"))
	holder := startAgentmsg(t, s, nil, nil, "--json", "send", "--ready-timeout", "60s", "alpha", "ana", "first")
	pid := holder.cmd.Process.Pid
	waitForPaneLock(t, s, pid)
	holder.signal(t, syscall.SIGSTOP)

	rep, res := sendJSON(t, s, nil, "--ready-timeout", "1s", "alpha", "ana", "second")
	wantCode(t, res, 0)
	if rep.Verdict != "deferred" {
		t.Fatalf("verdict %q, want deferred\n%s", rep.Verdict, res)
	}
	if want := fmt.Sprintf("held by pid %d (agentmsg send", pid); !strings.Contains(rep.Error, want) || !strings.Contains(rep.Error, "stopped") {
		t.Errorf("error %q should name the stopped holder (%s ...)", rep.Error, want)
	}
	if res.Elapsed > 5*time.Second {
		t.Errorf("a 1s ready timeout took %s", res.Elapsed)
	}

	holder.signal(t, syscall.SIGKILL)
	holder.finish(t)
	ana.SetState("ready")
	wantCode(t, s.Run("deliver"), 0)
	got := ana.Received()
	if len(got) != 2 || !strings.HasSuffix(got[0], ": first") || got[1] != harness.Submitted(rep.ID, "second") {
		t.Fatalf("received %q, want first then second, once each", got)
	}
}

// A server whose socket sits in a directory others can write to keeps its
// pane locks in the runtime directory: without XDG_RUNTIME_DIR,
// $TMPDIR/agentmsg-<uid>. One that another user made first, open to
// everyone, is refused, saying why and how to get out: nothing is typed,
// nothing is created in it, and the message is kept (deferred, never
// failed: a pass that failed an older message for it lost it until a
// person retried it). A server whose socket's directory is private (tmux's
// own /tmp/tmux-<uid>) keeps them beside the socket and never goes there,
// and the kept message is typed first.
func TestLockDirOthersMadeIsRefused(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	s.RunsDirect() // a process of its own: see harness.RunsDirect
	ana := s.StartAgent("agent-alpha-ana")
	tmp := t.TempDir()
	shared := filepath.Join(tmp, fmt.Sprintf("agentmsg-%d", os.Getuid()))
	if err := os.Mkdir(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	sockDir := filepath.Dir(s.Socket)
	if err := os.Chmod(sockDir, 0o1777); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(sockDir, 0o700) })
	env := []string{"XDG_RUNTIME_DIR=", "TMPDIR=" + tmp}
	b := startAgentmsg(t, s, nil, env, "send", "alpha", "ana", "through a lock dir someone else made")
	res := b.finish(t)
	if res.Code != 0 || !strings.Contains(res.Stdout, "deferred") || !strings.Contains(res.Stdout, "refusing to use "+shared) ||
		!strings.Contains(res.Stdout, "writable by other users") || !strings.Contains(res.Stdout, "set XDG_RUNTIME_DIR") {
		t.Errorf("want the message kept, saying it refused %s and how to get out, got %s", shared, res)
	}
	if left, _ := os.ReadDir(shared); len(left) != 0 {
		t.Errorf("agentmsg made %d entries in a directory it refused", len(left))
	}
	wantUntouched(t, ana)

	// The socket's directory private again: the pane lock is beside it.
	if err := os.Chmod(sockDir, 0o700); err != nil {
		t.Fatal(err)
	}
	b = startAgentmsg(t, s, nil, env, "--json", "send", "alpha", "ana", "beside the socket")
	if res := b.finish(t); res.Code != 0 {
		t.Fatalf("with a private socket directory: %s", res)
	}
	if got := ana.Received(); len(got) != 2 || !strings.HasSuffix(got[0], ": through a lock dir someone else made") || !strings.HasSuffix(got[1], ": beside the socket") {
		t.Errorf("received %q, want the kept message, then the new one, once each", got)
	}
	if left, _ := os.ReadDir(shared); len(left) != 0 {
		t.Errorf("agentmsg made %d entries in the runtime directory it does not need", len(left))
	}
}
