package service

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/courier"
	"github.com/agentmsg/agentmsg/delivery"
	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/lock"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
	"github.com/agentmsg/agentmsg/tmux"
	"github.com/agentmsg/agentmsg/tmux/tmuxtest"
)

// A task carries the agent's unread messages that never reached its pane;
// they are read afterwards, and the one typed already is not repeated.
func TestAssignTaskCarriesUnread(t *testing.T) {
	srv := tmuxtest.New("agent-alpha-ana")
	s := testService(t, srv)
	ctx := context.Background()
	typed, err := s.Send(ctx, SendRequest{To: to(t, "ana"), Draft: Draft{Text: "typed already"}, Delivery: Delivery{Queue: true}})
	if err != nil || !typed.OK() {
		t.Fatalf("setup: %+v, %v", typed, err)
	}
	srv.SetDialog("agent-alpha-ana", true)
	waiting, err := s.Send(ctx, SendRequest{To: to(t, "ana"), Draft: Draft{Text: "the API changed"}, Delivery: Delivery{Queue: true}})
	if err != nil || waiting.Verdict != delivery.Deferred {
		t.Fatalf("setup: %+v, %v", waiting, err)
	}
	srv.SetDialog("agent-alpha-ana", false)

	res, err := s.AssignTask(ctx, AssignRequest{To: to(t, "ana"), Task: " update the client ", TaskID: "T1"})
	if err != nil || !res.OK() || !slices.Equal(res.Injected, []message.ID{waiting.ID}) {
		t.Fatalf("AssignTask = %+v, %v", res, err)
	}
	got := srv.Received("agent-alpha-ana")
	want := string(res.ID) + ": [task] task_id=T1 You have 1 unread message:\n[" + string(waiting.ID) +
		"] from lead (text): the API changed\n\nYour task:\nupdate the client"
	if len(got) != 2 || got[1] != want {
		t.Fatalf("ana got %q\nwant last %q", got, want)
	}
	unread, err := s.Store.Unread("alpha", "ana", "ana")
	if err != nil || len(unread.Envelopes) != 1 || unread.Envelopes[0].ID != res.ID || unread.Envelopes[0].Type != mailbox.TypeTask {
		t.Fatalf("ana's unread after the task: %+v, %v", unread.Envelopes, err)
	}
}

func TestAssignTaskEmpty(t *testing.T) {
	s := testService(t, tmuxtest.New("agent-alpha-ana"))
	if _, err := s.AssignTask(context.Background(), AssignRequest{To: to(t, "ana"), Task: "  "}); !errors.Is(err, ErrEmptyTask) {
		t.Fatalf("err = %v, want ErrEmptyTask", err)
	}
}

// breakingTmux is a fake server that runs brk at the first capture once
// armed: the moment a delivery first looks at the pane.
type breakingTmux struct {
	*fakeServer
	armed bool
	once  sync.Once
	brk   func()
}

func (b *breakingTmux) Pinned(tmux.Pane) tmux.Client { return b }

func (b *breakingTmux) Capture(ctx context.Context, id string, history int) ([]string, error) {
	if b.armed {
		b.once.Do(b.brk)
	}
	return b.fakeServer.Capture(ctx, id, history)
}

// fakeServer is tmuxtest.Server under a name that does not hide its
// Server method when embedded.
type fakeServer = tmuxtest.Server

