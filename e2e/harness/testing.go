package harness

import (
	"os/exec"
	"sync"
	"testing"
	"time"
)

// TestServer is a Server bound to one test: it is closed when the test
// ends, and its methods fail the test on a harness error instead of
// returning it. The error-returning forms stay reachable as s.Server.X, for
// use from other goroutines (where t.Fatal is not allowed).
type TestServer struct {
	*Server
	tb testing.TB
}

// NewTestServer starts a private tmux server for tb, or skips tb when tmux
// is not installed.
func NewTestServer(tb testing.TB) *TestServer {
	tb.Helper()
	if _, err := exec.LookPath(TmuxBin()); err != nil {
		tb.Skip("tmux is not installed; the end-to-end tests need it (e.g. apt-get install tmux)")
	}
	s, err := NewServer()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("closing the tmux server: %v", err)
		}
	})
	return &TestServer{Server: s, tb: tb}
}

// StartAgent starts a stand-in in session.
func (s *TestServer) StartAgent(session string, opts ...AgentOption) *TestAgent {
	s.tb.Helper()
	a, err := s.Server.StartAgent(session, opts...)
	if err != nil {
		s.tb.Fatal(err)
	}
	return &TestAgent{Agent: a, tb: s.tb}
}

// StartAgents starts one stand-in per session, all at once.
func (s *TestServer) StartAgents(sessions []string, opts ...AgentOption) []*TestAgent {
	s.tb.Helper()
	agents := make([]*TestAgent, len(sessions))
	errs := make([]error, len(sessions))
	var wg sync.WaitGroup
	for i, name := range sessions {
		wg.Go(func() {
			a, err := s.Server.StartAgent(name, opts...)
			agents[i], errs[i] = &TestAgent{Agent: a, tb: s.tb}, err
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			s.tb.Fatal(err)
		}
	}
	return agents
}

// NewShellSession starts a non-agent shell session and returns its pane.
func (s *TestServer) NewShellSession(session string) string {
	s.tb.Helper()
	pane, err := s.Server.NewShellSession(session)
	if err != nil {
		s.tb.Fatal(err)
	}
	return pane
}

// Tmux runs a tmux command on the server.
func (s *TestServer) Tmux(args ...string) string {
	s.tb.Helper()
	out, err := s.Server.Tmux(args...)
	if err != nil {
		s.tb.Fatal(err)
	}
	return out
}

// Capture returns a pane's visible screen.
func (s *TestServer) Capture(target string) string {
	s.tb.Helper()
	out, err := s.Server.Capture(target)
	if err != nil {
		s.tb.Fatal(err)
	}
	return out
}

// Run runs agentmsg -S SOCKET args...
func (s *TestServer) Run(args ...string) Result {
	s.tb.Helper()
	res, err := s.Server.Run(args...)
	if err != nil {
		s.tb.Fatal(err)
	}
	return res
}

// RunStdin runs agentmsg -S SOCKET args... reading stdin.
func (s *TestServer) RunStdin(stdin string, args ...string) Result {
	s.tb.Helper()
	res, err := s.Server.RunStdin(stdin, args...)
	if err != nil {
		s.tb.Fatal(err)
	}
	return res
}

// TestAgent is an Agent whose methods fail the test on a harness error.
type TestAgent struct {
	*Agent
	tb testing.TB
}

// Records is the whole log.
func (a *TestAgent) Records() []Record {
	a.tb.Helper()
	recs, err := a.Agent.Records()
	if err != nil {
		a.tb.Fatal(err)
	}
	return recs
}

// Received is every submitted prompt.
func (a *TestAgent) Received() []string { return a.OfKind("prompt") }

// OfKind is the text of every record of kind.
func (a *TestAgent) OfKind(kind string) []string {
	a.tb.Helper()
	got, err := a.Agent.OfKind(kind)
	if err != nil {
		a.tb.Fatal(err)
	}
	return got
}

// WaitReceived waits for at least n prompts and fails the test without them.
func (a *TestAgent) WaitReceived(n int, timeout time.Duration) []string {
	a.tb.Helper()
	got, err := a.Agent.WaitReceived(n, timeout)
	if err != nil {
		a.tb.Fatalf("%v; got %q", err, got)
	}
	return got
}

// SetState cues the stand-in into ready, busy or dialog.
func (a *TestAgent) SetState(state string) {
	a.tb.Helper()
	if err := a.Agent.SetState(state); err != nil {
		a.tb.Fatal(err)
	}
}

// Type types text into the box as a person would.
func (a *TestAgent) Type(text string) {
	a.tb.Helper()
	if err := a.Agent.Type(text); err != nil {
		a.tb.Fatal(err)
	}
}

// Press sends key names.
func (a *TestAgent) Press(keys ...string) {
	a.tb.Helper()
	if err := a.Agent.Press(keys...); err != nil {
		a.tb.Fatal(err)
	}
}

// Capture returns the visible screen.
func (a *TestAgent) Capture() string {
	a.tb.Helper()
	screen, err := a.Agent.Capture()
	if err != nil {
		a.tb.Fatal(err)
	}
	return screen
}

// WaitScreen waits until the screen shows want.
func (a *TestAgent) WaitScreen(want string, timeout time.Duration) string {
	a.tb.Helper()
	screen, err := a.Agent.WaitScreen(want, timeout)
	if err != nil {
		a.tb.Fatalf("%v; screen:\n%s", err, screen)
	}
	return screen
}

// RunsDirect is Server.RunsDirect, failing the test if the daemon does not
// stop.
func (s *TestServer) RunsDirect() {
	s.tb.Helper()
	if err := s.Server.RunsDirect(); err != nil {
		s.tb.Fatal(err)
	}
}
