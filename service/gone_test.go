package service

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/eventlog"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/tmux/tmuxtest"
)

// A watch over a tmux server learns when it has gone (deliver --watch
// ends then), and not before.
func TestServerGoneSaysSo(t *testing.T) {
	srv := tmuxtest.New("agent-alpha-ana")
	svc := testService(t, srv)
	if err := svc.ServerGone(context.Background()); err != nil {
		t.Fatalf("a running server: %v", err)
	}
	srv.KillServer()
	if err := svc.ServerGone(context.Background()); !errors.Is(err, ErrServerGone) {
		t.Fatalf("a server gone: %v, want ErrServerGone", err)
	}
}

// Following the event log ends when the mailbox it belongs to is
// removed: it used to find no new event for ever.
func TestFollowingEventsEndsWithTheMailbox(t *testing.T) {
	svc := testService(t, nil)
	root := svc.Store.Root
	svc.Store.Events = &eventlog.Log{Dir: filepath.Join(root, "events"), Within: root}
	if _, err := svc.Store.Events.Append(eventlog.Event{Type: "message.recorded"}); err != nil {
		t.Fatal(err)
	}
	if err := svc.Store.Open(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- svc.Events(context.Background(), -1, true, func(eventlog.Event) error { return nil }) }()
	time.Sleep(100 * time.Millisecond) // following, most likely (either way it must end)
	if err := os.RemoveAll(root); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, mailbox.ErrMailboxGone) {
			t.Fatalf("Events: %v, want ErrMailboxGone", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("following the events still goes on with the mailbox gone")
	}
}