// A task that is not delivered puts back the messages it was to carry; one
// that cannot be put back (its inbox cannot be written: a full disk)
// stays marked read and is never typed, and the task's outcome says so.
// Before, that failure was dropped without a word.
func TestAssignTaskSaysWhatItCouldNotPutBack(t *testing.T) {
	srv := &breakingTmux{fakeServer: tmuxtest.New("agent-alpha-ana")}
	s := testService(t, nil)
	locks := lock.Dir{Path: t.TempDir()}
	s.Dispatcher = func() (*dispatch.Dispatcher, error) {
		opts := delivery.DefaultOptions()
		opts.Settle, opts.Poll, opts.ReadyTimeout = time.Millisecond, time.Millisecond, 50*time.Millisecond
		return &dispatch.Dispatcher{Tmux: srv, Locks: locks, Clock: tmuxtest.Clock{}, Opts: opts}, nil
	}
	s.Courier = &courier.Courier{Store: s.Store, Locks: locks}
	ctx := context.Background()
	srv.SetDialog("agent-alpha-ana", true)
	waiting, err := s.Send(ctx, SendRequest{To: to(t, "ana"), Draft: Draft{Text: "the API changed"}, Delivery: Delivery{Queue: true}})
	if err != nil || waiting.Verdict != delivery.Deferred {
		t.Fatalf("setup: %+v, %v", waiting, err)
	}
	// The task is recorded by then; from then on the inbox cannot be
	// written (a directory where its file was).
	inbox := filepath.Join(s.Store.TeamDir("alpha"), "mailbox", "ana.jsonl")
	srv.brk = func() {
		if err := os.Rename(inbox, inbox+".kept"); err != nil {
			t.Error(err)
		}
		if err := os.Mkdir(inbox, 0o700); err != nil {
			t.Error(err)
		}
	}
	srv.armed = true
	res, err := s.AssignTask(ctx, AssignRequest{To: to(t, "ana"), Task: "update the client"})
	if res.OK() || res.Err == nil || !strings.Contains(res.Err.Error(), string(waiting.ID)+" stays marked read") {
		t.Fatalf("AssignTask whose put-back failed = %+v, %v; want its outcome to name %s", res, err, waiting.ID)
	}
}

// A task carries only what waits to be typed. A message on its way into
// the pane (its typist at work, or one that died and left it to a
// deliverer, which looks for it before it types it again: typing, typed)
// may be there already, and one read inside an earlier task (whose writer
// died before it moved the cursor past it) reached the agent with that
// task: in this one too, either would reach the agent twice. Neither goes
// in, none is marked read by it, and ana's cursor stops before the first
// message still on its way.
func TestAssignTaskCarriesOnlyWhatWaits(t *testing.T) {
	s := testService(t, tmuxtest.New("agent-alpha-ana"))
	box, err := s.Store.Box("alpha", "ana")
	if err != nil {
		t.Fatal(err)
	}
	record := func(content string, d mailbox.Delivery) message.ID {
		id, err := message.NewID("BOB", nil)
		if err == nil {
			err = box.Append(mailbox.Envelope{ID: id, From: "bob", To: "ana", Type: mailbox.TypeText, Content: content, Delivery: &d})
		}
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	typing := record("half typed", mailbox.Delivery{State: mailbox.StateTyping, Attempts: 1, Reached: "pressed"})
	typed := record("in the box", mailbox.Delivery{State: mailbox.StateTyped, Attempts: 1})
	read := record("in an earlier task", mailbox.Delivery{State: mailbox.StateRead, LastVerdict: "read: inside a task"})
	waiting := record("waits", mailbox.Delivery{State: mailbox.StateDeferred, Attempts: 1})

	res, err := s.AssignTask(context.Background(), AssignRequest{To: to(t, "ana"), Task: "ship it"})
	if err != nil || !res.OK() || !slices.Equal(res.Injected, []message.ID{waiting}) {
		t.Fatalf("AssignTask = %+v, %v; want %s alone injected", res, err, waiting)
	}
	b, err := s.Store.Read("alpha", "ana")
	if err != nil {
		t.Fatal(err)
	}
	state := map[message.ID]mailbox.DeliveryState{}
	for _, e := range b.Envelopes {
		state[e.ID] = e.Delivery.State
		if e.ID == res.ID && e.Content != "You have 1 unread message:\n["+string(waiting)+"] from bob (text): waits\n\nYour task:\nship it" {
			t.Errorf("the task as stored: %q", e.Content)
		}
	}
	if state[waiting] != mailbox.StateRead || state[read] != mailbox.StateRead || state[typing] == mailbox.StateRead || state[typed] == mailbox.StateRead {
		t.Errorf("states after the task: %v", state)
	}
	unread, err := s.Store.Unread("alpha", "ana", "ana")
	if err != nil || len(unread.Envelopes) == 0 || unread.Envelopes[0].ID != typing {
		t.Errorf("ana's unread after the task: %+v, %v; want it to start at %s", unread.Envelopes, err, typing)
	}
}
