package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/e2e/harness"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
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

// What top costs at the scale, for the README and the note: 500
// stand-in agents and 10,000 messages, top idle for 30 s in a 200x50
// pane. It reports; it never fails on a slow machine. Set
// AGENTMSG_MEASURE_TOP=1 to run it (it starts 500 stand-ins).
func TestTopIdleCPU(t *testing.T) {
	if os.Getenv("AGENTMSG_MEASURE_TOP") == "" {
		t.Skip("set AGENTMSG_MEASURE_TOP=1 to measure top with 500 agents and 10,000 messages")
	}
	const agents, messages = 500, 10000
	s := harness.NewTestServer(t)
	names := make([]string, agents)
	for i := range names {
		names[i] = fmt.Sprintf("agent-t%02d-a%03d", i/10, i)
	}
	for chunk := range slices.Chunk(names, 50) {
		s.StartAgents(chunk, harness.NoCue())
	}
	store := s.Mailbox()
	for i := range messages {
		to := i % agents
		box, err := store.Box(fmt.Sprintf("t%02d", to/10), fmt.Sprintf("a%03d", to))
		if err != nil {
			t.Fatal(err)
		}
		state := mailbox.StateSubmitted
		if i%10 == 0 {
			state = mailbox.StateDeferred
		}
		e := mailbox.Envelope{ID: message.ID(fmt.Sprintf("MSG_LEAD_%08x", i)), From: "lead", To: fmt.Sprintf("a%03d", to), Type: mailbox.TypeText,
			Content: "a message of a busy day", Delivery: &mailbox.Delivery{State: state, Attempts: 1}}
		if err := box.AppendBatched(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.Sync(); err != nil {
		t.Fatal(err)
	}
	argv := append([]string{"new-session", "-d", "-P", "-F", "#{pane_pid}", "-s", "top", "-x", "200", "-y", "50", "--", "/usr/bin/env"}, s.Env()...)
	pid, err := strconv.Atoi(strings.TrimSpace(s.Tmux(append(argv, s.Bins.Agentmsg, "-S", s.Socket, "top")...)))
	if err != nil {
		t.Fatal(err)
	}
	top := &topScreen{s: s, pane: "=top:"}
	t.Cleanup(func() { _ = s.Server.PressKeys("=top:", "q") })
	top.waitFor(t, 60*time.Second, `500 agents`, `1000 open of 10000 messages`)
	server, err := strconv.Atoi(strings.TrimSpace(s.Tmux("display-message", "-p", "#{pid}")))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Second) // past the start: its first looks and reads
	topBefore, serverBefore := cpuTime(t, pid), cpuTime(t, server)
	const idle = 30 * time.Second
	time.Sleep(idle)
	topCPU, serverCPU := cpuTime(t, pid)-topBefore, cpuTime(t, server)-serverBefore
	t.Logf("%d agents, %d messages, %s idle: agentmsg top used %s of CPU (%.1f%% of a core), the tmux server %s (%.1f%%), on %s",
		agents, messages, idle, topCPU, 100*topCPU.Seconds()/idle.Seconds(), serverCPU, 100*serverCPU.Seconds()/idle.Seconds(), harness.TmuxVersion())
	t.Logf("its screen:\n%s", s.Capture("=top:"))
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

// cpuTime is the user and system CPU time process pid has used so far.
func cpuTime(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		if _, serr := os.Stat("/proc/self/stat"); serr != nil {
			t.Skip("another process's CPU time is read from /proc (Linux only)")
		}
		t.Fatal(err)
	}
	// The fields after the command's closing parenthesis: utime and
	// stime are the 12th and 13th, in clock ticks (100 a second).
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	utime, _ := strconv.Atoi(f[11])
	stime, _ := strconv.Atoi(f[12])
	return time.Duration(utime+stime) * 10 * time.Millisecond
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
