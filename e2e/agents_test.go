package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/e2e/harness"
)

// An agent that stays busy after each prompt and does not queue: the second
// send waits for it instead of typing into a busy agent.
func TestBackToBackSendsToAgentBusyAfterSubmit(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	ana := s.StartAgent("agent-alpha-ana", harness.BusyAfterSubmit(300*time.Millisecond), harness.NoQueue(), harness.Style("plain"))

	one, res := sendJSON(t, s, nil, "alpha", "ana", "first")
	wantCode(t, res, 0)
	two, res := sendJSON(t, s, nil, "alpha", "ana", "second")
	wantCode(t, res, 0)
	wantReceived(t, ana, harness.Submitted(one.ID, "first"), harness.Submitted(two.ID, "second"))
	for _, r := range ana.Records() {
		if r.Queued {
			t.Errorf("typed while busy: %q was queued", r.Text)
		}
	}
}

// Team-less ralph agents are addressed as ralph-<id> under any team.
func TestSendToRalphAgent(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	r7 := s.StartAgent("agent-ralph-r7")

	rep, res := sendJSON(t, s, nil, "whatever", "ralph-r7", "loop on")
	wantCode(t, res, 0)
	wantReceived(t, r7, harness.Submitted(rep.ID, "loop on"))
}

// Codex-style paste-burst detection: an Enter that comes too soon after
// fast input is taken as a newline. The message must still arrive exactly,
// with no newline added.
func TestSendToPasteBurstAgent(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	ana := s.StartAgent("agent-alpha-ana", harness.EnterGuard(120*time.Millisecond))
	bob := s.StartAgent("agent-alpha-bob", harness.EnterGuard(120*time.Millisecond))

	// Configured for such an agent (a profile's settle): one press, exact.
	rep, res := sendJSON(t, s, nil, "--settle", "150ms", "alpha", "ana", "not too fast")
	wantCode(t, res, 0)
	wantReceived(t, ana, harness.Submitted(rep.ID, "not too fast"))
	if rep.Presses != 1 {
		t.Errorf("%d presses with a settle above the agent's guard, want 1", rep.Presses)
	}

	// With the default settle the first Enter becomes a newline in the box.
	// The text is still ours and still there, so it is pressed again soon
	// (not after the confirm timeout) and arrives once, whole.
	rep, res = sendJSON(t, s, nil, "alpha", "bob", "too fast")
	wantCode(t, res, 0)
	got := bob.WaitReceived(1, 5*time.Second)
	if len(got) != 1 || strings.TrimRight(got[0], "\n") != harness.Submitted(rep.ID, "too fast") {
		t.Errorf("bob received %q, want one %q (a trailing newline aside)", got, harness.Submitted(rep.ID, "too fast"))
	}
	if res.Elapsed > 3*time.Second {
		t.Errorf("took %s: the second press should come after --repress, not the confirm timeout", res.Elapsed)
	}
}

// An agent whose program has exited (its pane kept by remain-on-exit) is
// reported, not typed into.
func TestSendToExitedAgent(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	ana := s.StartAgent("agent-alpha-ana")
	s.Tmux("set-option", "-w", "-t", ana.Pane, "remain-on-exit", "on")
	pid, err := ana.PID()
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for strings.TrimSpace(s.Tmux("display-message", "-p", "-t", ana.Pane, "#{pane_dead}")) != "1" {
		if time.Now().After(deadline) {
			t.Fatal("the stand-in did not exit on SIGTERM")
		}
		time.Sleep(10 * time.Millisecond)
	}

	res := s.Run("send", "alpha", "ana", "anyone home?")
	wantCode(t, res, 1)
	if !strings.Contains(res.Stderr, "exited") {
		t.Errorf("stderr should say the agent's program has exited:\n%s", res.Stderr)
	}
	wantUntouched(t, ana)
}

// An agent that has exited leaves a shell prompt in its pane: a message
// typed there would run as a command. Refused unless --force.
func TestSendRefusesShellPrompt(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	pane := s.NewShellSession("agent-alpha-ana")
	s.Tmux("send-keys", "-t", pane, "-l", "PS1='$ '")
	s.Tmux("send-keys", "-t", pane, "-H", "0d")
	deadline := time.Now().Add(5 * time.Second)
	for !strings.HasSuffix(strings.TrimRight(s.Capture(pane), "\n "), "$") {
		if time.Now().After(deadline) {
			t.Fatalf("no shell prompt:\n%s", s.Capture(pane))
		}
		time.Sleep(20 * time.Millisecond)
	}
	ran := filepath.Join(s.Dir, "ran")

	// Refused even without --no-queue: a shell prompt is no agent, and
	// will not turn into one for deliver.
	res := s.Run("send", "alpha", "ana", "; touch "+ran)
	wantCode(t, res, 4)
	if !strings.Contains(res.Stderr, "shell prompt") || res.Elapsed > 5*time.Second {
		t.Errorf("want an immediate refusal naming the shell prompt, got after %s:\n%s", res.Elapsed, res.Stderr)
	}
	if strings.Contains(s.Capture(pane), "touch") {
		t.Errorf("something was typed into the shell:\n%s", s.Capture(pane))
	}
	// --force types it: the line starts with the id, so the shell only
	// complains about a command named MSG_..., and nothing else runs.
	rep, res := sendJSON(t, s, nil, "--force", "--agent", "generic", "alpha", "ana", "hello shell")
	wantCode(t, res, 0)
	if !strings.Contains(s.Capture(pane), rep.ID+": hello shell") {
		t.Errorf("--force did not type it:\n%s", s.Capture(pane))
	}
	if _, err := os.Stat(ran); err == nil {
		t.Error("the refused message ran")
	}
}
