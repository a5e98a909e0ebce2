package dispatch

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/delivery"
	"github.com/agentmsg/agentmsg/target"
	"github.com/agentmsg/agentmsg/tmux"
)

// fakeServer is a tmux server whose sessions each run a tiny agent: a
// pasted text goes into its box, a carriage return submits it. It is safe
// for the concurrent use of a broadcast.
type fakeServer struct {
	mu       sync.Mutex
	sessions map[string]*fakePane // by session name
	attached []string             // sessions Attach was called for
	closed   int
}

type fakePane struct {
	id        string
	session   string
	dialog    bool // a permission dialog that never closes
	draft     string
	submitted []string
}

func newFakeServer(sessions ...string) *fakeServer {
	s := &fakeServer{sessions: map[string]*fakePane{}}
	for i, name := range sessions {
		s.sessions[name] = &fakePane{id: fmt.Sprintf("%%%d", i), session: name}
	}
	return s
}

func (s *fakeServer) pane(id string) (*fakePane, error) {
	for _, p := range s.sessions {
		if p.id == id {
			return p, nil
		}
	}
	return nil, &tmux.Error{Command: "x", Stderr: "can't find pane: " + id, Kind: tmux.ErrPaneNotFound}
}

func (s *fakeServer) Server() tmux.Server { return tmux.Server{Socket: "/fake/sock"} }

func (s *fakeServer) Info(ctx context.Context) (tmux.Info, error) {
	return tmux.Info{Version: "3.3a", Socket: "/fake/sock"}, nil
}

func (s *fakeServer) ListPanes(ctx context.Context) ([]tmux.Pane, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []tmux.Pane
	for _, p := range s.sessions {
		out = append(out, tmux.Pane{ID: p.id, Session: p.session, Command: "agent"})
	}
	return out, nil
}

func (s *fakeServer) SessionPane(ctx context.Context, session string) (tmux.Pane, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.sessions[session]; ok { // exact, as "=NAME:" is
		return tmux.Pane{ID: p.id, Session: p.session, Command: "agent"}, nil
	}
	return tmux.Pane{}, &tmux.Error{Command: "list-panes", Stderr: "can't find session: " + session, Kind: tmux.ErrSessionNotFound}
}

func (s *fakeServer) LeaveMode(ctx context.Context, pane string) error { return nil }

func (s *fakeServer) Capture(ctx context.Context, pane string, history int) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, err := s.pane(pane)
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

func (s *fakeServer) Paste(ctx context.Context, pane, buffer, text string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, err := s.pane(pane)
	if err == nil && !p.dialog {
		p.draft += text
	}
	return err
}

func (s *fakeServer) SendBytes(ctx context.Context, pane string, b ...byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, err := s.pane(pane)
	if err == nil && !p.dialog && p.draft != "" {
		p.submitted = append(p.submitted, p.draft)
		p.draft = ""
	}
	return err
}

func (s *fakeServer) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed++
	return nil
}

func (s *fakeServer) received(session string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.sessions[session].submitted...)
}

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }
func (wallClock) Sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

type noLocks struct{}

func (noLocks) Pane(ctx context.Context, socket, pane string) (func(), error) { return func() {}, nil }

func newDispatcher(s *fakeServer) *Dispatcher {
	opts := delivery.DefaultOptions()
	opts.ReadyTimeout, opts.ConfirmTimeout = 100*time.Millisecond, 500*time.Millisecond
	opts.Settle, opts.Poll = time.Millisecond, time.Millisecond
	return &Dispatcher{
		Tmux: s, Locks: noLocks{}, Clock: wallClock{}, Opts: opts, Concurrency: 4,
		Attach: func(ctx context.Context, session string) (Conn, error) {
			if _, err := s.SessionPane(ctx, session); err != nil {
				return nil, err
			}
			s.mu.Lock()
			s.attached = append(s.attached, session)
			s.mu.Unlock()
			return s, nil
		},
	}
}

