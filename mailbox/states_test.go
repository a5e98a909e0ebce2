package mailbox

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// The state machine's table is whole: every state a transition names is
// listed, every listed state is reached, and a state is final exactly when
// deliver has no more work on it (Outstanding).
func TestStateMachineIsWhole(t *testing.T) {
	listed := map[DeliveryState]bool{}
	for _, s := range States {
		if listed[s.State] {
			t.Errorf("%s is listed twice", s.State)
		}
		listed[s.State] = true
		if s.Final == s.State.Outstanding() {
			t.Errorf("%s: final %v, yet outstanding %v", s.State, s.Final, s.State.Outstanding())
		}
		if s.Doc == "" {
			t.Errorf("%s says nothing of itself", s.State)
		}
	}
	reached := map[DeliveryState]bool{}
	for _, tr := range Transitions {
		if tr.From != Recorded && !listed[tr.From] || !listed[tr.To] {
			t.Errorf("%s -> %s names a state States does not list", tr.From, tr.To)
		}
		if tr.By == "" {
			t.Errorf("%s -> %s says not what makes it", tr.From, tr.To)
		}
		reached[tr.To] = true
	}
	for s := range listed {
		if !reached[s] {
			t.Errorf("no transition reaches %s", s)
		}
	}
	d := StateDiagram()
	for s := range listed {
		if !strings.Contains(d, " "+string(s)+" ") && !strings.Contains(d, " "+string(s)+":") && !strings.Contains(d, "    "+string(s)) {
			t.Errorf("the diagram does not draw %s:\n%s", s, d)
		}
	}
}

// A store that checks transitions refuses a change the table does not
// list, and takes one it does.
func TestTransitionsAreChecked(t *testing.T) {
	s := New(t.TempDir())
	s.CheckTransitions = true
	b, err := s.Box("alpha", "ana")
	if err != nil {
		t.Fatal(err)
	}
	env := Envelope{ID: "MSG_LEAD_0000000a", From: "lead", To: "ana", Type: TypeText, Content: "hi", Delivery: &Delivery{State: StateSubmitted}}
	if err := b.Append(env); err != nil {
		t.Fatal(err)
	}
	var te *TransitionError
	if err := b.SetDelivery(env.ID, Delivery{State: StateTyping}); !errors.As(err, &te) || te.From != StateSubmitted {
		t.Fatalf("submitted -> typing: %v; want a TransitionError", err)
	}
	env.ID, env.Delivery = "MSG_LEAD_0000000b", &Delivery{State: StateDeferred}
	if err := b.Append(env); err != nil {
		t.Fatal(err)
	}
	if !Allowed(StateDeferred, StateTyping) || !slices.ContainsFunc(Transitions, func(tr Transition) bool { return tr.To == StateHandled }) {
		t.Fatal("the table lost deferred -> typing")
	}
	if err := b.SetDelivery(env.ID, Delivery{State: StateTyping}); err != nil {
		t.Fatalf("deferred -> typing: %v", err)
	}
}
