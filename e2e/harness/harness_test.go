package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/internal/procs"
)

func TestMain(m *testing.M) {
	code := m.Run()
	Cleanup()
	os.Exit(code)
}

// waitFor polls cond until it holds or 10 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s after 10s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A restarted server is a new one at the same socket: its panes are
// numbered from the start again, an agent started again keeps its log, and
// the old server's watchdog does not stay behind.
func TestRestartAndStartAgain(t *testing.T) {
	s := NewTestServer(t)
	ana := s.StartAgent("agent-t-ana")
	bob := s.StartAgent("agent-t-bob")
	oldPanes := ana.Pane + bob.Pane
	watchdogs := func() int {
		n := 0
		all, err := procs.All()
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range all {
			// The tmux server carries the command line of the client that
			// started it: only the shell is the watchdog.
			argv, _ := procs.Argv(p.PID)
			if p.Comm == "sh" && strings.Contains(strings.Join(argv, " "), "kill-server; rm -rf '"+s.Dir+"'") {
				n++
			}
		}
		return n
	}
	if n := watchdogs(); n != 1 {
		t.Fatalf("%d watchdogs before the restart, want 1", n)
	}
	if err := s.Server.Restart(); err != nil {
		t.Fatal(err)
	}
	if err := bob.Agent.Start(); err != nil { // bob first: he gets the pane ana had
		t.Fatal(err)
	}
	if err := ana.Agent.Start(); err != nil {
		t.Fatal(err)
	}
	if got := bob.Pane + ana.Pane; got != oldPanes {
		t.Fatalf("panes after the restart %s, want %s (numbered from the start again)", got, oldPanes)
	}
	if got := ana.OfKind("started"); len(got) != 2 {
		t.Fatalf("ana's log has %d starts, want 2", len(got))
	}
	waitFor(t, "single watchdog", func() bool { return watchdogs() == 1 })
}

// A stand-in runs its hooks as Claude Code does: the prompt as JSON on the
// submit hook's stdin, a turn-end hook when busy ends, in the environment
// given to its pane.
func TestStandinHooks(t *testing.T) {
	s := NewTestServer(t)
	out := filepath.Join(s.Dir, "hooks.out")
	a := s.StartAgent("agent-t-ana", Env("HOOKTAG=x1"), BusyAfterSubmit(50*time.Millisecond),
		OnSubmit(`{ cat; echo " $HOOKTAG"; } >> `+out), OnTurnEnd(`echo "turn $HOOKTAG" >> `+out))
	a.Type("hi")
	a.Press("Enter")
	want := `{"hook_event_name":"UserPromptSubmit","prompt":"hi"} x1` + "\nturn x1\n"
	waitFor(t, "hook output "+want, func() bool {
		b, _ := os.ReadFile(out)
		return string(b) == want
	})
}

// Without bracketed paste, a pasted newline is Enter: each line is a
// prompt of its own.
func TestNoBracketedPaste(t *testing.T) {
	s := NewTestServer(t)
	a := s.StartAgent("agent-t-ana", Style("plain"), NoBracketedPaste())
	if _, err := s.Server.tmuxStdin([]byte("one\ntwo\n"), "load-buffer", "-b", "b", "-"); err != nil {
		t.Fatal(err)
	}
	s.Tmux("paste-buffer", "-p", "-d", "-r", "-b", "b", "-t", a.Pane)
	if got := a.WaitReceived(2, 5*time.Second); strings.Join(got, "|") != "one|two" {
		t.Fatalf("received %q", got)
	}
}

// Agents started all at once are started a few at a time: 500 at once
// (500 tmux clients, 500 stand-ins starting, each polled every 10 ms) kept
// a 2-core machine so busy that a tmux client's output pipe outlived the
// harness's WaitDelay, and the start failed.
func TestAgentsStartAFewAtATime(t *testing.T) {
	s := NewTestServer(t)
	var mu sync.Mutex
	launching, most := 0, 0
	barrier := make(chan struct{}) // open once startsAtOnce launch at once
	var open sync.Once
	launch := LaunchWith(func(session string, env, command []string) (string, error) {
		mu.Lock()
		launching++
		most = max(most, launching)
		if launching == startsAtOnce {
			open.Do(func() { close(barrier) })
		}
		mu.Unlock()
		<-barrier
		defer func() { mu.Lock(); launching--; mu.Unlock() }()
		return s.newSession(session, env, command)
	})
	names := make([]string, 2*startsAtOnce)
	for i := range names {
		names[i] = fmt.Sprintf("agent-t-a%02d", i)
	}
	s.StartAgents(names, launch, NoCue())
	if most != startsAtOnce {
		t.Fatalf("%d agents were launched at once, want %d", most, startsAtOnce)
	}
}
