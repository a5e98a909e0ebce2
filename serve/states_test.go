package serve

import (
	"testing"

	"github.com/agentmsg/agentmsg/eventlog"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
)

// events are the events the log holds about message id, oldest first.
func (a *testAPI) events(t *testing.T, id string) []eventlog.Event {
	t.Helper()
	evs, _, err := a.log.Since(-1, 100000)
	if err != nil {
		t.Fatal(err)
	}
	var out []eventlog.Event
	for _, e := range evs {
		if e.Message == id {
			out = append(out, e)
		}
	}
	return out
}

// A deliver pass that types nothing writes nothing: a message waiting
// for an agent in a dialog is not turned typing and deferred again, nor
// counted as an attempt, at every pass.
func TestAPIAWaitingMessageDoesNotFlicker(t *testing.T) {
	a := newTestAPI(t, "a1")
	a.tmux.SetDialog("agent-t-a1", true)
	st, doc := a.do(t, "POST", "/v1/send", `{"team":"t","agent":"a1","text":"later","from":"app","ready_timeout":"50ms"}`)
	want(t, "send", st, doc, 200, 0)
	id := doc["id"].(string)
	if doc["stored"] != "deferred" {
		t.Fatalf("send: %v; want it deferred", doc)
	}
	_, before, err := a.store.History("t", "a1", message.ID(id))
	if err != nil {
		t.Fatal(err)
	}
	evs := len(a.events(t, id))
	for range 3 {
		st, doc := a.do(t, "POST", "/v1/deliver", `{"team":"t","ready_timeout":"50ms"}`)
		want(t, "deliver", st, doc, 200, 0)
	}
	env, after, err := a.store.History("t", "a1", message.ID(id))
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Errorf("3 passes that typed nothing wrote %d records: %+v", len(after)-len(before), after[len(before):])
	}
	if n := len(a.events(t, id)) - evs; n != 0 {
		t.Errorf("3 passes that typed nothing wrote %d events: %+v", n, a.events(t, id)[evs:])
	}
	last := env.Delivery
	if len(after) > 0 {
		last = &after[len(after)-1]
	}
	if last.State != mailbox.StateDeferred || last.Attempts > 1 {
		t.Errorf("the message is %+v; want deferred, attempted once at most", last)
	}
}

// A new message's first event is message.recorded, whatever state it is
// recorded in.
func TestAPIFirstEventIsRecorded(t *testing.T) {
	a := newTestAPI(t, "a1")
	a.tmux.SetDialog("agent-t-a1", true)
	// An older message waits: the new one is recorded deferred, behind it.
	seed(t, a, "a1", "MSG_LEAD_0000000a", mailbox.StateDeferred)
	st, doc := a.do(t, "POST", "/v1/send", `{"team":"t","agent":"a1","text":"behind","from":"app","ready_timeout":"50ms"}`)
	want(t, "send", st, doc, 200, 0)
	evs := a.events(t, doc["id"].(string))
	if len(evs) == 0 || evs[0].Type != "message.recorded" {
		t.Errorf("the message's events: %+v; want message.recorded first", evs)
	}
}

// Every agent.* event says which agent it is about: team, agent, pane and
// server; agent.gone too, with the state it was last seen in (it said
// only the session's name, in detail).
func TestAgentEventsSayWhoTheyAreAbout(t *testing.T) {
	seen := func(state string) eventlog.Event {
		return eventlog.Event{Place: "/tmp/s", Team: "alpha", Agent: "ana", Pane: "%3", State: state}
	}
	evs, ready, _ := agentChanges(nil, map[string]eventlog.Event{"agent-alpha-ana": seen("busy")})
	if len(evs) != 0 || !ready[""] {
		t.Fatalf("the first look: %v %v; want no news and a pass over every team", evs, ready)
	}
	prev := map[string]eventlog.Event{"agent-alpha-ana": seen("busy")}
	evs, ready, _ = agentChanges(prev, map[string]eventlog.Event{"agent-alpha-ana": seen("ready")})
	if len(evs) != 1 || evs[0].Type != eventlog.AgentReady || !ready["alpha"] {
		t.Fatalf("busy to ready: %+v %v", evs, ready)
	}
	evs, _, gone := agentChanges(prev, map[string]eventlog.Event{})
	if len(evs) != 1 || len(gone) != 1 {
		t.Fatalf("gone: %+v %v", evs, gone)
	}
	if e := evs[0]; e.Type != eventlog.AgentGone || e.Team != "alpha" || e.Agent != "ana" || e.Pane != "%3" || e.Place != "/tmp/s" || e.State != "busy" {
		t.Errorf("agent.gone: %+v; want alpha/ana, its pane, its server and its last state", e)
	}
}
