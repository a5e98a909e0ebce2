package mailbox

import (
	"fmt"
	"os"
	"path/filepath"
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
	// ana has read all of them: only the retention bounds apply.
	if err := s.Advance(team, "ana", "ana", mustUnread(t, s, "ana", "ana").End); err != nil {
		t.Fatal(err)
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
	// ana read them all; reader "tui" has read 0..5, so 6..9 are unread
	// for it; 5 is its anchor.
	if err := s.Advance(team, "ana", "ana", mustUnread(t, s, "ana", "ana").End); err != nil {
		t.Fatal(err)
	}
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

// An agent that never read its inbox has read nothing: compaction keeps
// every message it has not seen, whether in its inbox or typed into its
// pane, however many there are (issue 10, item 9: 1010 mailbox-only
// messages to a new agent lost the first 10).
func TestCompactKeepsWhatTheOwnerNeverRead(t *testing.T) {
	s := newStore(t)
	b := box(t, s, "newbie")
	var envs []Envelope
	for i := range 1010 {
		e := newEnv(t, "lead", "newbie", fmt.Sprintf("message %d", i))
		e.Delivery = &Delivery{State: StateInbox}
		if i%2 == 1 {
			// typed into its pane and submitted: the agent saw it there
			e.Delivery = &Delivery{State: StateSubmitted}
		}
		if err := b.Append(e); err != nil {
			t.Fatal(err)
		}
		envs = append(envs, e)
	}
	// Another reader (the lead peeking) has read everything: that says
	// nothing about what newbie has read.
	if err := s.Advance(team, "newbie", "lead", mustUnread(t, s, "newbie", "lead").End); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Compact(team, "newbie", Retention{MaxCount: 1000}); err != nil {
		t.Fatal(err)
	}
	var want []Envelope
	for i, e := range envs {
		// the 1000 newest, and every older one newbie never saw
		if i >= 10 || e.Delivery.State == StateInbox {
			want = append(want, e)
		}
	}
	got := mustRead(t, s, "newbie").Envelopes
	if !slices.Equal(ids(got), ids(want)) {
		t.Fatalf("kept %d messages, want %d; first kept %q", len(got), len(want), got[0].Content)
	}

	// Once newbie has read up to message 4, what it read may go; its
	// anchor (message 4) and what it has not seen after it stay.
	if err := s.Advance(team, "newbie", "newbie", Position{LastID: envs[4].ID}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Compact(team, "newbie", Retention{MaxCount: 1000}); err != nil {
		t.Fatal(err)
	}
	want = append([]Envelope{envs[4], envs[6], envs[8]}, envs[10:]...)
	if got := mustRead(t, s, "newbie").Envelopes; !slices.Equal(ids(got), ids(want)) {
		t.Fatalf("after newbie read 0..4: kept %d, want %d", len(got), len(want))
	}
	if un := mustUnread(t, s, "newbie", "newbie").Envelopes; len(un) != 1002 || un[0].ID != envs[6].ID {
		t.Fatalf("newbie's unread after compaction: %d", len(un))
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

// With MinDrop, a compaction that would drop fewer messages rewrites
// nothing (not even to fold the updates in); one that drops enough does.
func TestCompactMinDrop(t *testing.T) {
	s := newStore(t)
	b := box(t, s, "ana")
	for range 10 {
		e := newEnv(t, "lead", "ana", "x")
		e.Delivery = &Delivery{State: StatePending}
		if err := b.Append(e); err != nil {
			t.Fatal(err)
		}
		if err := b.SetDelivery(e.ID, Delivery{State: StateSubmitted}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Advance(team, "ana", "ana", mustUnread(t, s, "ana", "ana").End); err != nil {
		t.Fatal(err)
	}
	res, err := s.Compact(team, "ana", Retention{MaxCount: 8, MinDrop: 3})
	if err != nil || res.Rewritten || len(mustRead(t, s, "ana").Envelopes) != 10 {
		t.Fatalf("dropping 2 with MinDrop 3: %+v, %v", res, err)
	}
	res, err = s.Compact(team, "ana", Retention{MaxCount: 7, MinDrop: 3})
	if err != nil || !res.Rewritten || res.Dropped != 3 || len(mustRead(t, s, "ana").Envelopes) != 7 {
		t.Fatalf("dropping 3 with MinDrop 3: %+v, %v", res, err)
	}
}

// Messages past MaxAge are dropped even when fewer than MinDrop.
func TestCompactMinDropSparesNoExpiredMessage(t *testing.T) {
	s := newStore(t)
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	s.Now = func() time.Time { return now }
	b := box(t, s, "ana")
	for i := range 10 {
		e := newEnv(t, "lead", "ana", "x")
		e.Timestamp = now.Add(-time.Duration(60-i) * 24 * time.Hour) // 60 to 51 days old
		if i >= 5 {
			e.Timestamp = now.Add(-time.Hour)
		}
		e.Delivery = &Delivery{State: StateSubmitted}
		if err := b.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	res, err := s.Compact(team, "ana", Retention{MaxCount: 1000, MaxAge: 30 * 24 * time.Hour, MinDrop: 101})
	if err != nil || !res.Rewritten || res.Dropped != 5 || len(mustRead(t, s, "ana").Envelopes) != 5 {
		t.Fatalf("5 expired with MinDrop 101: %+v, %v", res, err)
	}
}

// A compaction killed before its rename leaves its temp file, a full copy
// of the inbox: the next compaction removes it, whatever it then does.
// Compactions write only under the inbox's lock, so while it holds that
// lock no live one is writing such a file. Other inboxes' temp files, and
// the inbox's cursors', are not its to remove.
func TestCompactRemovesAKilledCompactionsLeftovers(t *testing.T) {
	s := newStore(t)
	b := box(t, s, "ana")
	appendN(t, b, 3)
	leftovers := []string{".ana.jsonl.tmp123456", ".ana.jsonl.tmp987"}
	others := []string{".ana-2.jsonl.tmp1", ".bob.jsonl.tmp1", ".ana.cursor.tui.tmp1"}
	for _, name := range append(leftovers, others...) {
		if err := os.WriteFile(filepath.Join(b.dir, name), []byte("a copy\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if res, err := s.Compact(team, "ana", Retention{}); err != nil || res.Rewritten {
		t.Fatalf("compact = %+v, %v; want nothing to rewrite", res, err)
	}
	for _, name := range leftovers {
		if _, err := os.Stat(filepath.Join(b.dir, name)); !os.IsNotExist(err) {
			t.Errorf("%s: %v, want it removed", name, err)
		}
	}
	for _, name := range others {
		if _, err := os.Stat(filepath.Join(b.dir, name)); err != nil {
			t.Errorf("%s: %v, want it kept", name, err)
		}
	}
}
