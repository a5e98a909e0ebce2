package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/e2e/harness"
)

// topScreen is agentmsg top running in a pane of the test's server, read
// and driven as a person would: capture-pane and send-keys.
type topScreen struct {
	s    *harness.TestServer
	pane string
}

// startTop runs agentmsg top in a session of its own, 80x24.
func startTop(t *testing.T, s *harness.TestServer, args ...string) *topScreen {
	t.Helper()
	argv := []string{"new-session", "-d", "-P", "-F", "#{pane_id}", "-s", "top", "-x", "80", "-y", "24", "--", "/usr/bin/env"}
	argv = append(argv, s.Env()...)
	argv = append(argv, s.Bins.Agentmsg, "-S", s.Socket, "top")
	argv = append(argv, args...)
	top := &topScreen{s: s, pane: strings.TrimSpace(s.Tmux(argv...))}
	t.Cleanup(func() {
		// q ends it; the server's end takes what is left.
		_ = s.Server.PressKeys(top.pane, "q")
	})
	return top
}

func (top *topScreen) press(keys ...string) {
	top.s.Tmux(append([]string{"send-keys", "-t", top.pane}, keys...)...)
}

// waitFor polls the screen until every pattern matches a line of it.
func (top *topScreen) waitFor(t *testing.T, timeout time.Duration, patterns ...string) string {
	t.Helper()
	res := make([]*regexp.Regexp, len(patterns))
	for i, p := range patterns {
		res[i] = regexp.MustCompile(p)
	}
	deadline := time.Now().Add(timeout)
	for {
		screen, err := top.s.Server.Capture(top.pane)
		if err != nil {
			t.Fatal(err)
		}
		missing := ""
		for i, re := range res {
			if !re.MatchString(screen) {
				missing = patterns[i]
				break
			}
		}
		if missing == "" {
			return screen
		}
		if time.Now().After(deadline) {
			t.Fatalf("top does not show %q after %s:\n%s", missing, timeout, screen)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// hook is a webhook in the test: it records each alert posted to it.
type hook struct {
	mu     sync.Mutex
	alerts []map[string]any
}

func (h *hook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var a map[string]any
	if err := json.Unmarshal(b, &a); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	h.mu.Lock()
	h.alerts = append(h.alerts, a)
	h.mu.Unlock()
}

// wait waits for an alert of event about message id.
func (h *hook) wait(t *testing.T, event, id string, timeout time.Duration) map[string]any {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		h.mu.Lock()
		for _, a := range h.alerts {
			if a["event"] == event && a["message_id"] == id {
				h.mu.Unlock()
				return a
			}
		}
		got := len(h.alerts)
		h.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatalf("no %s alert for %s within %s (%d others)", event, id, timeout, got)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// agentmsg top, as a person uses it: it shows each stand-in's real state,
// a message kept for an agent in a dialog, and the alert once it has
// waited too long (posted to the webhook); d delivers it exactly once
// when the agent is ready; h marks another handled, and it is never typed.
func TestTop(t *testing.T) {
	s := harness.NewTestServer(t)
	h := &hook{}
	srv := httptest.NewServer(h)
	defer srv.Close()
	writeConfig(t, s, "\n[alerts]\nmessage_wait = \"10s\"\nwebhook = \""+srv.URL+"\"\n")
	agents := s.StartAgents([]string{"agent-alpha-ana", "agent-alpha-bob", "agent-alpha-dan", "agent-alpha-eve"})
	ana, bob, dan, eve := agents[0], agents[1], agents[2], agents[3]
	bob.SetState("busy")
	eve.SetState("dialog")
	dan.Type("half written")
	dan.WaitScreen("half written", 5*time.Second)

	kept, res := sendJSON(t, s, nil, "--ready-timeout", "200ms", "alpha", "eve", "please look at PR 12")
	wantCode(t, res, 0)
	if kept.Verdict != "deferred" {
		t.Fatalf("the send to eve in her dialog: %s", res)
	}
	top := startTop(t, s)

	// The states shown are the stand-ins' own, and the message waits.
	top.waitFor(t, 20*time.Second,
		`alpha/ana +ready`, `alpha/bob +busy`, `alpha/dan +draft`, `alpha/eve +dialog .*standin +1 `,
		kept.ID+` +alpha/eve +tester +deferred +dialog`)

	// Past message_wait, the alert is posted once and shown.
	a := h.wait(t, "message_waiting", kept.ID, 30*time.Second)
	if a["team"] != "alpha" || a["agent"] != "eve" || a["reason"] != "dialog" {
		t.Errorf("the alert posted: %v", a)
	}
	top.waitFor(t, 10*time.Second, `! alpha/eve: `+kept.ID+` has waited \d+s \(deferred: dialog\)`)

	// Deliver now, once eve is ready: typed once, and only once.
	eve.SetState("ready")
	top.waitFor(t, 10*time.Second, `alpha/eve +ready`)
	top.press("d")
	delivered := `deliver alpha: 1 of 1 delivered`
	if harness.DaemonMode() {
		// The daemon delivers to an agent it sees become ready, by
		// itself: d may find nothing left. Once, either way.
		delivered = `deliver alpha: (1 of 1 delivered|nothing to deliver)`
	}
	top.waitFor(t, 20*time.Second, delivered)
	wantReceived(t, eve, harness.Submitted(kept.ID, "please look at PR 12"))
	top.waitFor(t, 10*time.Second, kept.ID+` +alpha/eve +tester +submitted`)
	top.press("d")
	top.waitFor(t, 20*time.Second, `deliver alpha: nothing to deliver`)
	wantReceived(t, eve, harness.Submitted(kept.ID, "please look at PR 12"))

	// A message marked handled is never typed, not even once bob is free.
	other, res := sendJSON(t, s, nil, "--ready-timeout", "200ms", "alpha", "bob", "never mind")
	if other.Verdict != "deferred" {
		t.Fatalf("the send to bob while busy: %s", res)
	}
	top.waitFor(t, 10*time.Second, other.ID+` +alpha/bob +tester +deferred +busy`)
	top.press("Tab", "h")
	top.waitFor(t, 10*time.Second, `mark `+other.ID+` for alpha/bob handled\? It will never be typed\. y/n`)
	top.press("y")
	top.waitFor(t, 10*time.Second, other.ID+` is marked handled`, other.ID+` +alpha/bob +tester +handled`)
	bob.SetState("ready")
	top.waitFor(t, 10*time.Second, `alpha/bob +ready`)
	top.press("d")
	top.waitFor(t, 20*time.Second, `deliver alpha: nothing to deliver`)
	wantUntouched(t, bob)
	wantUntouched(t, ana)

	// o, from inside the agents' server, shows the agent's pane in the
	// person's own tmux client.
	attachClient(t, s, "top")
	top.press("Tab", "o")
	top.waitFor(t, 10*time.Second, `switched to alpha/ana \(`+regexp.QuoteMeta(ana.Pane)+`\)`)
	if got := personClients(s, "#{client_session} #{pane_id}"); got != "agent-alpha-ana "+ana.Pane {
		t.Errorf("the client shows %q, want alpha/ana's pane %s", got, ana.Pane)
	}
	wantUntouched(t, ana)

	// q quits: the session of top ends with it.
	top.press("q")
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := s.Server.Tmux("has-session", "-t", "=top"); err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("top did not quit on q:\n%s", s.Capture(top.pane))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// attachClient attaches a tmux client to session, as a person's terminal
// (a pseudo-terminal of script(1)), until the test ends: then the server
// detaches it, and it exits as any detached client does (never a signal).
func attachClient(t *testing.T, s *harness.TestServer, session string) {
	t.Helper()
	if _, err := exec.LookPath("script"); err != nil {
		t.Skip("script(1) is missing: no terminal to attach a tmux client in")
	}
	attach := strings.Join([]string{harness.TmuxBin(), "-S", s.Socket, "attach", "-t", "=" + session}, " ")
	client := exec.Command("script", "-qfc", attach, "/dev/null")
	client.Env = append(s.Env(), "TERM=xterm-256color")
	if err := client.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- client.Wait() }()
	t.Cleanup(func() {
		for _, name := range strings.Fields(personClients(s, "#{client_name}")) {
			_, _ = s.Server.Tmux("detach-client", "-t", name)
		}
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Errorf("the attached client did not exit when detached; it ends with the server")
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for personClients(s, "#{client_session}") != session {
		if time.Now().After(deadline) {
			t.Fatalf("no client attached to %s", session)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// personClients lists the server's clients in format, one a line, leaving
// out control-mode clients: the daemon's own (tmux 3.7 and newer) is one,
// and it is not a person's terminal.
func personClients(s *harness.TestServer, format string) string {
	out, _ := s.Server.Tmux("list-clients", "-F", "#{client_control_mode} "+format)
	var lines []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if rest, ok := strings.CutPrefix(line, "0 "); ok {
			lines = append(lines, rest)
		}
	}
	return strings.Join(lines, "\n")
}
