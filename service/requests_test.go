package service

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/delivery"
	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/lock"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
	"github.com/agentmsg/agentmsg/tmux/tmuxtest"
)

// requestService is name of team alpha over a temp mailbox and a fake tmux
// server running sessions (nil: no tmux at all).
func requestService(t *testing.T, store *mailbox.Store, name string, sessions ...string) *Service {
	t.Helper()
	sender, err := message.Sender(name)
	if err != nil {
		t.Fatal(err)
	}
	s := &Service{Team: "alpha", Name: name, Sender: sender, Store: store}
	if sessions != nil {
		srv := tmuxtest.New(sessions...)
		locks := lock.Dir{Path: t.TempDir()}
		s.Dispatcher = func() (*dispatch.Dispatcher, error) {
			return &dispatch.Dispatcher{Tmux: srv, Locks: locks, Clock: tmuxtest.Clock{}, Opts: delivery.DefaultOptions(), Concurrency: 1}, nil
		}
	} else {
		s.Dispatcher = func() (*dispatch.Dispatcher, error) { return nil, errors.New("no tmux here") }
	}
	return s
}

func seed(t *testing.T, store *mailbox.Store, team, to string) {
	t.Helper()
	b, err := store.Box(team, to)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Append(mailbox.Envelope{ID: "MSG_LEAD_0000abcd", From: "lead", To: to, Type: mailbox.TypeText, Content: "hi"}); err != nil {
		t.Fatal(err)
	}
}

