package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/e2e/harness"
)

// One unreachable agent must not stop the others; the broadcast reports
// each target and exits 6.
func TestBroadcastTeamPartial(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	var sessions []string
	for i := range 20 {
		sessions = append(sessions, fmt.Sprintf("agent-team-a%02d", i))
	}
	agents := s.StartAgents(sessions)
	stuck := map[string]bool{"agent-team-a03": true, "agent-team-a17": true}
	for _, a := range agents {
		if stuck[a.Session] {
			a.SetState("dialog")
			a.WaitScreen("Do you want to proceed?", 5*time.Second)
		}
	}
	other := s.StartAgent("agent-other-bob")

	res := s.Run("--json", "broadcast", "--no-queue", "--ready-timeout", "1s", "team", "all hands")
	wantCode(t, res, 6)
	rep, err := harness.Decode[harness.BroadcastReport](res.Stdout)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Delivered != 18 || rep.Failed != 2 || rep.ExitCode != 6 || rep.Verdict != "partial" || len(rep.Results) != 20 {
		t.Errorf("report: delivered %d failed %d exit %d verdict %q results %d; want 18, 2, 6, partial, 20",
			rep.Delivered, rep.Failed, rep.ExitCode, rep.Verdict, len(rep.Results))
	}
	for _, r := range rep.Results {
		wantOK := !stuck[r.Session]
		if (r.ExitCode == 0) != wantOK || (r.Verdict == "submitted") != wantOK {
			t.Errorf("%s: verdict %q exit %d", r.Session, r.Verdict, r.ExitCode)
		}
		if !wantOK && r.ExitCode != 4 {
			t.Errorf("%s: an agent in a dialog should be not ready (4), got %d: %s", r.Session, r.ExitCode, r.Error)
		}
	}
	for _, a := range agents {
		if stuck[a.Session] {
			wantUntouched(t, a)
		} else {
			wantReceived(t, a, harness.Submitted(rep.ID, "all hands"))
		}
	}
	wantUntouched(t, other)
}

// --all reaches agent sessions named by the scheme and nothing else, not
// even sessions that look almost like agents.
func TestBroadcastAllOnlyAgents(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	valid := s.StartAgents([]string{"agent-alpha-ana", "agent-alpha-ana-2", "agent-beta-bob", "agent-ralph-r7"})
	lookalikes := s.StartAgents([]string{"agentish", "agent-", "agent-Bad-Name", "agent-alpha-ana-2-x", "agent-alpha"})
	scratch := s.NewShellSession("scratch")
	// gotmux panics on this title; agents set their own titles.
	s.Tmux("select-pane", "-t", valid[2].Pane, "-T", "x-:-y")
	s.Tmux("select-pane", "-t", scratch, "-T", "x-:-y")

	res := s.Run("--json", "broadcast", "--all", "everyone")
	wantCode(t, res, 0)
	rep, err := harness.Decode[harness.BroadcastReport](res.Stdout)
	if err != nil {
		t.Fatal(err)
	}
	var reached []string
	for _, r := range rep.Results {
		reached = append(reached, r.Session)
	}
	slices.Sort(reached)
	want := []string{"agent-alpha-ana", "agent-alpha-ana-2", "agent-beta-bob", "agent-ralph-r7"}
	if !slices.Equal(reached, want) || rep.Delivered != 4 || rep.Failed != 0 || !rep.All {
		t.Errorf("broadcast --all reached %q (delivered %d, failed %d), want %q", reached, rep.Delivered, rep.Failed, want)
	}
	for _, a := range valid {
		wantReceived(t, a, harness.Submitted(rep.ID, "everyone"))
	}
	for _, a := range lookalikes {
		wantUntouched(t, a)
	}
	if screen := s.Capture(scratch); strings.Contains(screen, "MSG_") {
		t.Errorf("the shell in scratch got the message:\n%s", screen)
	}
}

func TestBroadcastWithNoAgents(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	s.StartAgent("agent-alpha-ana")
	wantCode(t, s.Run("broadcast", "beta", "anyone?"), 3)
}
