package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/e2e/harness"
	"github.com/agentmsg/agentmsg/mailbox"
)

// stuckAgents is how many agents stay in a dialog through the deliver
// pass of TestStuckAgentsCostTheReadyOneNothing: the 500.
const stuckAgents = 500

// One deliver pass over many inboxes: 500 agents stuck in a dialog and one
// ready agent, sorted after all of them. The ready one has its message
// long before any stuck one's wait for readiness ends (each waits
// stuckWait), so none of them delayed it; the stuck ones keep theirs.
func TestStuckAgentsCostTheReadyOneNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 501 stand-in agents")
	}
	s := harness.NewTestServer(t)
	// The pass measured is the only deliverer: a daemon types into an
	// agent that turns ready by itself, and when its own pass took the
	// ready agent's message first, the measured pass had no result for
	// it (seen once through the daemon, once its passes had become
	// faster).
	s.RunsDirect()
	names := make([]string, stuckAgents)
	for i := range names {
		names[i] = fmt.Sprintf("agent-jam-s%03d", i)
	}
	// Started 50 at a time: 500 tmux clients at once left one with its
	// output pipe open past the harness's WaitDelay.
	var stuck []*harness.TestAgent
	for chunk := range slices.Chunk(names, 50) {
		stuck = append(stuck, s.StartAgents(chunk, harness.InitialState("dialog"), harness.NoCue())...)
	}
	ready := s.StartAgent("agent-jam-zz", harness.InitialState("dialog"))

	// Every agent gets a copy while in its dialog: kept for deliver.
	res := s.Run("--json", "--ready-timeout", "50ms", "--concurrency", "1000", "broadcast", "jam", "stand-up in 5")
	rep, err := harness.Decode[harness.BroadcastReport](res.Stdout)
	if err != nil {
		t.Fatalf("%v\n%s", err, res)
	}
	if rep.Deferred != stuckAgents+1 {
		t.Fatalf("broadcast deferred %d of %d\n%s", rep.Deferred, stuckAgents+1, res)
	}
	ready.SetState("ready")
	ready.WaitScreen("? for shortcuts", 5*time.Second)

	const stuckWait = 20 * time.Second // far above the 1 s wanted: the machine may be loaded
	deliver := exec.Command(s.Bins.Agentmsg, "-S", s.Socket, "--json", "deliver", "jam", "--ready-timeout", stuckWait.String())
	deliver.Env = s.Env()
	var out, errOut bytes.Buffer
	deliver.Stdout, deliver.Stderr = &out, &errOut
	start := time.Now()
	if err := deliver.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- deliver.Wait() }()
	finished := false
	t.Cleanup(func() {
		if !finished {
			_ = deliver.Process.Kill() // the process we started, by its pid
			<-done
		}
	})

	_, err = ready.Agent.WaitReceived(1, stuckWait)
	took := time.Since(start)
	if err != nil {
		t.Fatalf("the ready agent had nothing %s into the pass, when the first stuck agent's wait ended: %v", took.Round(time.Millisecond), err)
	}
	t.Logf("the ready agent had its message %s into the pass, beside %d stuck agents", took.Round(time.Millisecond), stuckAgents)
	wantReceived(t, ready, harness.Submitted(rep.ID, "stand-up in 5"))

	select {
	case err = <-done:
		finished = true
	case <-time.After(stuckWait + 30*time.Second):
		t.Fatalf("deliver still runs %s after it started", time.Since(start).Round(time.Second))
	}
	if err != nil {
		t.Fatalf("deliver: %v\n%s\n%s", err, out.String(), errOut.String())
	}
	t.Logf("the pass took %s", time.Since(start).Round(time.Millisecond))
	for _, a := range stuck {
		wantUntouched(t, a)
	}
	// One result per inbox, in the order of the inboxes (not of the
	// finish: the ready one finished first).
	pass, err := harness.Decode[struct{ Results []harness.Outcome }](out.String())
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	var got, want []string
	for _, r := range pass.Results {
		got = append(got, r.Session+" "+r.Verdict)
	}
	for _, n := range names {
		want = append(want, n+" deferred")
	}
	want = append(want, "agent-jam-zz submitted")
	if !slices.Equal(got, want) {
		t.Errorf("deliver's results, in this order:\n%q\nwant\n%q", clip(got), clip(want))
	}
}

