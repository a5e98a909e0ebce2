package mailbox

import (
	"errors"
	"testing"
	"time"
)

// waitingFor records n messages for agent that wait to be typed, each
// with a record of its own (deferred once), and returns them as read.
func waitingFor(t *testing.T, s *Store, agent string, n int) []Envelope {
	t.Helper()
	out := appendN(t, box(t, s, agent), n)
	for i := range out {
		d := Delivery{State: StateDeferred, Attempts: i + 1, LastVerdict: "not_ready", Reason: "busy", Updated: time.Now().Add(-time.Minute).UTC()}
		if err := box(t, s, agent).SetDelivery(out[i].ID, d); err != nil {
			t.Fatal(err)
		}
		out[i].Delivery = &d
	}
	return out
}

// deliveryOf is message e's record in agent's inbox now.
func deliveryOf(t *testing.T, s *Store, agent string, e Envelope) Delivery {
	t.Helper()
	for _, got := range mustRead(t, s, agent).Envelopes {
		if got.ID == e.ID {
			return *got.Delivery
		}
	}
	t.Fatalf("%s is not in %s's inbox", e.ID, agent)
	return Delivery{}
}

// A task's writer that dies leaves its intent to Complete, which decides by
// the inbox: the task is not there, so each message it was to carry gets
// back the very record it had; it is there, so they stay read, inside it.
// While the writer lives, Complete leaves both alone.
func TestCarryCompletedByTheInbox(t *testing.T) {
	for _, recorded := range []bool{false, true} {
		t.Run(map[bool]string{false: "task missing", true: "task recorded"}[recorded], func(t *testing.T) {
			s := newStore(t)
			msgs := waitingFor(t, s, "ana", 2)
			task := newEnv(t, "lead", "ana", "the task")
			c, err := s.Carry(team, "ana", task.ID, msgs, "read: inside a task")
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range msgs {
				if d := deliveryOf(t, s, "ana", e); d.State != StateRead || d.LastVerdict != "read: inside a task" || d.Attempts != e.Delivery.Attempts {
					t.Fatalf("%s carried: %+v", e.ID, d)
				}
			}
			if recorded {
				if err := box(t, s, "ana").Append(task); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := s.Complete(); err != nil {
				t.Fatal(err)
			}
			for _, e := range msgs {
				if d := deliveryOf(t, s, "ana", e); d.State != StateRead {
					t.Fatalf("while its writer lives: %s is %+v", e.ID, d)
				}
			}
			c.held.Leave() // the writer dies: the kernel lets its lock go
			if _, err := s.Complete(); err != nil {
				t.Fatal(err)
			}
			for _, e := range msgs {
				d := deliveryOf(t, s, "ana", e)
				switch {
				case recorded && d.State != StateRead:
					t.Errorf("%s, inside the recorded task, is %+v; want read", e.ID, d)
				case !recorded && !sameDelivery(d, *e.Delivery):
					t.Errorf("%s, carried by no task, is %+v; want its own record back, %+v", e.ID, d, *e.Delivery)
				}
			}
			if _, open, _ := s.Intent(task.ID); open {
				t.Error("the intent is still there")
			}
		})
	}
}

// Only a message that still has the mark gets its record back: one that
// had another record since (handled by a person, say) keeps it; and an
// intent seen twice (its removal lost to a power cut) gives nothing back
// the second time.
func TestCarryPutsBackOnlyTheMark(t *testing.T) {
	s := newStore(t)
	msgs := waitingFor(t, s, "ana", 2)
	task := newEnv(t, "lead", "ana", "the task")
	c, err := s.Carry(team, "ana", task.ID, msgs, "read: inside a task")
	if err != nil {
		t.Fatal(err)
	}
	handled := Delivery{State: StateHandled, LastVerdict: "handled by a person"}
	if err := box(t, s, "ana").SetDelivery(msgs[1].ID, handled); err != nil {
		t.Fatal(err)
	}
	first := c.held.in
	if err := c.PutBack(); err != nil {
		t.Fatal(err)
	}
	if d := deliveryOf(t, s, "ana", msgs[0]); !sameDelivery(d, *msgs[0].Delivery) {
		t.Errorf("%s put back: %+v, want %+v", msgs[0].ID, d, *msgs[0].Delivery)
	}
	if d := deliveryOf(t, s, "ana", msgs[1]); d.State != StateHandled {
		t.Errorf("%s, handled since its mark: %+v", msgs[1].ID, d)
	}
	if _, open, _ := s.Intent(task.ID); open {
		t.Fatal("the intent is still there after PutBack")
	}

	// The same intent again, after the first was put back and typed.
	typed := Delivery{State: StateSubmitted, Attempts: 3, LastVerdict: "submitted"}
	if err := box(t, s, "ana").SetDelivery(msgs[0].ID, typed); err != nil {
		t.Fatal(err)
	}
	again, err := s.Intend(first)
	if err != nil {
		t.Fatal(err)
	}
	again.Leave()
	if _, err := s.Complete(); err != nil {
		t.Fatal(err)
	}
	if d := deliveryOf(t, s, "ana", msgs[0]); d.State != StateSubmitted {
		t.Errorf("%s, typed since: %+v", msgs[0].ID, d)
	}
}

// carryIntent is an intent as Carry makes it for task carrying msgs.
func carryIntent(t *testing.T, s *Store, task Envelope, msgs []Envelope) Intent {
	t.Helper()
	in := Intent{Env: Envelope{ID: task.ID, To: "ana"}, To: []Inbox{{Team: team, Agent: "ana"}}, Commit: &Commit{Recorded: true}}
	for _, e := range msgs {
		in.Carried = append(in.Carried, Carried{ID: e.ID, Was: *e.Delivery, Mark: Delivery{State: StateRead, Updated: s.now()}})
	}
	return in
}

// Done keeps the marks; nothing to carry is no intent at all; an intent
// that carries messages is for one inbox and taken by its task's record.
func TestCarryDoneAndRefusals(t *testing.T) {
	s := newStore(t)
	msgs := waitingFor(t, s, "ana", 1)
	task := newEnv(t, "lead", "ana", "the task")
	c, err := s.Carry(team, "ana", task.ID, msgs, "read: inside a task")
	if err != nil {
		t.Fatal(err)
	}
	if err := box(t, s, "ana").Append(task); err != nil {
		t.Fatal(err)
	}
	if err := c.Done(); err != nil {
		t.Fatal(err)
	}
	if err := c.PutBack(); err != nil { // let go already: nothing
		t.Fatal(err)
	}
	if d := deliveryOf(t, s, "ana", msgs[0]); d.State != StateRead {
		t.Errorf("after Done: %+v", d)
	}
	if _, open, _ := s.Intent(task.ID); open {
		t.Error("the intent is still there after Done")
	}

	none, err := s.Carry(team, "ana", newEnv(t, "lead", "ana", "x").ID, nil, "read: inside a task")
	if err != nil || none.held != nil {
		t.Fatalf("Carry of nothing = %+v, %v", none, err)
	}
	if err := none.Done(); err != nil {
		t.Fatal(err)
	}

	bad := carryIntent(t, s, newEnv(t, "lead", "ana", "y"), msgs)
	bad.To = append(bad.To, Inbox{Team: team, Agent: "bob"})
	if _, err := s.Intend(bad); !errors.Is(err, ErrBadIntent) {
		t.Errorf("an intent carrying messages for two inboxes: %v, want ErrBadIntent", err)
	}
	bad = carryIntent(t, s, newEnv(t, "lead", "ana", "z"), msgs)
	bad.Commit = nil
	if _, err := s.Intend(bad); !errors.Is(err, ErrBadIntent) {
		t.Errorf("an intent carrying messages without its task's record: %v, want ErrBadIntent", err)
	}
	if _, err := s.Carry(team, "ana", newEnv(t, "lead", "ana", "w").ID, []Envelope{newEnv(t, "bob", "ana", "no record")}, "r"); !errors.Is(err, ErrBadIntent) {
		t.Errorf("a message without a record to give back: %v, want ErrBadIntent", err)
	}
}
