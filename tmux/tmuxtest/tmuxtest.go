// Package tmuxtest is a tmux server for unit tests: each session runs a tiny
// agent whose box takes pasted text and whose carriage return submits it,
// drawn the way Claude Code draws its input box. It is safe for the
// concurrent use of a broadcast.
package tmuxtest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/agentmsg/agentmsg/tmux"
)

// Server implements tmux.Sessions: tmux.Client, and starting, ending and
// watching sessions. No process runs behind a pane: every pane's pid is 0
// (none), which the lifecycle takes for "nothing to signal".
type Server struct {
	mu       sync.Mutex
	sessions map[string]*pane // by session name
	next     int              // the number of the next pane id
	gone     bool             // KillServer: Info says no server runs
	// pasteLost: the next this many pastes land in their box, and then
	// their call fails with pasteErr, as with a server that stopped
	// answering after it ran the command (FailPastesAfterLanding).
	pasteLost int
	pasteErr  error
	pasteGone bool // and the text never lands (LosePastes)
}

// FailPastesAfterLanding makes the next n pastes land in their box and
// their call fail with err: the command ran, its answer never came (a
// server stopped by SIGSTOP, a client that timed out).
func (s *Server) FailPastesAfterLanding(n int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pasteLost, s.pasteErr, s.pasteGone = n, err, false
}

// LosePastes makes the next n pastes fail with err and never land: the
// command never reached the server.
func (s *Server) LosePastes(n int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pasteLost, s.pasteErr, s.pasteGone = n, err, true
}

var _ tmux.Sessions = (*Server)(nil)

type pane struct {
	id, session string
	start       Start
	dialog      bool // a permission dialog that never closes
	dead        bool // the program in the pane has exited
	draft       string
	submitted   []string
	activity    time.Time // last output: creation, or the last submitted text
	// launcher is the program in the pane's foreground before its agent
	// ("": the agent has it): it shows nothing, and what is typed or
	// pressed meanwhile lands in typedAhead, never in the agent's box.
	launcher   string
	typedAhead []string
}

// agentCommand is the foreground command of every agent of the fake.
const agentCommand = "agent"

func (p *pane) command() string {
	if p.launcher != "" {
		return p.launcher
	}
	return agentCommand
}

// Start is what NewSession was asked to run.
type Start struct {
	Dir       string
	Env, Argv []string
}

// New starts a server with one agent per session name.
func New(sessions ...string) *Server {
	s := &Server{sessions: map[string]*pane{}}
	for _, name := range sessions {
		s.add(name, Start{})
	}
	return s
}

func (s *Server) add(session string, st Start) *pane {
	p := &pane{id: fmt.Sprintf("%%%d", s.next), session: session, start: st, activity: time.Now()}
	s.next++
	s.sessions[session] = p
	return p
}

// Started is what the session was started with by NewSession (false when
// no such session exists).
func (s *Server) Started(session string) (Start, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.sessions[session]
	if !ok {
		return Start{}, false
	}
	return p.start, true
}

// SetDead marks the program in session's pane as exited (the pane stays,
// as with remain-on-exit).
func (s *Server) SetDead(session string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sessions[session].dead = true
}

// NewSession creates a session named exactly session whose agent is ready
// at once; argv is not run. A session of that name is
// tmux.ErrDuplicateSession, as tmux's "duplicate session".
func (s *Server) NewSession(_ context.Context, session, dir string, env, argv []string) (string, int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.sessions[session]; ok {
		return "", 0, &tmux.Error{Command: "new-session", Stderr: "duplicate session: " + session, Kind: tmux.ErrDuplicateSession}
	}
	p := s.add(session, Start{Dir: dir, Env: append([]string(nil), env...), Argv: append([]string(nil), argv...)})
	return p.id, 0, nil
}

// KillSession ends the session named exactly session; one already gone is
// no error.
func (s *Server) KillSession(_ context.Context, session string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.sessions, session)
	return nil
}

// HasSession reports whether a session named exactly session exists.
func (s *Server) HasSession(_ context.Context, session string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.sessions[session]
	return ok, nil
}

// Activity is the last output time of every session, by name: when it was
// created or last had text submitted.
func (s *Server) Activity(context.Context) (map[string]time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := make(map[string]time.Time, len(s.sessions))
	for name, p := range s.sessions {
		m[name] = p.activity
	}
	return m, nil
}

// PaneID is the pane of session.
func (s *Server) PaneID(session string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions[session].id
}

// SetDialog opens or closes a permission dialog in session.
func (s *Server) SetDialog(session string, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sessions[session].dialog = on
}

