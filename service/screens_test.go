package service

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/tmux"
	"github.com/agentmsg/agentmsg/tmux/tmuxtest"
)

// Screens reads every team's agents, each as a delivery would.
func TestScreens(t *testing.T) {
	srv := tmuxtest.New("agent-alpha-ana", "agent-beta-bob", "agent-alpha-cy", "agent-ralph-7", "scratch")
	srv.SetDialog("agent-beta-bob", true)
	srv.SetDead("agent-alpha-cy")
	s, _ := deliverService(t, srv, "lead", "", time.Millisecond)
	res, err := s.Screens(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, a := range res.Agents {
		got[a.Team+"/"+a.Agent] = a.State
	}
	want := map[string]string{"alpha/ana": "ready", "beta/bob": "dialog", "alpha/cy": Exited, "ralph/ralph-7": "ready"}
	if len(got) != len(want) || res.Socket != "/fake/sock" {
		t.Fatalf("Screens = %+v; want %v", res, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s is %q, want %q", k, got[k], v)
		}
	}
}

// switching is the fake server with a client that can be switched.
type switching struct {
	tmux.Client
	fake *tmuxtest.Server
	to   []string
	err  error
}

func (s *switching) Pinned(tmux.Pane) tmux.Client { return s }
func (s *switching) SwitchClient(_ context.Context, pane string) error {
	s.to = append(s.to, pane)
	return s.err
}

// OpenPane switches the caller's client to the agent's pane only from
// inside the agents' server; otherwise, and when switching fails, it says
// how to watch the pane.
func TestOpenPane(t *testing.T) {
	for _, tt := range []struct {
		name     string
		inside   bool
		err      error
		switched bool
	}{
		{"outside tmux", false, nil, false},
		{"inside", true, nil, true},
		{"inside, no client", true, errors.New("no current client"), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fake := tmuxtest.New("agent-alpha-ana", "agent-alpha-lead")
			srv := &switching{Client: fake, fake: fake, err: tt.err}
			s, d := deliverService(t, fake, "lead", "", time.Millisecond)
			d.Tmux = srv
			if tt.inside {
				d.Self = fake.PaneID("agent-alpha-lead")
			}
			res, err := s.OpenPane(context.Background(), "alpha", "ana")
			if err != nil {
				t.Fatal(err)
			}
			if res.Switched != tt.switched || res.Command != "tmux -S /fake/sock attach -r -t =agent-alpha-ana" || res.Pane != fake.PaneID("agent-alpha-ana") {
				t.Errorf("OpenPane = %+v; want switched %v and the watch command", res, tt.switched)
			}
			if wantTried := tt.inside; (len(srv.to) == 1) != wantTried {
				t.Errorf("switched to %q; want a switch only from inside", srv.to)
			}
			if (res.SwitchErr != nil) != (tt.err != nil) {
				t.Errorf("SwitchErr %v, want %v", res.SwitchErr, tt.err)
			}
		})
	}
	srv := tmuxtest.New("agent-alpha-ana")
	s, _ := deliverService(t, srv, "lead", "", time.Millisecond)
	if _, err := s.OpenPane(context.Background(), "alpha", "bob"); !errors.Is(err, dispatch.ErrTargetNotFound) {
		t.Errorf("OpenPane of an agent not there: %v; want ErrTargetNotFound", err)
	}
}