func mustTarget(t *testing.T, team, name string) target.Target {
	t.Helper()
	tg, err := target.New(team, name)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

func TestSendDelivers(t *testing.T) {
	s := newFakeServer("agent-alpha-ana")
	d := newDispatcher(s)
	out := d.Send(context.Background(), mustTarget(t, "alpha", "ana"), "LEAD", "hello")
	if !out.OK() || out.Err != nil {
		t.Fatalf("outcome %+v", out)
	}
	got := s.received("agent-alpha-ana")
	if want := string(out.ID) + ": hello"; len(got) != 1 || got[0] != want {
		t.Fatalf("received %q, want [%q]", got, want)
	}
	if len(s.attached) != 1 || s.closed != 1 {
		t.Errorf("attached %v, closed %d: want one attach, closed once", s.attached, s.closed)
	}
}

// A bare tmux target prefix-matches: "agent-alpha-ana" would find
// agent-alpha-ana-2. The dispatcher must say "not found" instead.
func TestSendIsExact(t *testing.T) {
	s := newFakeServer("agent-alpha-ana-2", "agent-alpha-bob")
	out := newDispatcher(s).Send(context.Background(), mustTarget(t, "alpha", "ana"), "LEAD", "hi")
	if out.Verdict != NotFound || !errors.Is(out.Err, ErrTargetNotFound) {
		t.Fatalf("outcome %+v, want not found", out)
	}
	for _, want := range []string{"agent-alpha-ana", "ana-2", "bob"} {
		if !strings.Contains(out.Err.Error(), want) {
			t.Errorf("error %q does not mention %q", out.Err, want)
		}
	}
	if got := s.received("agent-alpha-ana-2"); len(got) != 0 {
		t.Errorf("ana-2 received %q", got)
	}
}

func TestSendRefusesEmpty(t *testing.T) {
	s := newFakeServer("agent-alpha-ana")
	out := newDispatcher(s).Send(context.Background(), mustTarget(t, "alpha", "ana"), "LEAD", " \n\x1b[0m ")
	if !errors.Is(out.Err, ErrEmptyMessage) {
		t.Fatalf("outcome %+v, want ErrEmptyMessage", out)
	}
}

func TestBroadcastTeamReportsEachTarget(t *testing.T) {
	s := newFakeServer("agent-alpha-ana", "agent-alpha-bob", "agent-alpha-cy", "agent-beta-dee", "scratch")
	s.sessions["agent-alpha-bob"].dialog = true
	rep, err := newDispatcher(s).Broadcast(context.Background(), "alpha", "LEAD", "all hands")
	if err != nil {
		t.Fatal(err)
	}
	if rep.Delivered != 2 || rep.Failed != 1 || len(rep.Outcomes) != 3 {
		t.Fatalf("report %+v, want 2 delivered, 1 failed", rep)
	}
	wantOrder := []string{"agent-alpha-ana", "agent-alpha-bob", "agent-alpha-cy"}
	for i, o := range rep.Outcomes {
		if o.Target.Session != wantOrder[i] {
			t.Errorf("outcome %d is %s, want %s", i, o.Target.Session, wantOrder[i])
		}
		if o.ID != rep.ID {
			t.Errorf("outcome %d has id %s, want the broadcast's %s", i, o.ID, rep.ID)
		}
	}
	if bob := rep.Outcomes[1]; bob.OK() || !errors.Is(bob.Err, delivery.ErrNotReady) {
		t.Errorf("bob: %+v, want not ready", bob)
	}
	if got := s.received("agent-beta-dee"); len(got) != 0 {
		t.Errorf("another team received %q", got)
	}
	if len(s.attached) != 1 || s.closed != 1 {
		t.Errorf("attached %v, closed %d: a broadcast shares one client", s.attached, s.closed)
	}
}

func TestBroadcastAllSkipsNonAgents(t *testing.T) {
	s := newFakeServer("agent-alpha-ana", "agent-ralph-7", "scratch", "agent-", "agent-Bad-Name", "agentish")
	rep, err := newDispatcher(s).Broadcast(context.Background(), "", "LEAD", "hi")
	if err != nil {
		t.Fatal(err)
	}
	if rep.Delivered != 2 || rep.Failed != 0 {
		t.Fatalf("report %+v, want the 2 agents", rep)
	}
	for _, other := range []string{"scratch", "agent-", "agent-Bad-Name", "agentish"} {
		if got := s.received(other); len(got) != 0 {
			t.Errorf("%s received %q", other, got)
		}
	}
}

func TestBroadcastWithoutTargets(t *testing.T) {
	s := newFakeServer("scratch")
	_, err := newDispatcher(s).Broadcast(context.Background(), "alpha", "LEAD", "hi")
	if !errors.Is(err, ErrNoTargets) {
		t.Fatalf("err %v, want ErrNoTargets", err)
	}
}

func TestAgentsReadsStates(t *testing.T) {
	s := newFakeServer("agent-alpha-ana", "agent-alpha-bob", "scratch")
	s.sessions["agent-alpha-bob"].dialog = true
	agents, err := newDispatcher(s).Agents(context.Background(), "alpha")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]delivery.State{}
	for _, a := range agents {
		got[a.Target.Name] = a.State
	}
	if len(agents) != 2 || got["ana"] != delivery.Ready || got["bob"] != delivery.Dialog {
		t.Fatalf("states %v, want ana ready, bob dialog", got)
	}
}

func TestBroadcastLeavesOutTheCaller(t *testing.T) {
	s := newFakeServer("agent-alpha-ana", "agent-alpha-bob")
	d := newDispatcher(s)
	d.Self = s.sessions["agent-alpha-bob"].id
	rep, err := d.Broadcast(context.Background(), "alpha", "BOB", "hi team")
	if err != nil {
		t.Fatal(err)
	}
	if rep.Delivered != 1 || len(rep.Outcomes) != 1 || rep.Outcomes[0].Target.Name != "ana" {
		t.Fatalf("report %+v, want ana only", rep)
	}
	out := d.Send(context.Background(), mustTarget(t, "alpha", "bob"), "BOB", "note to self")
	if !errors.Is(out.Err, ErrSelf) || len(s.received("agent-alpha-bob")) != 0 {
		t.Fatalf("send to oneself: %+v, want ErrSelf and nothing typed", out)
	}
}