// SetLauncher puts command (a shell running a wrapper script, say) in the
// foreground of session's pane, in front of its agent; "" hands the pane
// to the agent.
func (s *Server) SetLauncher(session, command string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sessions[session].launcher = command
}

// TypedAhead is what was pasted or pressed into session's pane while its
// launcher had it: lost to the agent, or run by the shell.
func (s *Server) TypedAhead(session string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.sessions[session].typedAhead...)
}

// Received is what session's agent got, in order.
func (s *Server) Received(session string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.sessions[session].submitted...)
}

func (p *pane) info() tmux.Pane {
	// One window per session, as "@" plus the pane's number.
	return tmux.Pane{ID: p.id, Session: p.session, Window: "@" + p.id[1:], Command: p.command(), Dead: p.dead, Active: true,
		BracketedPaste: tmux.PasteOn} // its agent is drawn as Claude Code, which turns it on
}

func (s *Server) pane(id string) (*pane, error) {
	for _, p := range s.sessions {
		if p.id == id {
			return p, nil
		}
	}
	return nil, &tmux.Error{Command: "x", Stderr: "can't find pane: " + id, Kind: tmux.ErrPaneNotFound}
}

func (s *Server) Server() tmux.Server { return tmux.Server{Socket: "/fake/sock"} }

func (s *Server) Info(context.Context) (tmux.Info, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gone {
		return tmux.Info{}, &tmux.Error{Command: "display-message", Stderr: "no server running on /fake/sock", Kind: tmux.ErrNoServer}
	}
	return tmux.Info{Version: "3.3a", Socket: "/fake/sock"}, nil
}

// KillServer makes the server one that has gone, for Info (what asks
// whether it still runs).
func (s *Server) KillServer() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gone = true
}

func (s *Server) ListPanes(context.Context) ([]tmux.Pane, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []tmux.Pane
	for _, p := range s.sessions {
		out = append(out, p.info())
	}
	return out, nil
}

func (s *Server) SessionPanes(_ context.Context, session string) ([]tmux.Pane, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.sessions[session]; ok { // exact, as "=NAME:" is
		return []tmux.Pane{p.info()}, nil
	}
	return nil, &tmux.Error{Command: "list-panes", Stderr: "can't find session: " + session, Kind: tmux.ErrSessionNotFound}
}

// Pinned is the server itself: a fake server is never replaced, and its
// panes never move.
func (s *Server) Pinned(tmux.Pane) tmux.Client { return s }

func (s *Server) LeaveMode(context.Context, string) error { return nil }

func (s *Server) Capture(_ context.Context, id string, _ int) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, err := s.pane(id)
	if err != nil {
		return nil, err
	}
	return p.screen(), nil
}

// LookForeground is Capture and the pane's foreground command, as
// tmux.Exec's.
func (s *Server) LookForeground(_ context.Context, id string, _ bool) ([]string, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, err := s.pane(id)
	if err != nil {
		return nil, "", err
	}
	return p.screen(), p.command(), nil
}

func (p *pane) screen() []string {
	if p.launcher != "" {
		return []string{""} // a launcher that shows nothing
	}
	var lines []string
	for _, t := range p.submitted {
		lines = append(lines, "> "+t)
	}
	if p.dialog {
		return append(lines, " Do you want to proceed?", " ❯ 1. Yes", "   2. No", "")
	}
	rule := strings.Repeat("─", 40)
	return append(lines, "", rule, "❯\u00a0"+p.draft, rule, "  ? for shortcuts")
}

func (s *Server) Paste(_ context.Context, id, text string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, err := s.pane(id)
	if err == nil && s.pasteLost > 0 && s.pasteGone {
		s.pasteLost--
		return s.pasteErr
	}
	switch {
	case err != nil:
	case p.launcher != "":
		p.typedAhead = append(p.typedAhead, text)
	case !p.dialog:
		p.draft += text
	}
	if err == nil && s.pasteLost > 0 {
		s.pasteLost--
		return s.pasteErr
	}
	return err
}

func (s *Server) SendBytes(_ context.Context, id string, _ ...byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, err := s.pane(id)
	if err == nil && p.launcher != "" {
		p.typedAhead = append(p.typedAhead, "\r")
		return nil
	}
	if err == nil && !p.dialog && p.draft != "" {
		p.submitted = append(p.submitted, p.draft)
		p.draft = ""
		p.activity = time.Now()
	}
	return err
}

// Clock is wall time, for deliveries in tests that run real goroutines.
type Clock struct{}

func (Clock) Now() time.Time { return time.Now() }
func (Clock) Sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
