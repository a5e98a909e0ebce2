package service

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/courier"
	"github.com/agentmsg/agentmsg/hosts"
	"github.com/agentmsg/agentmsg/message"
	"github.com/agentmsg/agentmsg/tmux/tmuxtest"
)

// A batch from another host lists the server's agents once; the next batch
// records a message to an agent that listing found, a moment ago, without
// a listing of its own. An agent it did not find is listed again (a new
// one is never refused for an old listing), and one gone since waits in
// its inbox until the listing is too old to stand for it.
func TestReceiverListsOncePerMoment(t *testing.T) {
	srv := tmuxtest.New("agent-alpha-ana")
	s, _ := deliverService(t, srv, "lead", "", 50*time.Millisecond)
	now := time.Now()
	s.Now = func() time.Time { return now }
	var seen SessionsSeen
	receive := func(agent string) (Received, courier.Listing) {
		t.Helper()
		r := s.NewReceiver()
		r.Seen = &seen
		id, err := message.NewID("LEAD", nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.Receive(context.Background(), "h1", id, hosts.RemoteMessage{Team: "alpha", Agent: agent, Sender: "lead", Tag: "LEAD", Text: "hi", Queue: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Flush(); err != nil {
			t.Fatal(err)
		}
		return got, r.Sessions()
	}
	if got, listed := receive("ana"); got.State != "pending" || !listed.Complete {
		t.Fatalf("first batch: %+v, listed %v; want pending, from a listing", got, listed)
	}
	// The pass that types it is told ana was there: it needs no listing
	// of its own either.
	if got, listed := receive("ana"); got.State != "pending" || listed.Complete || !slices.Equal(listed.Sessions, []string{"agent-alpha-ana"}) {
		t.Fatalf("a batch a moment later: %+v, listed %v; want pending, with no listing, ana known there", got, listed)
	}
	if _, _, err := srv.NewSession(context.Background(), "agent-alpha-bob", "", nil, nil); err != nil {
		t.Fatal(err)
	}
	if got, listed := receive("bob"); got.State != "pending" || !listed.Complete {
		t.Fatalf("an agent new since the listing: %+v, listed %v; want pending, from a new listing", got, listed)
	}
	if err := srv.KillSession(context.Background(), "agent-alpha-bob"); err != nil {
		t.Fatal(err)
	}
	if got, _ := receive("bob"); got.State != "pending" {
		t.Fatalf("an agent gone a moment after the listing: %+v; want its message kept", got)
	}
	now = now.Add(seenFor)
	if got, listed := receive("bob"); !got.Refused || got.State != "not_found" || !listed.Complete {
		t.Fatalf("an agent gone, the listing old: %+v, listed %v; want not_found from a new listing", got, listed)
	}
}

// A message from another host whose id an inbox here holds already, from
// another host, is refused and its sender told (failed, duplicate_id): a
// host that learnt a broadcast's id (a copy reached it) and sent its own
// message with it first took the place of the broadcast's copy here, and
// the broadcast's sender never heard of it. The same host's packet read
// twice is recorded once, as before.
func TestReceiverRefusesAnIDAnotherHostHolds(t *testing.T) {
	srv := tmuxtest.New("agent-alpha-ana")
	s, _ := deliverService(t, srv, "lead", "", 50*time.Millisecond)
	id, err := message.NewID("LEAD", nil)
	if err != nil {
		t.Fatal(err)
	}
	receive := func(from, text string) Received {
		t.Helper()
		r := s.NewReceiver()
		got, err := r.Receive(context.Background(), from, id, hosts.RemoteMessage{Team: "alpha", Agent: "ana", Sender: "lead", Tag: "LEAD", Text: text, Queue: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Flush(); err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := receive("h2", "first, from h2"); got.State != "pending" || !got.Fresh {
		t.Fatalf("h2's message: %+v", got)
	}
	if got := receive("h2", "first, from h2"); got.State != "pending" || got.Fresh || got.Refused {
		t.Fatalf("h2's message read twice: %+v; want recorded once", got)
	}
	got := receive("h1", "the broadcast's copy, from h1")
	if !got.Refused || got.State != "failed" || got.Reason != ReasonDuplicateID {
		t.Fatalf("h1's message with the id h2's holds: %+v; want refused, failed, duplicate_id", got)
	}
	t.Log(got.Detail)
	b, err := s.Store.Read("alpha", "ana")
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Envelopes) != 1 || b.Envelopes[0].FromHost != "h2" {
		t.Fatalf("ana's inbox: %+v", b.Envelopes)
	}
}
