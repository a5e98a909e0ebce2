package tui

import (
	"bytes"
	"context"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/alerts"
	"github.com/agentmsg/agentmsg/eventlog"
)

// syncBuffer is a buffer safe to read while top writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitFor waits until out holds want.
func waitFor(t *testing.T, out *syncBuffer, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in:\n%s", want, out)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// The plain mode says what it sees and what changes, sentence by
// sentence, and takes commands as lines.
func TestPlain(t *testing.T) {
	fa := &fakeActions{}
	updates := make(chan Update)
	in, typeIn := io.Pipe()
	out := &syncBuffer{}
	c := &clock{now: t0.Add(5 * time.Minute)}
	p := &Plain{In: in, Out: out, Actions: fa, Updates: updates, Now: c.Now, Rules: alerts.Rules{Dialog: time.Minute}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error)
	go func() { done <- p.Run(ctx) }()
	screens, mail := team()
	updates <- screens
	updates <- mail
	for _, want := range []string{
		"3 agents on /tmp/am/sock: 1 busy, 1 dialog, 1 ready",
		"alpha/bob is busy (the agent is working), running node",
		"alpha/eve is in a dialog (selection menu: ❯ 1. Yes), running claude, 2 messages waiting, the oldest for 5m",
		"2 messages are open, of 4 kept",
		"alert: alpha/eve has been in a dialog for 5m: selection menu: ❯ 1. Yes",
	} {
		waitFor(t, out, want)
	}
	if strings.Contains(out.String(), "alpha/ana is") {
		t.Errorf("a ready agent was named at the start:\n%s", out)
	}
	screens.Screens.Agents[2].State, screens.Screens.Agents[2].Detail = "ready", ""
	updates <- screens
	waitFor(t, out, "alpha/eve is ready")
	updates <- Update{Events: []eventlog.Event{
		{Type: "message.pasted", Team: "alpha", Agent: "eve", Message: idDeferred},
		{Type: "message.submitted", Team: "alpha", Agent: "eve", Message: idDeferred},
	}}
	waitFor(t, out, idDeferred+" to alpha/eve: submitted")
	if strings.Contains(out.String(), "pasted") {
		t.Errorf("a step inside a delivery was said:\n%s", out)
	}
	for _, cmd := range []string{"deliver alpha", "retry " + idTyped, "handled " + strings.ToLower(idDeferred), "open alpha/eve", "retry MSG_NONE_00000000", "frobnicate"} {
		if _, err := io.WriteString(typeIn, cmd+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, out, "no command \"frobnicate\"")
	waitFor(t, out, "no message MSG_NONE_00000000 is kept here")
	deadline := time.Now().Add(10 * time.Second)
	want := []string{"deliver alpha", "retry " + idTyped + " in alpha/eve", "handle " + idDeferred + " in alpha/eve", "open alpha/eve"}
	for {
		got := fa.Calls()
		slices.Sort(got)
		w := slices.Clone(want)
		slices.Sort(w)
		if slices.Equal(got, w) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("calls %q, want %q", got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
	io.WriteString(typeIn, "quit\n")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "\x1b") {
		t.Errorf("an escape in the plain output:\n%q", out)
	}
}
