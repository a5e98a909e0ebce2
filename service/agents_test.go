package service

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/lifecycle"
	"github.com/agentmsg/agentmsg/mailbox"
)

func TestAgentsOneAgent(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "ana", "bob")
	fake := &fakeLifecycle{status: []lifecycle.AgentStatus{
		{Target: mustTarget(t, "t", "ana"), State: lifecycle.Idle},
		{Target: mustTarget(t, "t", "bob"), State: lifecycle.Running},
	}}
	svc := w.service(t, "lead", fake)
	res, err := svc.Agents(context.Background(), AgentsRequest{Team: "t", Agent: "bob"})
	if err != nil || len(res.Agents) != 1 || res.Agents[0].State != lifecycle.Running || res.Socket != "/fake/sock" {
		t.Errorf("bob: %+v, %v", res, err)
	}
	_, err = svc.Agents(context.Background(), AgentsRequest{Team: "t", Agent: "cy"})
	var none *NoAgentError
	if !errors.As(err, &none) || !slices.Equal(none.Agents, []string{"ana", "bob"}) || !errors.Is(err, dispatch.ErrTargetNotFound) {
		t.Errorf("cy: %v", err)
	}
	if _, err := svc.Agents(context.Background(), AgentsRequest{Team: "t", Reap: true}); !errors.Is(err, ErrNoReap) {
		t.Errorf("reap without a lifecycle that reaps: %v", err)
	}
}

// A team nobody knows is an error naming the teams there are; a known
// team without agents is an empty list.
func TestAgentsUnknownTeam(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "ana")
	if err := w.store.SetStatus("t", "ana", mailbox.Status{}); err != nil {
		t.Fatal(err)
	}
	svc := w.service(t, "lead", &fakeLifecycle{})
	_, err := svc.Agents(context.Background(), AgentsRequest{Team: "nope"})
	var unknown *TeamNotFoundError
	if !errors.As(err, &unknown) || unknown.Team != "nope" || !slices.Equal(unknown.Teams, []string{"t"}) {
		t.Errorf("team nope: %v", err)
	}
	if res, err := svc.Agents(context.Background(), AgentsRequest{Team: "t"}); err != nil || len(res.Agents) != 0 {
		t.Errorf("team t: %+v, %v", res, err)
	}
}

func TestListAgents(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "ana", "lead")
	w.tmux.SetDialog("agent-t-ana", true)
	if err := w.store.SetStatus("t", "cy", mailbox.Status{State: "working", WorkingOn: "tests"}); err != nil {
		t.Fatal(err)
	}
	res, err := w.service(t, "lead", nil).ListAgents(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range res.Agents {
		got = append(got, fmt.Sprintf("%s %s %s %s %v", a.Agent, a.Session, a.State, a.WorkingOn, a.You))
	}
	want := []string{"ana agent-t-ana dialog  false", "cy  no-session tests false", "lead agent-t-lead ready  true"}
	if !slices.Equal(got, want) || res.NoServer || res.TmuxErr != nil {
		t.Errorf("got %q, want %q (%+v)", got, want, res)
	}
	noTeam := &Service{Name: "lead"}
	if _, err := noTeam.ListAgents(context.Background()); !errors.Is(err, lifecycle.ErrNoTeam) {
		t.Errorf("no team: %v", err)
	}
}

// Agents joins the registry with the fake server's sessions through the
// lifecycle: a registered agent without a session is dead and reaped; one
// whose heartbeat stopped is dead under the call's timeout and, reaped,
// shows again unregistered with its screen's state.
func TestAgentsReapOverTheLifecycle(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "ana")
	if err := w.store.Register("t", mailbox.AgentRecord{Agent: "bob", Session: "agent-t-bob", Socket: "/fake/sock"}); err != nil {
		t.Fatal(err)
	}
	if err := w.store.Register("t", mailbox.AgentRecord{Agent: "ana", Session: "agent-t-ana", Socket: "/fake/sock",
		Heartbeat: time.Now().Add(-time.Hour)}); err != nil {
		t.Fatal(err)
	}
	svc := w.service(t, "lead", nil)
	ctx := context.Background()
	states := func(list []lifecycle.AgentStatus) []string {
		var out []string
		for _, a := range list {
			out = append(out, fmt.Sprintf("%s %s %v", a.Target.Agent(), a.State, a.Registered))
		}
		return out
	}

	res, err := svc.Agents(ctx, AgentsRequest{Team: "t", HeartbeatTimeout: 2 * time.Hour})
	if want := []string{"ana idle true", "bob dead true"}; err != nil || !slices.Equal(states(res.Agents), want) {
		t.Errorf("a 2h heartbeat timeout: %q, %v; want %q", states(res.Agents), err, want)
	}
	res, err = svc.Agents(ctx, AgentsRequest{Team: "t", Reap: true, HeartbeatTimeout: time.Minute})
	if want := []string{"ana dead true", "bob dead true"}; err != nil || !slices.Equal(states(res.Reaped), want) {
		t.Errorf("reaped %q, %v; want %q", states(res.Reaped), err, want)
	}
	if want := []string{"ana idle false"}; !slices.Equal(states(res.Agents), want) {
		t.Errorf("after reap %q, want %q", states(res.Agents), want)
	}
	if _, err := svc.Agents(ctx, AgentsRequest{Team: "t", Agent: "bob"}); !errors.Is(err, dispatch.ErrTargetNotFound) {
		t.Errorf("bob after reap: %v, want dispatch.ErrTargetNotFound", err)
	}
}
