package mailbox

import (
	"os"
	"slices"
	"testing"
	"time"
)

func TestCompactRetention(t *testing.T) {
	s := newStore(t)
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	s.Now = func() time.Time { return now }
	b := box(t, s, "ana")
	var all []Envelope
	for i := range 10 {
		e := newEnv(t, "lead", "ana", "x")
		e.Timestamp = now.Add(time.Duration(i-10) * time.Hour) // 10h..1h old
		if err := b.Append(e); err != nil {
			t.Fatal(err)
		}
		all = append(all, e)
	}
	tests := []struct {
		r    Retention
		want []Envelope
	}{
		{Retention{}, all},
		{Retention{MaxCount: 4}, all[6:]},
		{Retention{MaxAge: 150 * time.Minute}, all[8:]},
		{Retention{MaxCount: 1, MaxAge: 150 * time.Minute}, all[9:]},
	}
	for _, tt := range tests {
		if _, err := s.Compact(team, "ana", tt.r); err != nil {
			t.Fatal(err)
		}
		if got := mustRead(t, s, "ana").Envelopes; !slices.Equal(ids(got), ids(tt.want)) {
			t.Fatalf("%+v: kept %d, want %d", tt.r, len(got), len(tt.want))
		}
	}
}

func TestCompactKeepsUnreadAndPending(t *testing.T) {
	s := newStore(t)
	b := box(t, s, "ana")
	envs := appendN(t, b, 10)
	// Reader "tui" has read 0..5, so 6..9 are unread; 5 is its anchor.
	u := mustUnread(t, s, "ana", "tui")
	pos := u.End
	pos.Offset = 0 // force the id path, as after an earlier compaction
	pos.Gen = "old"
	pos.LastID = envs[5].ID
	if err := s.Advance(team, "ana", "tui", pos); err != nil {
		t.Fatal(err)
	}
	if err := b.SetDelivery(envs[1].ID, Delivery{State: StatePending}); err != nil {
		t.Fatal(err)
	}
	if err := b.SetDelivery(envs[2].ID, Delivery{State: StateDeferred}); err != nil {
		t.Fatal(err)
	}
	if err := b.SetDelivery(envs[3].ID, Delivery{State: StateSubmitted}); err != nil {
		t.Fatal(err)
	}
	res, err := s.Compact(team, "ana", Retention{MaxCount: 1})
	if err != nil {
		t.Fatal(err)
	}
	got := mustRead(t, s, "ana").Envelopes
	want := []Envelope{envs[1], envs[2], envs[5], envs[6], envs[7], envs[8], envs[9]}
	if !slices.Equal(ids(got), ids(want)) || res.Kept != len(want) {
		t.Fatalf("kept %v (%+v)", ids(got), res)
	}
	if got[0].Delivery.State != StatePending || got[1].Delivery.State != StateDeferred {
		t.Fatal("delivery not folded into the compacted file")
	}
	if un := mustUnread(t, s, "ana", "tui").Envelopes; !slices.Equal(ids(un), ids(envs[6:])) {
		t.Fatalf("unread after compact: %v", ids(un))
	}
	// Nothing to change: no rewrite.
	if res, err := s.Compact(team, "ana", Retention{MaxCount: 1}); err != nil || res.Rewritten {
		t.Fatalf("second compact: %+v %v", res, err)
	}
}

func TestCompactDropsDeadFragment(t *testing.T) {
	s := newStore(t)
	b := box(t, s, "ana")
	envs := appendN(t, b, 2)
	writeRaw(t, b.path(), "garbage\n{\"id\":\"MSG_")
	res, err := s.Compact(team, "ana", Retention{})
	if err != nil || !res.Torn || res.Corrupt != 1 || !res.Rewritten {
		t.Fatalf("compact = %+v, %v", res, err)
	}
	got := mustRead(t, s, "ana")
	if !slices.Equal(ids(got.Envelopes), ids(envs)) || len(got.Corrupt) != 0 {
		t.Fatalf("after: %v %v", ids(got.Envelopes), got.Corrupt)
	}
	ents, _ := os.ReadDir(b.dir)
	for _, e := range ents {
		if e.Name()[0] == '.' {
			t.Errorf("temp file left: %s", e.Name())
		}
	}
}

func TestCompactMissingInbox(t *testing.T) {
	s := newStore(t)
	if res, err := s.Compact(team, "nobody", Retention{MaxCount: 1}); err != nil || res.Rewritten {
		t.Fatalf("%+v %v", res, err)
	}
}
