package target

import "testing"

// InboxOwner is Inbox the other way round, the one mapping from an inbox
// (or registry entry) back to its agent: team "ralph" holds only team-less
// agents.
func TestInboxOwner(t *testing.T) {
	for _, s := range []struct{ team, name string }{{"alpha", "ana"}, {"alpha", "ana-2"}, {"", "ralph-7"}} {
		want, err := New(s.team, s.name)
		if err != nil {
			t.Fatal(err)
		}
		team, agent := Inbox(want)
		if got, ok := InboxOwner(team, agent); !ok || got != want {
			t.Errorf("InboxOwner(Inbox(%v)) = %v, %v", want, got, ok)
		}
	}
	for _, s := range []struct{ team, name string }{{"ralph", "ana"}, {"ralph", "alpha-ana"}, {"alpha", "Ana"}, {"", "ana"}} {
		if got, ok := InboxOwner(s.team, s.name); ok {
			t.Errorf("InboxOwner(%q, %q) = %v, want no agent", s.team, s.name, got)
		}
	}
}
