package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/e2e/harness"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
)

// store opens the mailbox the server's agentmsg runs use (XDG_STATE_HOME
// inside the server's dir).
func store(s *harness.TestServer) *mailbox.Store {
	return s.Mailbox()
}

func deliveryState(t *testing.T, s *harness.TestServer, team, agent string, id string) mailbox.DeliveryState {
	t.Helper()
	batch, err := store(s).Read(team, agent)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range batch.Envelopes {
		if string(e.ID) == id && e.Delivery != nil {
			return e.Delivery.State
		}
	}
	t.Fatalf("%s is not in %s/%s's inbox", id, team, agent)
	return ""
}

// A message to an agent showing a dialog is kept, not lost: send exits 0
// "deferred", and deliver types it once the agent is ready, once.
func TestDeferredMessageIsDeliveredWhenReady(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	ana := s.StartAgent("agent-alpha-ana", harness.InitialState("dialog"))

	rep, res := sendJSON(t, s, nil, "--ready-timeout", "300ms", "alpha", "ana", "when you have a minute")
	wantCode(t, res, 0)
	if rep.Verdict != "deferred" {
		t.Fatalf("verdict %q, want deferred\n%s", rep.Verdict, res)
	}
	if got := deliveryState(t, s, "alpha", "ana", rep.ID); got != mailbox.StateDeferred {
		t.Errorf("inbox says %s, want deferred", got)
	}
	wantUntouched(t, ana)

	// Still a dialog: a deliver pass leaves it waiting, pressing nothing.
	wantCode(t, s.Run("deliver", "--ready-timeout", "200ms"), 0)
	wantUntouched(t, ana)

	ana.SetState("ready")
	wantCode(t, s.Run("deliver"), 0)
	wantReceived(t, ana, harness.Submitted(rep.ID, "when you have a minute"))
	if got := deliveryState(t, s, "alpha", "ana", rep.ID); got != mailbox.StateSubmitted {
		t.Errorf("inbox says %s, want submitted", got)
	}
	// Nothing is typed twice.
	wantCode(t, s.Run("deliver"), 0)
	wantReceived(t, ana, harness.Submitted(rep.ID, "when you have a minute"))
}

// --no-queue is the old fail-fast behaviour: exit 4, recorded as failed, and
// deliver leaves it alone (the sender was told).
func TestNoQueueFailsFast(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	ana := s.StartAgent("agent-alpha-ana", harness.InitialState("dialog"))
	rep, res := sendJSON(t, s, nil, "--no-queue", "--ready-timeout", "300ms", "alpha", "ana", "now or never")
	wantCode(t, res, 4)
	if got := deliveryState(t, s, "alpha", "ana", rep.ID); got != mailbox.StateFailed {
		t.Errorf("inbox says %s, want failed", got)
	}
	ana.SetState("ready")
	wantCode(t, s.Run("deliver"), 0)
	wantUntouched(t, ana)
}

// --mailbox-only records without typing, even for an agent not in tmux
// (a name agentmsg does not know yet only with --create: a typo is exit 3).
func TestMailboxOnly(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	_, res := sendJSON(t, s, nil, "--mailbox-only", "alpha", "remote", "read this when you poll")
	wantCode(t, res, 3)
	rep, res := sendJSON(t, s, nil, "--mailbox-only", "--create", "alpha", "remote", "read this when you poll")
	wantCode(t, res, 0)
	if rep.Verdict != "recorded" {
		t.Errorf("verdict %q, want recorded", rep.Verdict)
	}
	if got := deliveryState(t, s, "alpha", "remote", rep.ID); got != mailbox.StateInbox {
		t.Errorf("inbox says %s, want inbox (for the agent to read, never typed)", got)
	}
	// Not typed by deliver either, even to an agent on the server.
	ana := s.StartAgent("agent-alpha-ana")
	_, res = sendJSON(t, s, nil, "--mailbox-only", "alpha", "ana", "for your inbox only")
	wantCode(t, res, 0)
	wantCode(t, s.Run("deliver"), 0)
	wantUntouched(t, ana)
	// Without --mailbox-only an unknown agent is still exit 3.
	_, res = sendJSON(t, s, nil, "alpha", "nobody", "hello?")
	wantCode(t, res, 3)
}

