package e2e

import (
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/e2e/harness"
)

// Many agentmsg processes at once must never take the tmux server down
// (every tmux before 3.7 segfaults when a client dies before the server has
// taken it in, or when control clients come and go at once), and every
// message must still arrive exactly once. Each round starts, all at once:
// one sender per agent, two broadcasts to the team, and a send to an agent
// that is busy (deferred, then typed by a deliver --watch that runs
// throughout). scripts/test runs this on every tmux of the version matrix.
func TestStressManySendersNeverCrashTmux(t *testing.T) {
	t.Parallel()
	const agents, rounds = 8, 4
	s := harness.NewTestServer(t)
	names := make([]string, agents)
	for i := range names {
		names[i] = fmt.Sprintf("agent-stress-a%d", i)
	}
	team := s.StartAgents(names)
	busy := s.StartAgent("agent-later-bee", harness.InitialState("busy"))
	attachControlClient(t, s, "agent-later-bee") // as iTerm2's tmux -CC would be

	watch := exec.Command(s.Bins.Agentmsg, "-S", s.Socket, "deliver", "--watch", "--every", "100ms", "--ready-timeout", "50ms")
	watch.Env = s.Env()
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	watchDone := make(chan error, 1)
	go func() { watchDone <- watch.Wait() }()
	t.Cleanup(func() {
		_ = watch.Process.Signal(syscall.SIGTERM)
		<-watchDone
	})

	var mu sync.Mutex
	want := map[string]map[string]bool{} // session -> exact prompt -> seen
	expect := func(session, id, text string) {
		mu.Lock()
		defer mu.Unlock()
		if want[session] == nil {
			want[session] = map[string]bool{}
		}
		want[session][harness.Submitted(id, text)] = false
	}
	for r := range rounds {
		var wg sync.WaitGroup
		for i, a := range team {
			wg.Go(func() {
				text := fmt.Sprintf("round %d to a%d", r, i)
				rep, res := sendJSON(t, s, nil, "stress", fmt.Sprintf("a%d", i), text)
				if res.Code != 0 || rep.Verdict != "submitted" {
					t.Errorf("send %q: verdict %q\n%s", text, rep.Verdict, res)
				}
				expect(a.Session, rep.ID, text)
			})
		}
		for b := range 2 {
			wg.Go(func() {
				text := fmt.Sprintf("round %d broadcast %d", r, b)
				res := s.Run("--json", "broadcast", "stress", text)
				rep, err := harness.Decode[harness.BroadcastReport](res.Stdout)
				if err != nil || res.Code != 0 || rep.Delivered != agents {
					t.Errorf("broadcast %q: %v\n%s", text, err, res)
					return
				}
				for _, a := range team {
					expect(a.Session, rep.ID, text)
				}
			})
		}
		wg.Go(func() {
			text := fmt.Sprintf("round %d to the busy one", r)
			rep, res := sendJSON(t, s, nil, "--ready-timeout", "100ms", "later", "bee", text)
			if res.Code != 0 || rep.Verdict != "deferred" {
				t.Errorf("send to a busy agent %q: verdict %q\n%s", text, rep.Verdict, res)
			}
			expect(busy.Session, rep.ID, text)
		})
		wg.Wait()
		if _, err := s.Server.Tmux("has-session", "-t", "=_keep"); err != nil {
			t.Fatalf("round %d: the tmux server is gone: %v", r, err)
		}
	}

	// The deferred ones: deliver --watch types them once the agent is ready.
	busy.SetState("ready")
	busy.WaitReceived(rounds, 30*time.Second)
	time.Sleep(500 * time.Millisecond) // more watch passes: nothing typed twice

	if _, err := s.Server.Tmux("has-session", "-t", "=_keep"); err != nil {
		t.Fatalf("the tmux server is gone: %v", err)
	}
	for _, a := range append(team, busy) {
		wantExactlyOnce(t, a, want[a.Session])
	}
}

// wantExactlyOnce checks a stand-in's log against the prompts it should
// have received: each exactly once, nothing else.
func wantExactlyOnce(t *testing.T, a *harness.TestAgent, want map[string]bool) {
	t.Helper()
	for _, p := range a.Received() {
		seen, ok := want[p]
		switch {
		case !ok:
			t.Errorf("%s: unexpected prompt (merged, mangled or foreign): %q", a.Session, p)
		case seen:
			t.Errorf("%s: duplicate prompt: %q", a.Session, p)
		}
		want[p] = true
	}
	for p, seen := range want {
		if !seen {
			t.Errorf("%s: never received %q", a.Session, strings.TrimSpace(p))
		}
	}
}

// attachControlClient keeps a control-mode client attached to session for
// the rest of the test, as a terminal such as iTerm2 (tmux -CC) does. Its
// stdin is held open; closing it detaches the client cleanly.
func attachControlClient(t *testing.T, s *harness.TestServer, session string) {
	t.Helper()
	cmd := exec.Command(harness.TmuxBin(), "-S", s.Socket, "-C", "attach-session", "-t", "="+session)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		_ = cmd.Wait()
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, _ := s.Server.Tmux("list-clients", "-F", "#{client_control_mode}")
		if strings.Contains(out, "1") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the control client never attached: %q", out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