// Every other agent of the team is told: an inbox, a board entry or a
// session is enough. The text is cleaned, the timeout clamped.
func TestRequestTellsTheWholeTeam(t *testing.T) {
	store := checkedStore(t)
	seed(t, store, "alpha", "ana")
	if err := store.SetStatus("alpha", "bob", mailbox.Status{State: "working"}); err != nil {
		t.Fatal(err)
	}
	s := requestService(t, store, "lead", "agent-alpha-cy", "agent-alpha-lead", "agent-beta-dan")
	p, err := s.Request(context.Background(), PostRequest{Description: "  review\x1b[31m PR\x00 12 \n", Timeout: 1e6 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(p.Notified, ","); got != "ana,bob,cy" || len(p.Failed) != 0 {
		t.Fatalf("notified %q (failed %v), want ana,bob,cy", got, p.Failed)
	}
	if p.Request.Description != "review PR 12" || p.Request.Timeout != mailbox.MaxRequestTimeout ||
		!p.Expires.Equal(p.Request.Posted.Add(mailbox.MaxRequestTimeout)) || p.Team != "alpha" {
		t.Fatalf("posted %+v", p)
	}
	for _, a := range []string{"ana", "bob", "cy"} {
		batch, err := store.Read("alpha", a)
		if err != nil {
			t.Fatal(err)
		}
		e := batch.Envelopes[len(batch.Envelopes)-1]
		if e.ID != p.MessageID || e.RequestID != p.Request.ID || e.To != mailbox.Broadcast || e.Content != "review PR 12" ||
			e.Delivery == nil || e.Delivery.State != mailbox.StatePending || e.Metadata["expires"] == "" {
			t.Errorf("%s got %+v", a, e)
		}
	}
	if _, err := s.Request(context.Background(), PostRequest{Description: " \x1b[0m "}); !errors.Is(err, ErrEmptyDescription) {
		t.Errorf("empty description: %v", err)
	}
	if _, err := s.Request(context.Background(), PostRequest{Team: "alpah", Description: "x"}); !errors.Is(err, ErrNoTeam) ||
		!strings.Contains(err.Error(), "alpha, beta") {
		t.Errorf("unknown team: %v", err)
	}
	if _, err := (&Service{Store: store}).Request(context.Background(), PostRequest{Description: "x"}); !errors.Is(err, ErrTeamNeeded) {
		t.Errorf("no team: %v", err)
	}
}

// Without tmux the mailbox alone says who is there.
func TestRequestWithoutTmux(t *testing.T) {
	store := checkedStore(t)
	s := requestService(t, store, "lead")
	p, err := s.Request(context.Background(), PostRequest{Description: "x"})
	if err != nil || p.Notified == nil || len(p.Notified) != 0 {
		t.Fatalf("%+v %v", p, err)
	}
}

func TestClaimExactlyOneWinsAndTheRequesterIsTold(t *testing.T) {
	store := checkedStore(t)
	seed(t, store, "alpha", "lead")
	p, err := requestService(t, store, "lead").Request(context.Background(), PostRequest{Description: "one job"})
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"ana", "bob", "cy", "dan", "eve"}
	res := make([]ClaimResult, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, n := range names {
		wg.Go(func() {
			res[i], errs[i] = requestService(t, store, n).Claim(context.Background(), ClaimRequest{RequestID: " " + p.Request.ID})
		})
	}
	wg.Wait()
	winner := ""
	for i := range names {
		var ce *mailbox.ClaimedError
		switch {
		case errs[i] == nil && res[i].Claimed:
			if winner != "" {
				t.Fatalf("two winners: %s and %s", winner, names[i])
			}
			winner = names[i]
		case errors.As(errs[i], &ce) && !res[i].Claimed && res[i].ClaimedBy != "" && res[i].Request.From == "lead":
		default:
			t.Fatalf("%s: %+v %v", names[i], res[i], errs[i])
		}
	}
	batch, _ := store.Read("alpha", "lead")
	e := batch.Envelopes[len(batch.Envelopes)-1]
	if e.Type != mailbox.TypeClaim || e.From != winner || e.RequestID != p.Request.ID || !strings.Contains(e.Content, "claimed by "+winner) {
		t.Fatalf("the requester got %+v", e)
	}
	if _, err := requestService(t, store, "ana").Claim(context.Background(), ClaimRequest{RequestID: "REQ_00000000"}); !errors.Is(err, mailbox.ErrNoRequest) {
		t.Errorf("no such request: %v", err)
	}
}

func TestClaimExpiredAndNudgeOnce(t *testing.T) {
	store := checkedStore(t)
	seed(t, store, "alpha", "ana")
	if err := store.Post("alpha", mailbox.Request{ID: "REQ_0000aaaa", From: "lead", Description: "old job",
		Timeout: time.Minute, Posted: time.Now().Add(-time.Hour)}); err != nil {
		t.Fatal(err)
	}
	c, err := requestService(t, store, "ana").Claim(context.Background(), ClaimRequest{RequestID: "REQ_0000aaaa"})
	if !errors.Is(err, mailbox.ErrExpired) || c.Claimed || c.Expires.IsZero() || c.Request.From != "lead" {
		t.Fatalf("expired claim: %+v %v", c, err)
	}
	lead := requestService(t, store, "lead")
	l, err := lead.Requests(context.Background(), ListRequests{Nudge: true})
	if err != nil || len(l.Nudged) != 1 || len(l.Requests) != 1 || !l.Requests[0].Nudged || l.Requests[0].State != mailbox.RequestExpired {
		t.Fatalf("nudge: %+v %v", l, err)
	}
	l, err = lead.Requests(context.Background(), ListRequests{Nudge: true})
	if err != nil || len(l.Nudged) != 0 {
		t.Fatalf("nudged twice: %+v %v", l, err)
	}
	batch, _ := store.Read("alpha", "ana")
	e := batch.Envelopes[len(batch.Envelopes)-1]
	if e.Metadata[mailbox.MetaNudge] != "expired" || e.From != "lead" || !strings.Contains(e.Content, "expired unclaimed") {
		t.Fatalf("nudge message %+v", e)
	}
}

func TestSetStatusKeepsWhatIsNotGiven(t *testing.T) {
	store := checkedStore(t)
	s := requestService(t, store, "ana")
	str := func(v string) *string { return &v }
	list := func(v ...string) *[]string { return &v }
	if _, err := s.SetStatus(context.Background(), StatusUpdate{Mission: str("ship"), State: str("working"), Next: list("a", "b")}); err != nil {
		t.Fatal(err)
	}
	r, err := s.SetStatus(context.Background(), StatusUpdate{State: str("blocked"), Done: list("c")})
	if err != nil || r.Status.Mission != "ship" || r.Status.State != "blocked" || len(r.Status.Next) != 2 || len(r.Status.Done) != 1 || r.Status.Agent != "ana" {
		t.Fatalf("%+v %v", r, err)
	}
	if _, err := s.SetStatus(context.Background(), StatusUpdate{State: str("sleeping")}); !errors.Is(err, ErrBadState) {
		t.Errorf("bad state: %v", err)
	}
	b, err := requestService(t, store, "lead").Board(context.Background(), "alpha")
	if err != nil || len(b.Agents) != 1 || b.Agents[0].State != "blocked" {
		t.Fatalf("board %+v %v", b, err)
	}
	if _, err := s.Board(context.Background(), "alpah"); !errors.Is(err, ErrNoTeam) {
		t.Errorf("unknown team: %v", err)
	}
}

func TestCleanTeam(t *testing.T) {
	store := checkedStore(t)
	s := requestService(t, store, "ana")
	if r, err := s.CleanTeam(context.Background(), CleanTeam{Team: "alpha"}); err != nil || r.Stored || r.Removed {
		t.Fatalf("empty: %+v %v", r, err)
	}
	seed(t, store, "alpha", "ana")
	seed(t, store, "alpha", "bob")
	r, err := s.CleanTeam(context.Background(), CleanTeam{Team: "alpha", DryRun: true})
	if err != nil || !r.Stored || r.Removed || strings.Join(r.Inboxes, ",") != "ana,bob" {
		t.Fatalf("dry run: %+v %v", r, err)
	}
	if r, err := s.CleanTeam(context.Background(), CleanTeam{Team: "alpha"}); err != nil || !r.Removed {
		t.Fatalf("clean: %+v %v", r, err)
	}
	if teams, _ := store.Teams(); len(teams) != 0 {
		t.Fatalf("left %v", teams)
	}
}