// Turn-end hooks take turns: while one deliver --turn-end is at work (held
// up by ana's dialog), bob's turn ends with a message kept for him after
// that pass read his inbox, and five more hooks fire at once. One of them
// waits and then types bob's message, once; the others leave at once,
// saying so. Nothing piles up, nothing is lost.
func TestTurnEndDeliversTakeTurnsAndLoseNothing(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	s.RunsDirect() // a process of its own: see harness.RunsDirect
	ana := s.StartAgent("agent-alpha-ana", harness.InitialState("dialog"), harness.NoCue())
	bob := s.StartAgent("agent-alpha-bob")
	m1, res := sendJSON(t, s, nil, "--ready-timeout", "50ms", "alpha", "ana", "for ana, after her dialog")
	wantCode(t, res, 0)
	if m1.Verdict != "deferred" {
		t.Fatalf("verdict %q, want deferred\n%s", m1.Verdict, res)
	}

	atWork := exec.Command(s.Bins.Agentmsg, "-S", s.Socket, "--json", "deliver", "--turn-end", "alpha", "--ready-timeout", "15s")
	atWork.Env = s.Env()
	var atWorkOut bytes.Buffer
	atWork.Stdout = &atWorkOut
	if err := atWork.Start(); err != nil {
		t.Fatal(err)
	}
	finished := make(chan error, 1)
	go func() { finished <- atWork.Wait() }()
	defer func() {
		if finished != nil {
			_ = atWork.Process.Kill() // the process we started, by its pid
			<-finished
		}
	}()
	// At work on ana's inbox: it has read bob's, which held nothing.
	locks := filepath.Join(store(s).Root, "locks")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if b, _ := os.ReadFile(filepath.Join(locks, "named-deliver-alpha-ana.lock")); len(b) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first turn-end deliver never took ana's inbox")
		}
	}

	bob.SetState("busy")
	bob.WaitScreen("esc to interrupt", 5*time.Second)
	m2, res := sendJSON(t, s, nil, "--ready-timeout", "50ms", "alpha", "bob", "for bob, after his turn")
	wantCode(t, res, 0)
	if m2.Verdict != "deferred" {
		t.Fatalf("verdict %q, want deferred\n%s", m2.Verdict, res)
	}
	bob.SetState("ready") // his turn ends: his hook, and others, fire
	const hooks = 5
	results := make([]harness.Result, hooks)
	errs := make([]error, hooks)
	var wg sync.WaitGroup
	for i := range hooks {
		wg.Go(func() { results[i], errs[i] = s.Server.Run("deliver", "--turn-end", "alpha") })
	}
	wg.Wait()
	left := 0
	for i, r := range results {
		if errs[i] != nil || r.Code != 0 {
			t.Fatalf("hook %d: %v\n%s", i, errs[i], r)
		}
		// The one that waits is named by its pid once it has written it
		// into its lock file, as "another deliver" a moment before.
		if strings.Contains(r.Stdout, "left to the next pass: ") &&
			strings.Contains(r.Stdout, "waits to deliver to team alpha after the pass at work; it types what waits now") {
			left++
		}
	}
	if left < hooks-1 {
		t.Errorf("%d of %d hooks left at once, want all but the one that waits:\n%v", left, hooks, results)
	}
	wantReceived(t, bob, harness.Submitted(m2.ID, "for bob, after his turn"))

	err := <-finished
	finished = nil
	if err != nil {
		t.Fatalf("the first turn-end deliver: %v\n%s", err, atWorkOut.String())
	}
	first, err := harness.Decode[struct{ Results []harness.Outcome }](atWorkOut.String())
	if err != nil || len(first.Results) != 1 || first.Results[0].Session != "agent-alpha-ana" {
		t.Errorf("the first pass tried %+v (%v), want ana's message only: bob's came after it read his inbox", first.Results, err)
	}
	wantUntouched(t, ana)
	if got := deliveryState(t, s, "alpha", "ana", m1.ID); got != mailbox.StateDeferred {
		t.Errorf("ana's message is %s, want still deferred", got)
	}
}
