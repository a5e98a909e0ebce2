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

// A send waits while the agent works and types once it is ready, even to
// an agent that would queue it (--wait-idle says so, and is the default).
func TestSendWaitsForBusyAgent(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	ana := s.StartAgent("agent-alpha-ana", harness.InitialState("busy"))

	done := make(chan harness.Result, 1)
	errc := make(chan error, 1)
	go func() {
		res, err := s.Server.Run("--json", "send", "--wait-idle", "--ready-timeout", "10s", "alpha", "ana", "when you are free")
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

	// Read as Claude Code, whose box would fold it: the agent gets one
	// line, and agentmsg read gives the rest.
	text := "first line of a long one\n" + strings.Repeat("folded paste ", 2048/13) + "end"
	rep, res := sendJSON(t, s, nil, "--agent", "claude", "alpha", "ana", text)
	wantCode(t, res, 0)
	wantReceived(t, ana, harness.Submitted(rep.ID, "first line of a long one … (full text: agentmsg read "+rep.ID+")"))
	read := s.Run("read", rep.ID)
	wantCode(t, read, 0)
	if read.Stdout != text+"\n" {
		t.Errorf("agentmsg read gave %d bytes, want the %d sent", len(read.Stdout), len(text)+1)
	}

	// Typed whole when the profile does not fold (--agent nofold: generic, with bracketed paste): the
	// stand-in folds it in its box, and the id check copes.
	rep, res = sendJSON(t, s, nil, "--agent", "nofold", "alpha", "ana", text)
	wantCode(t, res, 0)
	if got := ana.Received(); got[len(got)-1] != harness.Submitted(rep.ID, text) {
		t.Errorf("received %.80q, want the whole text", got[len(got)-1])
	}
}

// With --while-busy, a busy agent that queues (Claude Code, named by
// --agent here as its command would name it) gets the message at once:
// verdict queued, and it runs the message when its turn ends. One that only
// looks like it is waited for, as is one that does not queue. Without
// --while-busy every busy agent is waited for (TestSendWaitsForBusyAgent).
func TestSendQueuesIntoBusyAgent(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	ana := s.StartAgent("agent-alpha-ana", harness.InitialState("busy"))
	rep, res := sendJSON(t, s, nil, "--while-busy", "--agent", "claude", "alpha", "ana", "next, please")
	wantCode(t, res, 0)
	if rep.Verdict != "queued" || rep.Presses != 1 {
		t.Fatalf("verdict %q after %d presses, want queued after 1\n%s", rep.Verdict, rep.Presses, res)
	}
	if !strings.Contains(res.Stdout, `"stored": "queued"`) {
		t.Errorf("the inbox should record it as queued:\n%s", res.Stdout)
	}
	wantUntouched(t, ana)
	ana.SetState("ready")
	got := ana.WaitReceived(1, 5*time.Second)
	if len(got) != 1 || got[0] != harness.Submitted(rep.ID, "next, please") {
		t.Fatalf("received %q", got)
	}

	// Claude-like screen, unknown command, no queueing: waited for, and
	// typed once ready (it used to be typed into while busy and left there).
	cy := s.StartAgent("agent-alpha-cy", harness.InitialState("busy"), harness.NoQueue())
	go func() { time.Sleep(500 * time.Millisecond); cy.SetState("ready") }()
	rep, res = sendJSON(t, s, nil, "--while-busy", "alpha", "cy", "after your turn")
	wantCode(t, res, 0)
	if rep.Verdict != "submitted" {
		t.Errorf("verdict %q for a look-alike that does not queue, want submitted after waiting", rep.Verdict)
	}
	wantReceived(t, cy, harness.Submitted(rep.ID, "after your turn"))

	bob := s.StartAgent("agent-alpha-bob", harness.InitialState("busy"), harness.NoQueue(), harness.Style("plain"))
	rep, res = sendJSON(t, s, nil, "--while-busy", "--ready-timeout", "300ms", "alpha", "bob", "not while busy")
	wantCode(t, res, 0)
	if rep.Verdict != "deferred" {
		t.Errorf("verdict %q for a busy agent that does not queue, want deferred", rep.Verdict)
	}
	wantUntouched(t, bob)
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
