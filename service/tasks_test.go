package service

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/agentmsg/agentmsg/courier"
	"github.com/agentmsg/agentmsg/internal/faketmux"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
)

// A task carries the agent's unread messages that never reached its pane;
// they are read afterwards, and the one typed already is not repeated.
func TestAssignTaskCarriesUnread(t *testing.T) {
	srv := faketmux.New("agent-alpha-ana")
	s := testService(t, srv)
	ctx := context.Background()
	typed, err := s.Send(ctx, SendRequest{To: to(t, "ana"), Draft: Draft{Text: "typed already"}, Delivery: Delivery{Queue: true}})
	if err != nil || !typed.OK() {
		t.Fatalf("setup: %+v, %v", typed, err)
	}
	srv.SetDialog("agent-alpha-ana", true)
	waiting, err := s.Send(ctx, SendRequest{To: to(t, "ana"), Draft: Draft{Text: "the API changed"}, Delivery: Delivery{Queue: true}})
	if err != nil || waiting.Verdict != courier.Deferred {
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
	s := testService(t, faketmux.New("agent-alpha-ana"))
	if _, err := s.AssignTask(context.Background(), AssignRequest{To: to(t, "ana"), Task: "  "}); !errors.Is(err, ErrEmptyTask) {
		t.Fatalf("err = %v, want ErrEmptyTask", err)
	}
}
