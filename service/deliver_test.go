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
	"github.com/agentmsg/agentmsg/tmux/tmuxtest"
)

// deliverService is name of team alpha over srv, with one dispatcher for
// the process (as the front ends cache it) whose ready timeout is ready
// and whose caller's pane is self's ("" for none).
func deliverService(t *testing.T, srv *tmuxtest.Server, name, self string, ready time.Duration) (*Service, *dispatch.Dispatcher) {
	t.Helper()
	s := requestService(t, checkedStore(t), name)
	opts := delivery.DefaultOptions()
	opts.Settle, opts.Poll, opts.ReadyTimeout = time.Millisecond, time.Millisecond, ready
	locks := lock.Dir{Path: t.TempDir()}
	d := &dispatch.Dispatcher{Tmux: srv, Locks: locks, Clock: tmuxtest.Clock{}, Opts: opts, Concurrency: 1}
	if self != "" {
		d.Self = srv.PaneID(self)
	}
	s.Dispatcher = func() (*dispatch.Dispatcher, error) { return d, nil }
	s.Courier = &courier.Courier{Store: s.Store, Locks: locks}
	return s, d
}

// defer_ leaves a message from lead waiting in ana's inbox: her dialog
// keeps it from being typed.
func defer_(t *testing.T, s *Service, srv *tmuxtest.Server) {
	t.Helper()
	srv.SetDialog("agent-alpha-ana", true)
	res, err := s.Send(context.Background(), SendRequest{To: to(t, "ana"), Draft: Draft{Text: "later"}, Delivery: Delivery{Queue: true, Call: dispatch.Call{ReadyTimeout: time.Millisecond}}})
	if err != nil || res.Verdict != delivery.Deferred {
		t.Fatalf("Send = %+v, %v; want deferred", res, err)
	}
}

// asLead is s's team lead, on a pane of its own.
func asLead(s *Service) *Service {
	lead := *s
	lead.Name, lead.Sender = "lead", "LEAD"
	d, _ := s.Dispatcher()
	other := *d
	other.Self = ""
	lead.Dispatcher = func() (*dispatch.Dispatcher, error) { return &other, nil }
	return &lead
}

// A pass types a waiting message once; the next finds nothing.
func TestDeliverTypesAWaitingMessageOnce(t *testing.T) {
	srv := tmuxtest.New("agent-alpha-ana")
	s, _ := deliverService(t, srv, "lead", "", 50*time.Millisecond)
	defer_(t, s, srv)
	srv.SetDialog("agent-alpha-ana", false)
	for i, want := range []int{1, 0} {
		res, err := s.Deliver(context.Background(), DeliverRequest{Team: "alpha"})
		if err != nil || len(res.Typed) != want || res.Delivered() != want {
			t.Fatalf("pass %d: %+v, %v; want %d delivered", i, res, err, want)
		}
	}
	if got := srv.Received("agent-alpha-ana"); len(got) != 1 {
		t.Fatalf("ana received %q; want the message once", got)
	}
}

// The choices of a pass are its own: a short ready timeout and typing into
// the caller's pane hold for that call and leave the process's dispatcher
// as it was (cmd deliver used to set its Self and ReadyTimeout mid-run).
func TestDeliverChoicesArePerCall(t *testing.T) {
	srv := tmuxtest.New("agent-alpha-ana")
	// ana runs deliver herself (her Stop hook), and the dispatcher would
	// wait a minute for a ready agent.
	s, d := deliverService(t, srv, "ana", "agent-alpha-ana", time.Minute)
	lead := asLead(s)
	defer_(t, lead, srv)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := s.Deliver(ctx, DeliverRequest{ReadyTimeout: 10 * time.Millisecond})
	if err != nil || ctx.Err() != nil || len(res.Typed) != 1 || res.Typed[0].Verdict != delivery.Deferred {
		t.Fatalf("a pass with a 10ms ready timeout = %+v, %v (ctx %v); want deferred at once", res, err, ctx.Err())
	}
	srv.SetDialog("agent-alpha-ana", false)
	res, err = s.Deliver(ctx, DeliverRequest{LeaveSelf: true})
	if err != nil || len(res.Typed) != 1 || !errors.Is(res.Typed[0].Err, dispatch.ErrSelf) || len(srv.Received("agent-alpha-ana")) != 0 {
		t.Fatalf("LeaveSelf: %+v, %v; want the caller's own pane left out", res, err)
	}
	if d.Self != srv.PaneID("agent-alpha-ana") || d.Opts.ReadyTimeout != time.Minute {
		t.Fatalf("the shared dispatcher changed: Self %q, ReadyTimeout %v", d.Self, d.Opts.ReadyTimeout)
	}
}