// A deliver killed at any instant loses nothing and types nothing twice:
// the next one finds its traces (the "typing" record, the id on screen).
func TestDeliverKilledMidwayNeitherLosesNorDoubles(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	s.RunsDirect() // a process of its own: see harness.RunsDirect
	ana := s.StartAgent("agent-alpha-ana", harness.InitialState("dialog"))
	const n = 12
	want := make([]string, n)
	for i := range n {
		text := fmt.Sprintf("queued message %d", i)
		rep, res := sendJSON(t, s, nil, "--ready-timeout", "20ms", "alpha", "ana", text)
		wantCode(t, res, 0)
		if rep.Verdict != "deferred" {
			t.Fatalf("verdict %q, want deferred", rep.Verdict)
		}
		want[i] = harness.Submitted(rep.ID, text)
	}
	ana.SetState("ready")
	for _, after := range []time.Duration{60 * time.Millisecond, 130 * time.Millisecond, 170 * time.Millisecond} {
		cmd := exec.Command(s.Bins.Agentmsg, "-S", s.Socket, "deliver")
		cmd.Env = s.Env()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(after)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		// Its tmux control client goes with it (no client left attached).
		waitNoControlClient(t, s.Socket)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := s.Server.Exec(ctx, nil, "-S", s.Socket, "deliver")
	if err != nil || res.Code != 0 {
		t.Fatalf("final deliver: %v\n%s", err, res)
	}
	got := ana.Received()
	if !slices.Equal(got, want) {
		t.Fatalf("received %d prompts, want each of %d exactly once in order:\ngot  %q\nwant %q", len(got), n, got, want)
	}
}

// An interrupted delivery that had typed but not submitted: the next
// deliver presses submit on the text already there instead of typing it
// again.
func TestDeliverResumesTypedText(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	ana := s.StartAgent("agent-alpha-ana")
	rep, res := sendJSON(t, s, nil, "--mailbox-only", "alpha", "ana", "half way there")
	wantCode(t, res, 0)
	// What a deliver killed between paste and Enter leaves behind.
	box, err := store(s).Box("alpha", "ana")
	if err != nil {
		t.Fatal(err)
	}
	if err := box.SetDelivery(message.ID(rep.ID), mailbox.Delivery{State: mailbox.StateTyping, Attempts: 1}); err != nil {
		t.Fatal(err)
	}
	s.Tmux("set-buffer", "-b", "half", harness.Submitted(rep.ID, "half way there"))
	s.Tmux("paste-buffer", "-p", "-d", "-b", "half", "-t", ana.Pane)
	ana.WaitScreen(rep.ID, 5*time.Second)

	wantCode(t, s.Run("deliver"), 0)
	wantReceived(t, ana, harness.Submitted(rep.ID, "half way there"))
	if got := deliveryState(t, s, "alpha", "ana", rep.ID); got != mailbox.StateSubmitted {
		t.Errorf("inbox says %s, want submitted", got)
	}
}

// With deliver --watch running (or the Stop hook), a deferred message is
// typed by itself once its agent turns ready, and only once.
func TestDeliverWatchTypesDeferredWhenReady(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	ana := s.StartAgent("agent-alpha-ana", harness.InitialState("dialog"))

	watch := exec.Command(s.Bins.Agentmsg, "-S", s.Socket, "deliver", "--watch", "--every", "100ms", "--ready-timeout", "50ms")
	watch.Env = s.Env()
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = watch.Process.Signal(syscall.SIGTERM)
		_ = watch.Wait()
	})

	rep, res := sendJSON(t, s, nil, "--ready-timeout", "200ms", "alpha", "ana", "whenever you can")
	wantCode(t, res, 0)
	if rep.Verdict != "deferred" {
		t.Fatalf("verdict %q, want deferred", rep.Verdict)
	}
	time.Sleep(400 * time.Millisecond) // a few passes while the dialog is open
	wantUntouched(t, ana)

	ana.SetState("ready")
	got := ana.WaitReceived(1, 10*time.Second)
	time.Sleep(400 * time.Millisecond) // more passes: nothing typed twice
	got = ana.Received()
	if len(got) != 1 || got[0] != harness.Submitted(rep.ID, "whenever you can") {
		t.Fatalf("received %q, want the message once", got)
	}
}

