package serve

import (
	"context"
	"net/http"
	"net/http/httptest"
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

// A stream's answer comes at once, also from a log with nothing new: a
// client's request returned only with the first event or keepalive, 15 s
// later on a quiet log.
func TestAStreamAnswersAtOnce(t *testing.T) {
	log := &eventlog.Log{Dir: t.TempDir()}
	d := &Daemon{log: log, hub: newHub(log)}
	srv := httptest.NewServer(http.HandlerFunc(d.stream))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"?since=now", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET /v1/events of a quiet log: %v", err)
	}
	resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
		t.Fatalf("GET /v1/events: %d %q", resp.StatusCode, ct)
	}
}
