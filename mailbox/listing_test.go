package mailbox

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestTeamsAndAgents(t *testing.T) {
	s := newStore(t)
	if got, err := s.Teams(); err != nil || len(got) != 0 {
		t.Fatalf("empty store: Teams = %v, %v", got, err)
	}
	appendN(t, box(t, s, "ana"), 1)
	appendN(t, box(t, s, "bob-2"), 1)
	// Stray files: a temp file, a cursor, a lock, a bad name.
	dir := filepath.Join(s.Root, "teams", team, "mailbox")
	for _, name := range []string{".ana.jsonl.tmp123", "ana.cursor.bob", "Bad.jsonl"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(s.Root, "teams", "Not.A.Team"), 0o700); err != nil {
		t.Fatal(err)
	}
	agents, err := s.Agents(team)
	if err != nil || !slices.Equal(agents, []string{"ana", "bob-2"}) {
		t.Errorf("Agents = %v, %v", agents, err)
	}
	teams, err := s.Teams()
	if err != nil || !slices.Equal(teams, []string{team}) {
		t.Errorf("Teams = %v, %v", teams, err)
	}
	if _, err := s.Agents("../x"); !errors.Is(err, ErrBadName) {
		t.Errorf("Agents(../x): %v", err)
	}
}

func TestHistoryKeepsEveryUpdate(t *testing.T) {
	s := newStore(t)
	b := box(t, s, "ana")
	e := newEnv(t, "lead", "ana", "hello")
	e.Delivery = &Delivery{State: StatePending}
	other := appendN(t, b, 1)[0]
	if err := b.Append(e); err != nil {
		t.Fatal(err)
	}
	states := []DeliveryState{StateDeferred, StateTyped, StateSubmitted}
	for i, st := range states {
		if err := b.SetDelivery(e.ID, Delivery{State: st, Attempts: i + 1, LastVerdict: string(st)}); err != nil {
			t.Fatal(err)
		}
		if err := b.SetDelivery(other.ID, Delivery{State: StateFailed}); err != nil {
			t.Fatal(err)
		}
	}
	env, ds, err := s.History(team, "ana", e.ID)
	if err != nil {
		t.Fatal(err)
	}
	if env.Content != "hello" || env.Delivery == nil || env.Delivery.State != StatePending {
		t.Errorf("envelope %+v: want it as appended, unfolded", env)
	}
	var got []DeliveryState
	for _, d := range ds {
		got = append(got, d.State)
	}
	if !slices.Equal(got, states) || ds[2].Attempts != 3 {
		t.Errorf("updates %+v, want %v in order", ds, states)
	}
	if _, _, err := s.History(team, "ana", "MSG_X_00000000"); !errors.Is(err, ErrNoMessage) {
		t.Errorf("unknown id: %v", err)
	}
	if _, _, err := s.History(team, "nobody", e.ID); !errors.Is(err, ErrNoMessage) {
		t.Errorf("no inbox: %v", err)
	}
}

func TestMarkNudgedOnce(t *testing.T) {
	s := newStore(t)
	if err := s.Post(team, Request{ID: "REQ_1", From: "lead", Description: "x"}); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Nudged(team, "REQ_1"); err != nil || n {
		t.Fatalf("Nudged before = %v, %v", n, err)
	}
	first, err := s.MarkNudged(team, "REQ_1")
	if err != nil || !first {
		t.Fatalf("first MarkNudged = %v, %v", first, err)
	}
	if again, err := s.MarkNudged(team, "REQ_1"); err != nil || again {
		t.Fatalf("second MarkNudged = %v, %v", again, err)
	}
	if n, err := s.Nudged(team, "REQ_1"); err != nil || !n {
		t.Fatalf("Nudged after = %v, %v", n, err)
	}
	// The marker is not a request.
	if reqs, err := s.Requests(team); err != nil || len(reqs) != 1 {
		t.Fatalf("Requests = %+v, %v", reqs, err)
	}
}
