package mailbox

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

func TestRegistry(t *testing.T) {
	s := New(t.TempDir())
	if list, err := s.Registered("alpha"); err != nil || len(list) != 0 {
		t.Fatalf("empty registry: %v, %v", list, err)
	}
	if err := s.Unregister("alpha", "ana"); err != nil {
		t.Fatalf("unregistering from a missing registry: %v", err)
	}
	spawned := time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600))
	if err := s.Register("alpha", AgentRecord{Agent: "ana-2", Session: "agent-alpha-ana-2", Command: []string{"claude", "--x"}, PID: 7, Spawned: spawned}); err != nil {
		t.Fatal(err)
	}
	// Heartbeats from many processes at once lose no field.
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			if err := s.UpdateAgent("alpha", "ana-2", func(r *AgentRecord) error {
				r.Heartbeat = spawned.Add(time.Duration(i) * time.Second)
				return nil
			}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	rec, err := s.RegisteredAgent("alpha", "ana-2")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Session != "agent-alpha-ana-2" || rec.PID != 7 || len(rec.Command) != 2 || !rec.Spawned.Equal(spawned) ||
		rec.Spawned.Location() != time.UTC || rec.Heartbeat.IsZero() {
		t.Errorf("record %+v", rec)
	}
	// An agent that only heart-beats gets an entry of its own.
	if err := s.UpdateAgent("alpha", "bob", func(r *AgentRecord) error { r.Heartbeat = spawned; return nil }); err != nil {
		t.Fatal(err)
	}
	list, err := s.Registered("alpha")
	if err != nil || len(list) != 2 || list[0].Agent != "ana-2" || list[1].Agent != "bob" {
		t.Fatalf("registry %+v, %v", list, err)
	}
	if err := s.Unregister("alpha", "ana-2"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RegisteredAgent("alpha", "ana-2"); !errors.Is(err, ErrNotRegistered) {
		t.Errorf("after unregister: %v", err)
	}
	if err := s.UpdateAgent("alpha", "x", func(*AgentRecord) error { return fmt.Errorf("no") }); err == nil {
		t.Error("an update whose fn fails succeeded")
	}
	if _, err := s.RegisteredAgent("alpha", "x"); !errors.Is(err, ErrNotRegistered) {
		t.Errorf("a failed update left an entry: %v", err)
	}
	for _, bad := range [][2]string{{"../x", "ana"}, {"alpha", "../ana"}, {"alpha", "Ana"}} {
		if err := s.Register(bad[0], AgentRecord{Agent: bad[1]}); !errors.Is(err, ErrBadName) {
			t.Errorf("Register(%q, %q): %v, want ErrBadName", bad[0], bad[1], err)
		}
	}
}
