package mailbox

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentmsg/agentmsg/eventlog"
	"github.com/agentmsg/agentmsg/message"
)

// Every change the store records is an event, with its place, in order.
func TestStoreEmitsEvents(t *testing.T) {
	s := newStore(t)
	s.Place = Place{Host: "h", Socket: "/tmp/tmux-0/default"}
	s.Events = &eventlog.Log{Dir: filepath.Join(s.Root, "events")}
	env := newEnv(t, "lead", "ana", "hi")
	env.Delivery = &Delivery{State: StateTyping}
	b := box(t, s, "ana")
	if err := b.Append(env); err != nil {
		t.Fatal(err)
	}
	for _, d := range []Delivery{{State: StateTyping, Reached: "pasted"}, {State: StateDeferred, Reason: "dialog"}, {State: StateSubmitted}} {
		if err := b.SetDelivery(env.ID, d); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.AdvanceShown(team, "ana", "ana", map[message.ID]bool{env.ID: true}); err != nil {
		t.Fatal(err)
	}
	evs, _, err := s.Events.Since(-1, 100)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, e := range evs {
		types = append(types, string(e.Type))
		if e.Message != string(env.ID) || e.Place != s.Place.Socket || e.Agent != "ana" || e.Team != team {
			t.Errorf("event %+v lacks the message, place or inbox", e)
		}
	}
	want := []string{"message.recorded", "message.pasted", "message.deferred", "message.submitted", "message.read"}
	if !slices.Equal(types, want) {
		t.Fatalf("events %q, want %q", types, want)
	}
	if evs[2].Reason != "dialog" {
		t.Errorf("the deferral's reason: %q", evs[2].Reason)
	}
}
