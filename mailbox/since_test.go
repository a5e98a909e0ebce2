package mailbox

import "testing"

// DeliverySince finds a message's newest delivery update among what was
// appended after a read, and says when the inbox was rewritten since (the
// caller then reads it whole).
func TestDeliverySince(t *testing.T) {
	s := newStore(t)
	b := box(t, s, "ana")
	envs := appendN(t, b, 3)
	read, err := s.Read(team, "ana")
	if err != nil {
		t.Fatal(err)
	}
	end := read.End
	if _, changed, ok, err := s.DeliverySince(team, "ana", envs[1].ID, end); err != nil || !ok || changed {
		t.Fatalf("nothing appended: changed %v, ok %v, %v", changed, ok, err)
	}
	for _, st := range []DeliveryState{StateTyping, StateSubmitted} {
		if err := b.SetDelivery(envs[1].ID, Delivery{State: st}); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.SetDelivery(envs[2].ID, Delivery{State: StateFailed}); err != nil {
		t.Fatal(err)
	}
	d, changed, ok, err := s.DeliverySince(team, "ana", envs[1].ID, end)
	if err != nil || !ok || !changed || d.State != StateSubmitted {
		t.Fatalf("want the newest update (submitted), got %+v, changed %v, ok %v, %v", d, changed, ok, err)
	}
	if _, changed, _, _ := s.DeliverySince(team, "ana", envs[0].ID, end); changed {
		t.Error("another message's updates were taken for envs[0]'s")
	}
	if _, err := s.Compact(team, "ana", Retention{}); err != nil {
		t.Fatal(err)
	}
	if _, _, ok, err := s.DeliverySince(team, "ana", envs[1].ID, end); ok || err != nil {
		t.Errorf("after a compaction: ok %v, %v; want not ok (read it whole)", ok, err)
	}
}