func TestDeliverIntoTheCallersOwnPane(t *testing.T) {
	srv := tmuxtest.New("agent-alpha-ana")
	s, _ := deliverService(t, srv, "ana", "agent-alpha-ana", 50*time.Millisecond)
	lead := asLead(s)
	defer_(t, lead, srv)
	srv.SetDialog("agent-alpha-ana", false)
	res, err := s.Deliver(context.Background(), DeliverRequest{Team: "alpha"})
	if err != nil || res.Delivered() != 1 || len(srv.Received("agent-alpha-ana")) != 1 {
		t.Fatalf("Deliver = %+v, %v; want the message typed into the caller's own pane", res, err)
	}
}

// Expired, unclaimed requests are told to their team once, by the pass.
func TestDeliverRemindsOfExpiredRequestsOnce(t *testing.T) {
	srv := tmuxtest.New("agent-alpha-ana")
	s, _ := deliverService(t, srv, "lead", "", 50*time.Millisecond)
	seed(t, s.Store, "alpha", "ana")
	if err := s.Store.Post("alpha", mailbox.Request{ID: "REQ_0000aaaa", From: "lead", Description: "old job",
		Timeout: time.Minute, Posted: time.Now().Add(-time.Hour)}); err != nil {
		t.Fatal(err)
	}
	for i, want := range []int{1, 0} {
		res, err := s.Deliver(context.Background(), DeliverRequest{})
		if err != nil || len(res.Reminded) != want || res.RemindErr != nil {
			t.Fatalf("pass %d: %+v, %v; want %d reminded", i, res, err, want)
		}
	}
}

func TestDeliverRefuses(t *testing.T) {
	srv := tmuxtest.New("agent-alpha-ana")
	s, _ := deliverService(t, srv, "lead", "", 50*time.Millisecond)
	seed(t, s.Store, "alpha", "ana")
	var nf *TeamNotFoundError
	_, err := s.Deliver(context.Background(), DeliverRequest{Team: "beta"})
	if !errors.As(err, &nf) || nf.Team != "beta" {
		t.Errorf("unknown team: %v; want a TeamNotFoundError", err)
	}
	var pass *PassError
	if errors.As(err, &pass) {
		t.Errorf("a pass that could not start is a PassError: %v", err)
	}
	s.Dispatcher = nil
	if _, err := s.Deliver(context.Background(), DeliverRequest{}); !errors.Is(err, errNoDispatcher) {
		t.Errorf("no tmux: %v", err)
	}
}

// A pass with a limit ends by it, however long its agents may be waited
// for; what it could not type stays waiting.
func TestDeliverEndsAtItsLimit(t *testing.T) {
	srv := tmuxtest.New("agent-alpha-ana")
	s, _ := deliverService(t, srv, "lead", "", time.Minute)
	defer_(t, s, srv)
	start := time.Now()
	res, err := s.Deliver(context.Background(), DeliverRequest{Team: "alpha", Limit: 100 * time.Millisecond})
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("the pass took %s with a limit of 100ms", took)
	}
	var pass *PassError
	if !errors.As(err, &pass) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err %v, want a pass cut short by its limit", err)
	}
	if len(res.Typed) != 1 || res.Typed[0].Verdict != delivery.Deferred || res.Typed[0].State != mailbox.StateDeferred {
		t.Errorf("typed %+v, want the message kept (deferred)", res.Typed)
	}
}

// A pass that takes turns leaves at once when one is at work and another
// waits (that one types what waits now), typing nothing; with the way
// clear it delivers.
func TestDeliverTakesTurns(t *testing.T) {
	srv := tmuxtest.New("agent-alpha-ana")
	s, d := deliverService(t, srv, "lead", "", 50*time.Millisecond)
	defer_(t, s, srv)
	srv.SetDialog("agent-alpha-ana", false)
	c := s.carrier(d)
	atWork, err := c.TakeTurn(context.Background(), "alpha", 0)
	if err != nil {
		t.Fatal(err)
	}
	waiting := make(chan func(), 1)
	go func() {
		// The place in line may be taken for a moment by a pass below;
		// this one keeps asking until it has it.
		for {
			release, err := c.TakeTurn(context.Background(), "alpha", time.Minute)
			var ahead *courier.PassAheadError
			if !errors.As(err, &ahead) {
				waiting <- release
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	var ahead *courier.PassAheadError
	for deadline := time.Now().Add(5 * time.Second); !errors.As(err, &ahead); {
		// Until the waiting one has its place, this pass may take it (and
		// then wait for the one at work only briefly).
		_, err = s.Deliver(context.Background(), DeliverRequest{Team: "alpha", TakeTurns: true, Limit: time.Millisecond})
		if time.Now().After(deadline) {
			t.Fatalf("never told another waits: %v", err)
		}
	}
	if got := srv.Received("agent-alpha-ana"); len(got) != 0 {
		t.Errorf("typed %q while another pass was at work", got)
	}
	atWork()
	(<-waiting)()
	res, err := s.Deliver(context.Background(), DeliverRequest{Team: "alpha", TakeTurns: true, Limit: time.Minute})
	if err != nil || res.Delivered() != 1 {
		t.Errorf("with the way clear: %+v, %v", res, err)
	}
}
