package service

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/courier"
	"github.com/agentmsg/agentmsg/delivery"
	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/lock"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
	"github.com/agentmsg/agentmsg/target"
	"github.com/agentmsg/agentmsg/tmux"
	"github.com/agentmsg/agentmsg/tmux/tmuxtest"
)

// testService is lead of team alpha over a fake tmux server.
func testService(t *testing.T, srv *tmuxtest.Server) *Service {
	t.Helper()
	locks := lock.Dir{Path: t.TempDir()}
	store := checkedStore(t)
	return &Service{Team: "alpha", Name: "lead", Sender: "LEAD", Store: store,
		Dispatcher: func() (*dispatch.Dispatcher, error) {
			if srv == nil {
				return nil, tmux.ErrNotInstalled
			}
			opts := delivery.DefaultOptions()
			opts.Settle, opts.Poll, opts.ReadyTimeout = time.Millisecond, time.Millisecond, 50*time.Millisecond
			return &dispatch.Dispatcher{Tmux: srv, Locks: locks, Clock: tmuxtest.Clock{}, Opts: opts}, nil
		},
		Courier: &courier.Courier{Store: store, Locks: locks},
	}
}

func to(t *testing.T, name string) target.Target {
	t.Helper()
	tg, err := target.New("alpha", name)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

func TestSend(t *testing.T) {
	srv := tmuxtest.New("agent-alpha-ana")
	s := testService(t, srv)
	res, err := s.Send(context.Background(), SendRequest{To: to(t, "ana"), Draft: Draft{Text: "hi"}, Delivery: Delivery{Queue: true}})
	if err != nil || !res.OK() || res.Verdict != delivery.Submitted || res.From != "lead" || res.Socket != "/fake/sock" {
		t.Fatalf("Send = %+v, %v", res, err)
	}
	if got := srv.Received("agent-alpha-ana"); len(got) != 1 || got[0] != string(res.ID)+": hi" {
		t.Fatalf("ana received %q", got)
	}
}

func TestSendRefuses(t *testing.T) {
	s := testService(t, tmuxtest.New("agent-alpha-ana"))
	for _, tc := range []struct {
		req  SendRequest
		want error
	}{
		{SendRequest{To: to(t, "lead"), Draft: Draft{Text: "hi"}, InboxIfAbsent: true}, dispatch.ErrSelf},
		{SendRequest{To: to(t, "ana"), Draft: Draft{Text: " \n"}}, dispatch.ErrEmptyMessage},
		{SendRequest{To: to(t, "ana"), Draft: Draft{Text: "hi", Type: "status"}}, mailbox.ErrProtocol},
		{SendRequest{To: to(t, "ana"), Draft: Draft{Text: "hi", Meta: map[string]string{"k": "1", "k\x1b": "2"}}}, mailbox.ErrProtocol},
		{SendRequest{To: to(t, "nobody"), Draft: Draft{Text: "hi"}, InboxIfAbsent: true}, dispatch.ErrTargetNotFound},
	} {
		if _, err := s.Send(context.Background(), tc.req); !errors.Is(err, tc.want) {
			t.Errorf("Send(%+v) = %v; want %v", tc.req, err, tc.want)
		}
	}
	var unknown *UnknownAgentError
	_, err := s.Send(context.Background(), SendRequest{To: to(t, "nobody"), Draft: Draft{Text: "hi"}, InboxIfAbsent: true})
	if !errors.As(err, &unknown) || unknown.Target.Agent() != "nobody" {
		t.Errorf("err %v; want an UnknownAgentError for nobody", err)
	}
}

// A known agent with no session (or no tmux at all) gets the message in
// its inbox only when the caller asks for that; otherwise it is not found.
func TestSendToAnAgentWithoutSession(t *testing.T) {
	for _, srv := range []*tmuxtest.Server{tmuxtest.New(), nil} {
		s := testService(t, srv)
		box, _ := s.Store.Box("alpha", "dana") // known: dana has an inbox
		if err := box.Append(mailbox.Envelope{ID: "MSG_X_0000aaaa", From: "x", To: "dana", Type: mailbox.TypeText, Content: "earlier"}); err != nil {
			t.Fatal(err)
		}
		res, err := s.Send(context.Background(), SendRequest{To: to(t, "dana"), Draft: Draft{Text: "hi"}, InboxIfAbsent: true, Delivery: Delivery{Queue: true}})
		if err != nil || res.Verdict != delivery.Recorded {
			t.Errorf("tmux %v: Send = %+v, %v; want recorded", srv != nil, res.Result, err)
		}
	}
	s := testService(t, tmuxtest.New())
	res, err := s.Send(context.Background(), SendRequest{To: to(t, "dana"), Draft: Draft{Text: "hi"}, Delivery: Delivery{Queue: true}})
	if err != nil || res.Verdict != delivery.NotFound {
		t.Errorf("Send = %+v, %v; want not_found", res.Result, err)
	}
}

func TestBroadcast(t *testing.T) {
	srv := tmuxtest.New("agent-alpha-ana", "agent-alpha-bob", "agent-beta-cy")
	srv.SetDialog("agent-alpha-bob", true)
	s := testService(t, srv)
	if _, err := s.Broadcast(context.Background(), BroadcastRequest{Draft: Draft{Text: "hi"}}); !errors.Is(err, ErrNoCallerTeam) {
		t.Fatalf("a broadcast to no team and not all: %v", err)
	}
	res, err := s.Broadcast(context.Background(), BroadcastRequest{Team: "alpha", Draft: Draft{Text: "hi"}, Delivery: Delivery{Queue: true}})
	if err != nil || res.Verdict != courier.SomeDeferred || len(res.Results) != 2 || len(res.Delivered) != 1 || len(res.Deferred) != 1 {
		t.Fatalf("Broadcast = %+v, %v", res, err)
	}
	if len(srv.Received("agent-beta-cy")) != 0 {
		t.Error("another team's agent got the broadcast")
	}
}

func TestReply(t *testing.T) {
	srv := tmuxtest.New("agent-alpha-ana")
	s := testService(t, srv)
	box, _ := s.Store.Box("alpha", "lead")
	orig := message.ID("MSG_ANA_0123abcd")
	if err := box.Append(mailbox.Envelope{ID: orig, From: "ana", To: "lead", Type: mailbox.TypeText, Content: "done?", RequestID: "REQ_LEAD_0123abcd"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reply(context.Background(), ReplyRequest{To: "MSG_BOB_0123abcd", Draft: Draft{Text: "x"}}); !errors.Is(err, mailbox.ErrNoMessage) {
		t.Errorf("a reply to a message not in the inbox: %v", err)
	}
	res, err := s.Reply(context.Background(), ReplyRequest{To: orig, Draft: Draft{Text: "yes"}, Queue: true})
	if err != nil || res.Verdict != delivery.Submitted {
		t.Fatalf("Reply = %+v, %v", res.Result, err)
	}
	b, _ := s.Store.Read("alpha", "ana")
	if len(b.Envelopes) != 1 || b.Envelopes[0].ReplyTo != orig || b.Envelopes[0].RequestID != "REQ_LEAD_0123abcd" {
		t.Errorf("ana's inbox %+v", b.Envelopes)
	}
	// No tmux at all: the sender cannot have a session; recorded only.
	s.Dispatcher = func() (*dispatch.Dispatcher, error) { return nil, tmux.ErrNotInstalled }
	if res, err := s.Reply(context.Background(), ReplyRequest{To: orig, Draft: Draft{Text: "again"}}); err != nil || res.Verdict != delivery.Recorded {
		t.Errorf("Reply without tmux = %+v, %v; want recorded", res.Result, err)
	}
}

// checkedStore is a mailbox in a temp dir that refuses any change of a
// message's state the state machine does not list (mailbox.Transitions).
func checkedStore(t *testing.T) *mailbox.Store {
	t.Helper()
	s := mailbox.New(t.TempDir())
	s.CheckTransitions = true
	return s
}
