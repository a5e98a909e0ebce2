package serve

import (
	"context"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/eventlog"
)

// The follower reads the log only while a stream is open. One that comes
// to an idle follower wakes it and gets what is appended from then on;
// what was appended while no one listened it reads from the log itself.
func TestHubWakesForAStreamAndPassesOnWhatComes(t *testing.T) {
	log := &eventlog.Log{Dir: t.TempDir()}
	h := newHub(log)
	start := h.last
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go h.follow(ctx)
	if _, err := log.Append(eventlog.Event{Type: "agent.ready", Team: "t"}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * followEvery) // long enough for a follower that polled to have read it
	h.mu.Lock()
	read := h.last
	h.mu.Unlock()
	if read != start {
		t.Fatalf("an idle follower read the log (last %d, was %d)", read, start)
	}
	s := h.subscribe()
	defer h.unsubscribe(s)
	evs, err := log.Append(eventlog.Event{Type: "agent.busy", Team: "t"})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-s.ch:
		if e.ID != evs[0].ID || e.Type != "agent.busy" {
			t.Fatalf("the stream got %+v, want the event appended after it came (%d)", e, evs[0].ID)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stream got nothing: the idle follower was not woken")
	}
}
