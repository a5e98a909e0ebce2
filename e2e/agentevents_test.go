package e2e

import (
	"context"
	"testing"
	"time"
)

// Every agent.* event says which agent it is about: team, agent, pane and
// server, agent.gone too (it carried only the session's name, in detail).
func TestAgentEventsSayWhichAgent(t *testing.T) {
	t.Parallel()
	s := daemonServer(t)
	c := api(s)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := follow(ctx, t, c, -1)
	ana := s.StartAgent("agent-alpha-ana")
	pane := ana.Pane
	// The daemon's first look learns the agents there (no events); until
	// it has seen ana, a change of her state every second tells.
	toggle := time.NewTicker(time.Second)
	defer toggle.Stop()
	states := []string{"busy", "ready"}
	seen := map[string]event{}
	timeout := time.After(20 * time.Second)
	killed := false
	for seen["agent.gone"].data == nil {
		select {
		case <-toggle.C:
			if len(seen) == 0 {
				ana.SetState(states[0])
				states[0], states[1] = states[1], states[0]
			}
		case e, ok := <-events:
			if !ok {
				t.Fatal("the stream ended")
			}
			typ, _ := e.data["type"].(string)
			if len(typ) > 6 && typ[:6] == "agent." && e.data["agent"] == "ana" || typ == "agent.gone" {
				seen[typ] = e
			}
			if len(seen) > 0 && !killed {
				killed = true
				s.Tmux("kill-session", "-t", "=agent-alpha-ana")
			}
		case <-timeout:
			t.Fatalf("no agent.gone within 20 s; saw %v", seen)
		}
	}
	for typ, e := range seen {
		if e.data["team"] != "alpha" || e.data["agent"] != "ana" || e.data["pane"] != pane || e.data["place"] == nil || e.data["place"] == "" {
			t.Errorf("%s: %v; want team alpha, agent ana, pane %s and its server", typ, e.data, pane)
		}
	}
}
