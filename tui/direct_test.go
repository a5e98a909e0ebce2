package tui

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/eventlog"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/service"
)

// fakeReader is the service's reading side, counting what it was asked.
type fakeReader struct {
	mu    sync.Mutex
	logs  []string
	looks int
}

func (f *fakeReader) Screens(context.Context) (service.ScreensResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.looks++
	return service.ScreensResult{Socket: "/tmp/am/sock", Agents: []service.AgentScreen{{Team: "alpha", Agent: "eve", State: "dialog"}}}, nil
}

func (f *fakeReader) Log(_ context.Context, req service.LogRequest) (service.LogResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.logs = append(f.logs, req.Team+"/"+req.Agent)
	e := service.LogEntry{Team: "alpha", Inbox: "eve", Envelope: env(idDeferred, "lead", "deferred", "dialog", 0)}
	return service.LogResult{Entries: []service.LogEntry{e}}, nil
}

func (f *fakeReader) Logs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.logs)
}

// next is the next update, within a deadline.
func next(t *testing.T, ch <-chan Update) Update {
	t.Helper()
	select {
	case u := <-ch:
		return u
	case <-time.After(10 * time.Second):
		t.Fatal("no update within 10s")
	}
	return Update{}
}

// Direct reads every inbox once, then only the inbox an event of its own
// place names; the screens come in updates of their own.
func TestDirectFollowsTheEventLog(t *testing.T) {
	log := &eventlog.Log{Dir: t.TempDir()}
	if _, err := log.Append(eventlog.Event{Type: "message.recorded", Place: "/tmp/am/sock", Team: "alpha", Agent: "old"}); err != nil {
		t.Fatal(err)
	}
	r := &fakeReader{}
	d := &Direct{Service: r, Events: log, Place: "/tmp/am/sock", Follow: 5 * time.Millisecond, Reread: time.Hour, Look: time.Hour}
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan Update)
	done := make(chan error)
	go func() { done <- d.Run(ctx, out) }()
	var screens, full int
	for screens == 0 || full == 0 {
		u := next(t, out)
		if u.Screens != nil {
			screens++
		}
		if u.Full {
			full++
			if len(u.Inboxes) != 1 || u.Inboxes[0].Agent != "eve" || len(u.Inboxes[0].Messages) != 1 {
				t.Errorf("the full read: %+v", u.Inboxes)
			}
		}
	}
	if _, err := log.Append(
		eventlog.Event{Type: "message.deferred", Place: "/tmp/other/sock", Team: "beta", Agent: "zed"},
		eventlog.Event{Type: "message.submitted", Place: "/tmp/am/sock", Team: "alpha", Agent: "eve", Message: idDeferred},
		eventlog.Event{Type: "message.typing", Place: "/tmp/am/sock", Team: "alpha", Agent: "eve", Message: idDeferred},
	); err != nil {
		t.Fatal(err)
	}
	u := next(t, out)
	if len(u.Events) != 2 || u.Events[0].Type != "message.submitted" || len(u.Inboxes) != 1 || u.Full {
		t.Errorf("after the events: %+v; want this place's two events and eve's inbox read", u)
	}
	if got, want := r.Logs(), []string{"/", "alpha/eve"}; !slices.Equal(got, want) {
		t.Errorf("inboxes read: %q, want every one, then eve's (not old's, from before the start)", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// Events that could not be written named inboxes no one knows: an
// events.lost has every inbox read again, at once, not at the next
// minute's full read.
func TestDirectReadsEverythingAfterALoss(t *testing.T) {
	log := &eventlog.Log{Dir: t.TempDir()}
	r := &fakeReader{}
	d := &Direct{Service: r, Events: log, Place: "/tmp/am/sock", Follow: 5 * time.Millisecond, Reread: time.Hour, Look: time.Hour}
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan Update)
	done := make(chan error)
	go func() { done <- d.Run(ctx, out) }()
	for u := next(t, out); !u.Full; u = next(t, out) {
	}
	if _, err := log.Append(eventlog.Event{Type: eventlog.TypeLost, Lost: 3}); err != nil {
		t.Fatal(err)
	}
	u := next(t, out)
	for u.Screens != nil {
		u = next(t, out)
	}
	if len(u.Events) != 1 || u.Events[0].Type != eventlog.TypeLost {
		t.Fatalf("after the loss: %+v; want its event", u)
	}
	for u = next(t, out); u.Screens != nil; u = next(t, out) {
	}
	if !u.Full {
		t.Errorf("after the loss's event: %+v; want every inbox read", u)
	}
	if got := r.Logs(); !slices.Equal(got, []string{"/", "/"}) {
		t.Errorf("inboxes read: %q, want all of them twice", got)
	}
	if line := eventLine(eventlog.Event{Type: eventlog.TypeLost, Lost: 3, Reason: "no_space"}); !strings.Contains(line, "3 events could not be written") {
		t.Errorf("top --plain says of the loss: %q", line)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// Looks at the screens are a second apart at least, and further when a
// look takes long: 500 panes take tmux a while.
func TestPause(t *testing.T) {
	for _, tt := range []struct{ took, want time.Duration }{
		{10 * time.Millisecond, 990 * time.Millisecond},
		{200 * time.Millisecond, 800 * time.Millisecond},
		{500 * time.Millisecond, 2 * time.Second},
	} {
		if got := pause(time.Second, tt.took); got != tt.want {
			t.Errorf("pause after a look of %s = %s, want %s", tt.took, got, tt.want)
		}
	}
}

// A full read replaces what was known: an inbox not in it is gone.
func TestStateFullRead(t *testing.T) {
	s := newState()
	s.apply(Update{Inboxes: []Inbox{{Team: "a", Agent: "b", Messages: []mailbox.Envelope{env(idDeferred, "x", "pending", "", 0)}}}})
	s.apply(Update{Full: true, Inboxes: []Inbox{{Team: "a", Agent: "c"}}})
	s.build()
	if len(s.msgs) != 0 || len(s.agents) != 1 || s.agents[0].key.Agent != "c" {
		t.Errorf("after a full read: %d messages, agents %+v", len(s.msgs), s.agents)
	}
}
