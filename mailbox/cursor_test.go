package mailbox

import (
	"slices"
	"testing"
)

func mustUnread(t testing.TB, s *Store, agent, reader string) Batch {
	t.Helper()
	b, err := s.Unread(team, agent, reader)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCursors(t *testing.T) {
	s := newStore(t)
	b := box(t, s, "ana")
	first := appendN(t, b, 3)

	u := mustUnread(t, s, "ana", "tui")
	if !slices.Equal(ids(u.Envelopes), ids(first)) {
		t.Fatalf("first unread %v", ids(u.Envelopes))
	}
	// Not advanced yet: the same messages again.
	if again := mustUnread(t, s, "ana", "tui"); len(again.Envelopes) != 3 {
		t.Fatalf("before Advance: %d", len(again.Envelopes))
	}
	if err := s.Advance(team, "ana", "tui", u.End); err != nil {
		t.Fatal(err)
	}
	if got := mustUnread(t, s, "ana", "tui"); len(got.Envelopes) != 0 {
		t.Fatalf("after Advance: %v", ids(got.Envelopes))
	}
	// Updates appended after the cursor are not new messages.
	if err := b.SetDelivery(first[0].ID, Delivery{State: StateRead}); err != nil {
		t.Fatal(err)
	}
	second := appendN(t, b, 2)
	got := mustUnread(t, s, "ana", "tui")
	if !slices.Equal(ids(got.Envelopes), ids(second)) {
		t.Fatalf("second unread %v, want %v", ids(got.Envelopes), ids(second))
	}
	// Another reader has its own cursor.
	if other := mustUnread(t, s, "ana", "hook"); len(other.Envelopes) != 5 {
		t.Fatalf("other reader: %d", len(other.Envelopes))
	}
	if _, err := s.Unread(team, "ana", "../x"); err == nil {
		t.Fatal("bad reader name accepted")
	}
}

func TestCursorSurvivesCompaction(t *testing.T) {
	s := newStore(t)
	b := box(t, s, "ana")
	appendN(t, b, 10)
	u := mustUnread(t, s, "ana", "tui")
	if err := s.Advance(team, "ana", "tui", u.End); err != nil {
		t.Fatal(err)
	}
	later := appendN(t, b, 3)
	// ana itself has read all 13: what is unread is tui's alone.
	if err := s.Advance(team, "ana", "ana", mustUnread(t, s, "ana", "ana").End); err != nil {
		t.Fatal(err)
	}

	// Taken before compaction, handed to Advance after it.
	inflight := mustUnread(t, s, "ana", "tui")
	res, err := s.Compact(team, "ana", Retention{MaxCount: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Rewritten || res.Dropped != 9 || res.Kept != 4 {
		t.Fatalf("compact = %+v, want 9 read messages dropped, the anchor and 3 unread kept", res)
	}
	got := mustUnread(t, s, "ana", "tui")
	if !slices.Equal(ids(got.Envelopes), ids(later)) {
		t.Fatalf("unread after compaction %v, want %v", ids(got.Envelopes), ids(later))
	}
	if err := s.Advance(team, "ana", "tui", inflight.End); err != nil {
		t.Fatal(err)
	}
	if got := mustUnread(t, s, "ana", "tui"); len(got.Envelopes) != 0 {
		t.Fatalf("in-flight position lost its place: %v", ids(got.Envelopes))
	}
	newer := appendN(t, b, 1)
	if got := mustUnread(t, s, "ana", "tui"); !slices.Equal(ids(got.Envelopes), ids(newer)) {
		t.Fatalf("after more appends: %v", ids(got.Envelopes))
	}
}
