package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/alerts"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/service"
)

// A message kept behind an older one (recorded deferred, nothing since)
// shows in top's history as recorded, deferred: not "mailbox only", which
// is a message never to be typed (agentmsg log said it right).
func TestHistoryOfAKeptMessage(t *testing.T) {
	// The history as the service reads it from an inbox.
	store := mailbox.New(t.TempDir())
	box, err := store.Box("alpha", "eve")
	if err != nil {
		t.Fatal(err)
	}
	kept := env(idDeferred, "lead", "deferred", "behind_older", 0)
	kept.To = "eve"
	if err := box.Append(kept); err != nil {
		t.Fatal(err)
	}
	copies, err := (&service.Service{Store: store}).History(t.Context(), service.LogRequest{}, idDeferred)
	if err != nil {
		t.Fatal(err)
	}
	fa := &fakeActions{history: copies}
	m, _ := newModel(t, fa, Options{})
	press(m, "tab", "enter")
	view := m.View()
	if strings.Contains(view, "mailbox only") || !strings.Contains(view, "deferred") {
		t.Errorf("the history of a message kept behind an older one:\n%s", view)
	}
}

// One message waiting is one message.
func TestPlainCountsOneMessage(t *testing.T) {
	p := &Plain{Now: func() time.Time { return t0.Add(time.Minute) }}
	a := &agentRow{State: "busy", Waiting: 1, Oldest: t0}
	if got := p.agentSentence(a); strings.Contains(got, "1 messages") || !strings.Contains(got, "1 message waiting") {
		t.Errorf("%q; want 1 message waiting", got)
	}
	_ = alerts.Age
}
