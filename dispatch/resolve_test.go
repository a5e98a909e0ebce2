package dispatch

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/agentmsg/agentmsg/delivery"
	"github.com/agentmsg/agentmsg/tmux"
	"github.com/agentmsg/agentmsg/tmux/tmuxtest"
)

// countingTmux is the fake server that also reads a pane and its screen in
// one round trip (as tmux.Exec does), and counts the calls made to it.
type countingTmux struct {
	tmux.Client
	mu    sync.Mutex
	calls []string
}

func (c *countingTmux) count(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, name)
}

func (c *countingTmux) Calls() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.calls)
}

func (c *countingTmux) SessionPanesScreen(ctx context.Context, session string) ([]tmux.Pane, []string, error) {
	c.count("SessionPanesScreen")
	panes, err := c.Client.SessionPanes(ctx, session)
	if err != nil {
		return nil, nil, err
	}
	lines, err := c.Client.Capture(ctx, panes[0].ID, 0)
	return panes, lines, err
}

func (c *countingTmux) SessionPanes(ctx context.Context, session string) ([]tmux.Pane, error) {
	c.count("SessionPanes")
	return c.Client.SessionPanes(ctx, session)
}

func (c *countingTmux) Pinned(tmux.Pane) tmux.Client { return c }

func (c *countingTmux) ListPanes(ctx context.Context) ([]tmux.Pane, error) {
	c.count("ListPanes")
	return c.Client.ListPanes(ctx)
}

func (c *countingTmux) Capture(ctx context.Context, id string, n int) ([]string, error) {
	c.count("Capture")
	return c.Client.Capture(ctx, id, n)
}

// A send resolves its target in one tmux call and types nothing; the
// caller records the message, then Deliver types it into the pane found.
func TestResolveThenDeliver(t *testing.T) {
	s := tmuxtest.New("agent-alpha-ana")
	tm := &countingTmux{Client: s}
	d := newDispatcher(s)
	d.Tmux = tm
	ana := mustTarget(t, "alpha", "ana")
	r, err := d.Resolve(context.Background(), ana, Call{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Target != ana || r.Pane.ID != s.PaneID("agent-alpha-ana") {
		t.Fatalf("resolved %+v", r)
	}
	if got := tm.Calls(); !slices.Equal(got, []string{"SessionPanesScreen"}) {
		t.Errorf("resolve made tmux calls %q, want one SessionPanesScreen", got)
	}
	if got := s.Received("agent-alpha-ana"); len(got) != 0 {
		t.Fatalf("resolve typed %q", got)
	}
	msg, err := d.NewMessage("LEAD", "hello")
	if err != nil {
		t.Fatal(err)
	}
	out := d.Deliver(context.Background(), r, msg, Call{})
	if !out.OK() || out.Pane != r.Pane.ID {
		t.Fatalf("outcome %+v", out)
	}
	if got := s.Received("agent-alpha-ana"); !slices.Equal(got, []string{string(msg.ID) + ": hello"}) {
		t.Errorf("received %q", got)
	}
}

func TestResolveRefuses(t *testing.T) {
	s := tmuxtest.New("agent-alpha-ana", "agent-alpha-bob")
	d := newDispatcher(s)
	d.Self = s.PaneID("agent-alpha-bob")
	ctx := context.Background()
	if _, err := d.Resolve(ctx, mustTarget(t, "alpha", "bob"), Call{}); !errors.Is(err, ErrSelf) {
		t.Errorf("own pane: err %v, want ErrSelf", err)
	}
	if _, err := d.Resolve(ctx, mustTarget(t, "alpha", "bob"), Call{IntoSelf: true}); err != nil {
		t.Errorf("own pane, into self: err %v", err)
	}
	r, err := d.Resolve(ctx, mustTarget(t, "alpha", "cy"), Call{})
	if !errors.Is(err, ErrTargetNotFound) {
		t.Fatalf("missing agent: err %v, want ErrTargetNotFound", err)
	}
	if out := d.Unsent(r, "", err); out.Verdict != delivery.NotFound || out.Target.Name != "cy" {
		t.Errorf("missing agent: outcome %+v, want not found", out)
	}
}

// A broadcast's resolve lists the team once, leaves the caller out, and
// types nothing.
func TestResolveTeam(t *testing.T) {
	s := tmuxtest.New("agent-alpha-ana", "agent-alpha-bob", "agent-alpha-cy", "agent-beta-dee")
	tm := &countingTmux{Client: s}
	d := newDispatcher(s)
	d.Tmux, d.Self = tm, s.PaneID("agent-alpha-bob")
	rs, err := d.ResolveTeam(context.Background(), "alpha", Call{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range rs {
		names = append(names, r.Target.Name)
		if got := s.Received(r.Target.Session); len(got) != 0 {
			t.Errorf("%s received %q", r.Target.Session, got)
		}
	}
	if !slices.Equal(names, []string{"ana", "cy"}) {
		t.Errorf("resolved %q, want ana and cy", names)
	}
	if got := tm.Calls(); !slices.Equal(got, []string{"ListPanes"}) {
		t.Errorf("resolve made tmux calls %q, want one ListPanes", got)
	}
	d.Self = s.PaneID("agent-beta-dee")
	if _, err := d.ResolveTeam(context.Background(), "beta", Call{}); !errors.Is(err, ErrNoTargets) {
		t.Errorf("only the caller: err %v, want ErrNoTargets", err)
	}
}
