package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/e2e/harness"
)

// Keys sent to a pane in copy mode are eaten by copy mode; a send must
// leave it first.
func TestSendLeavesCopyMode(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	ana := s.StartAgent("agent-alpha-ana")
	s.Tmux("copy-mode", "-t", ana.Pane)
	if mode := s.Tmux("display-message", "-p", "-t", ana.Pane, "#{pane_in_mode}"); strings.TrimSpace(mode) != "1" {
		t.Fatalf("the pane did not enter copy mode (pane_in_mode %q)", mode)
	}

	rep, res := sendJSON(t, s, nil, "alpha", "ana", "out of copy mode")
	wantCode(t, res, 0)
	wantReceived(t, ana, harness.Submitted(rep.ID, "out of copy mode"))
}

// A dialog that never closes must never get a key: the send gives up.
func TestSendNeverTypesIntoDialog(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	ana := s.StartAgent("agent-alpha-ana", harness.InitialState("dialog"))

	res := s.Run("send", "--no-queue", "--ready-timeout", "1s", "alpha", "ana", "approve nothing")
	wantCode(t, res, 4)
	if res.Elapsed > 5*time.Second {
		t.Errorf("a 1s ready timeout took %s", res.Elapsed)
	}
	if !strings.Contains(res.Stderr, "dialog") {
		t.Errorf("stderr should say a dialog is open:\n%s", res.Stderr)
	}
	wantUntouched(t, ana)
}

// A person's half-typed text is theirs: never added to, cleared or
// submitted by a send.
func TestSendKeepsPersonsDraft(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	ana := s.StartAgent("agent-alpha-ana")
	ana.Type("half written")
	ana.WaitScreen("half written", 5*time.Second)

	res := s.Run("send", "--no-queue", "--ready-timeout", "1s", "alpha", "ana", "do not merge me")
	wantCode(t, res, 4)
	if screen := ana.Capture(); !strings.Contains(screen, "half written") || strings.Contains(screen, "MSG_") {
		t.Errorf("the draft was touched; screen:\n%s", screen)
	}
	wantUntouched(t, ana)

	ana.Press("Enter")
	ana.WaitReceived(1, 5*time.Second)
	wantReceived(t, ana, "half written")
}

// A send waits while the agent works and types once it is ready.
func TestSendWaitsForBusyAgent(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	ana := s.StartAgent("agent-alpha-ana", harness.InitialState("busy"))

	done := make(chan harness.Result, 1)
	errc := make(chan error, 1)
	go func() {
		res, err := s.Server.Run("--json", "send", "--ready-timeout", "10s", "alpha", "ana", "when you are free")
		done <- res
		errc <- err
	}()
	// The scenario: busy for a while, so the send must be waiting, not done.
	time.Sleep(500 * time.Millisecond)
	select {
	case res := <-done:
		t.Fatalf("send finished while the agent was busy: %s", res)
	default:
	}
	wantUntouched(t, ana)

	ana.SetState("ready")
	res := <-done
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	wantCode(t, res, 0)
	rep, err := harness.Decode[harness.SendReport](res.Stdout)
	if err != nil {
		t.Fatal(err)
	}
	wantReceived(t, ana, harness.Submitted(rep.ID, "when you are free"))
}

// An agent that ignores the first Enter gets another press, not a second
// copy of the text.
func TestSendRetriesDroppedEnter(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	ana := s.StartAgent("agent-alpha-ana", harness.DropEnter(1))

	rep, res := sendJSON(t, s, nil, "alpha", "ana", "press again")
	wantCode(t, res, 0)
	if rep.Presses != 2 || rep.Typings != 1 {
		t.Errorf("want 2 presses and 1 typing, report says %d and %d", rep.Presses, rep.Typings)
	}
	wantReceived(t, ana, harness.Submitted(rep.ID, "press again"))
}

// A long paste shows only as a label in the box; the whole text must still
// be what is submitted.
func TestSendFoldedPaste(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	ana := s.StartAgent("agent-alpha-ana") // folds pastes over 800 bytes

	text := strings.Repeat("folded paste ", 2048/13) + "end"
	rep, res := sendJSON(t, s, nil, "alpha", "ana", text)
	wantCode(t, res, 0)
	wantReceived(t, ana, harness.Submitted(rep.ID, text))
}

// The plain style draws "> " instead of Claude Code's box.
func TestSendToPlainPrompt(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	ana := s.StartAgent("agent-alpha-ana", harness.Style("plain"))

	rep, res := sendJSON(t, s, nil, "alpha", "ana", "plain and simple")
	wantCode(t, res, 0)
	wantReceived(t, ana, harness.Submitted(rep.ID, "plain and simple"))
}