// An open request reaches every agent of the team, also ones with no inbox
// yet, and deliver types it into their panes; once it expires unclaimed,
// deliver tells the team, once.
func TestRequestIsTypedAndExpiredOneNudged(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	ana := s.StartAgent("agent-alpha-ana")
	bob := s.StartAgent("agent-alpha-bob")
	// Long enough for the first deliver to type it on a loaded machine (a
	// second was not, under four test runs at once: the agents got only
	// the reminder); the test then waits for the expiry the request names.
	res := s.Run("--json", "--team", "alpha", "request", "--timeout", "5s", "alpha", "fix the flaky test")
	wantCode(t, res, 0)
	var req struct {
		RequestID string    `json:"request_id"`
		Notified  []string  `json:"notified"`
		Expires   time.Time `json:"expires"`
	}
	if err := json.Unmarshal([]byte(res.Stdout), &req); err != nil || len(req.Notified) != 2 {
		t.Fatalf("request: %v, %+v\n%s", err, req, res)
	}
	wantCode(t, s.Run("deliver"), 0)
	for _, a := range []*harness.TestAgent{ana, bob} {
		got := a.Received()
		if len(got) != 1 || !strings.Contains(got[0], "[request "+req.RequestID+"]") || !strings.Contains(got[0], "fix the flaky test") {
			t.Errorf("%s received %q, want the request", a.Session, got)
		}
	}
	time.Sleep(time.Until(req.Expires) + 100*time.Millisecond)
	wantCode(t, s.Run("deliver"), 0)
	wantCode(t, s.Run("deliver"), 0) // a second pass nudges nothing more
	for _, a := range []*harness.TestAgent{ana, bob} {
		got := a.Received()
		if len(got) != 2 || !strings.Contains(got[1], "Reminder: request "+req.RequestID) {
			t.Errorf("%s received %q, want the request then one reminder", a.Session, got)
		}
	}
}

// A request claimed before deliver's pass is typed into nobody's pane:
// deliver skips it and says why; the agents still find it in their
// inboxes (issue 10, item 18).
func TestClaimedRequestIsNotTyped(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	agents := s.StartAgents([]string{"agent-alpha-ana", "agent-alpha-bob", "agent-alpha-cy"})
	res := s.Run("--json", "--team", "alpha", "--from", "lead", "request", "alpha", "fix the flaky test")
	wantCode(t, res, 0)
	var req struct {
		RequestID string   `json:"request_id"`
		Notified  []string `json:"notified"`
	}
	if err := json.Unmarshal([]byte(res.Stdout), &req); err != nil || len(req.Notified) != 3 {
		t.Fatalf("request: %v, %+v\n%s", err, req, res)
	}
	wantCode(t, s.Run("--from", "bob", "claim", "alpha", req.RequestID), 0)
	res = s.Run("--json", "deliver")
	wantCode(t, res, 0)
	var rep struct {
		Results []struct {
			Agent, Verdict, Stored, Error string
		}
	}
	if err := json.Unmarshal([]byte(res.Stdout), &rep); err != nil {
		t.Fatalf("%v\n%s", err, res)
	}
	for _, a := range agents {
		wantUntouched(t, a)
	}
	if len(rep.Results) != 3 {
		t.Fatalf("deliver: %s", res)
	}
	for _, r := range rep.Results {
		if r.Verdict != "skipped" || r.Stored != "skipped" || !strings.Contains(r.Error, "claimed by bob") {
			t.Errorf("deliver's result for %s: %+v", r.Agent, r)
		}
	}
	res = s.Run("--json", "--team", "alpha", "--from", "cy", "inbox", "--type", "request")
	wantCode(t, res, 0)
	if !strings.Contains(res.Stdout, req.RequestID) {
		t.Errorf("cy's inbox lacks the request:\n%s", res)
	}
}

// waitNoControlClient fails the test if a control client of a killed
// agentmsg stays attached to the server.
func waitNoControlClient(t *testing.T, socket string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		out, _ := exec.Command(harness.TmuxBin(), "-S", socket, "list-clients", "-F", "#{client_control_mode}").Output()
		if !strings.Contains(string(out), "1") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("a killed agentmsg left its control client attached: %q", out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
