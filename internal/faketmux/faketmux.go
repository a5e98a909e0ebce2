// Package faketmux is a tmux server for unit tests: each session runs a tiny
// agent whose box takes pasted text and whose carriage return submits it,
// drawn the way Claude Code draws its input box. It is safe for the
// concurrent use of a broadcast.
package faketmux

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/agentmsg/agentmsg/tmux"
)

// Server implements tmux.Client (and Close, for dispatch.Conn).
type Server struct {
	mu       sync.Mutex
	sessions map[string]*pane // by session name
}

type pane struct {
	id, session string
	dialog      bool // a permission dialog that never closes
	draft       string
	submitted   []string
}

// New starts a server with one agent per session name.
func New(sessions ...string) *Server {
	s := &Server{sessions: map[string]*pane{}}
	for i, name := range sessions {
		s.sessions[name] = &pane{id: fmt.Sprintf("%%%d", i), session: name}
	}
	return s
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

// Received is what session's agent got, in order.
func (s *Server) Received(session string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.sessions[session].submitted...)
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
	return tmux.Info{Version: "3.3a", Socket: "/fake/sock"}, nil
}

func (s *Server) ListPanes(context.Context) ([]tmux.Pane, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []tmux.Pane
	for _, p := range s.sessions {
		out = append(out, tmux.Pane{ID: p.id, Session: p.session, Command: "agent"})
	}
	return out, nil
}

func (s *Server) SessionPane(_ context.Context, session string) (tmux.Pane, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.sessions[session]; ok { // exact, as "=NAME:" is
		return tmux.Pane{ID: p.id, Session: p.session, Command: "agent"}, nil
	}
	return tmux.Pane{}, &tmux.Error{Command: "list-panes", Stderr: "can't find session: " + session, Kind: tmux.ErrSessionNotFound}
}

func (s *Server) LeaveMode(context.Context, string) error { return nil }

func (s *Server) Capture(_ context.Context, id string, _ int) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, err := s.pane(id)
	if err != nil {
		return nil, err
	}
	var lines []string
	for _, t := range p.submitted {
		lines = append(lines, "> "+t)
	}
	if p.dialog {
		return append(lines, " Do you want to proceed?", " ❯ 1. Yes", "   2. No", ""), nil
	}
	rule := strings.Repeat("─", 40)
	return append(lines, "", rule, "❯\u00a0"+p.draft, rule, "  ? for shortcuts"), nil
}

func (s *Server) Paste(_ context.Context, id, text string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, err := s.pane(id)
	if err == nil && !p.dialog {
		p.draft += text
	}
	return err
}

func (s *Server) SendBytes(_ context.Context, id string, _ ...byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, err := s.pane(id)
	if err == nil && !p.dialog && p.draft != "" {
		p.submitted = append(p.submitted, p.draft)
		p.draft = ""
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
