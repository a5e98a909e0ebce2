package service

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
	"github.com/agentmsg/agentmsg/target"
)

// mailboxSvc is a service for agent name of team alpha over a mailbox in
// a temp dir; the mailbox operations need no tmux.
func mailboxSvc(t *testing.T, name string) *Service {
	t.Helper()
	return &Service{Team: "alpha", Name: name, Store: mailbox.New(t.TempDir())}
}

// as is the same mailbox seen by another caller.
func (s *Service) as(name string) *Service {
	c := *s
	c.Name = name
	return &c
}

// put appends a message from one agent of the service's team to another's
// inbox and returns it.
func put(t *testing.T, s *Service, from, to string, typ mailbox.Type, content string, replyTo message.ID) mailbox.Envelope {
	t.Helper()
	sender, err := message.Sender(from)
	if err != nil {
		t.Fatal(err)
	}
	id, err := message.NewID(sender, nil)
	if err != nil {
		t.Fatal(err)
	}
	env := mailbox.Envelope{ID: id, From: from, To: to, Type: typ, Content: content, ReplyTo: replyTo}
	b, err := s.Store.Box(s.Team, to)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Append(env); err != nil {
		t.Fatal(err)
	}
	return env
}

// unreadIDs is what reader has not read in agent's inbox.
func unreadIDs(t *testing.T, s *Service, agent, reader string) []message.ID {
	t.Helper()
	batch, err := s.Store.Unread(s.Team, agent, reader)
	if err != nil {
		t.Fatal(err)
	}
	var ids []message.ID
	for _, e := range batch.Envelopes {
		ids = append(ids, e.ID)
	}
	return ids
}

func TestWaitTakesAnUnreadMatchAndPassesOnlyIt(t *testing.T) {
	s := mailboxSvc(t, "ana")
	early := put(t, s, "bob", "ana", mailbox.TypeText, "unrelated", "")
	reply := put(t, s, "lead", "ana", mailbox.TypeText, "a reply", "")
	later := put(t, s, "lead", "ana", mailbox.TypeText, "another", "")

	res, err := s.Wait(context.Background(), WaitRequest{Filter: Filter{Sender: "LEAD"}, Timeout: time.Second})
	if err != nil || res.TimedOut || res.Message.ID != reply.ID || res.Left != 2 {
		t.Fatalf("Wait = %+v, %v; want %s with 2 left", res, err, reply.ID)
	}
	// The cursor never passes the unmatched earlier message.
	if got := unreadIDs(t, s, "ana", "ana"); len(got) != 3 || got[0] != early.ID {
		t.Fatalf("unread after a filtered wait: %v", got)
	}
	res, err = s.Wait(context.Background(), WaitRequest{Timeout: time.Second})
	if err != nil || res.Message.ID != early.ID {
		t.Fatalf("unfiltered Wait = %+v, %v", res, err)
	}
	// Only the message shown this time counts as shown: the cursor passed
	// early, and stops before reply (shown by the earlier wait) until an
	// unfiltered read shows it again.
	if got := unreadIDs(t, s, "ana", "ana"); len(got) != 2 || got[0] != reply.ID || got[1] != later.ID {
		t.Fatalf("unread: %v, want %s %s", got, reply.ID, later.ID)
	}
}

func TestWaitIsWokenByAnArrival(t *testing.T) {
	s := mailboxSvc(t, "ana")
	question := put(t, s, "ana", "lead", mailbox.TypeText, "ready?", "")
	done := make(chan WaitResult)
	go func() {
		res, err := s.Wait(context.Background(), WaitRequest{Filter: Filter{ReplyTo: question.ID}, Timeout: 10 * time.Second})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	put(t, s, "lead", "ana", mailbox.TypeText, "not this one", "")
	answer := put(t, s, "lead", "ana", mailbox.TypeText, "yes", question.ID)
	if res := <-done; res.TimedOut || res.Message.ID != answer.ID || res.Left != 1 {
		t.Fatalf("Wait = %+v; want %s, 1 left", res, answer.ID)
	}
}

func TestWaitTimeoutIsAResult(t *testing.T) {
	s := mailboxSvc(t, "ana")
	put(t, s, "bob", "ana", mailbox.TypeText, "not from lead", "")
	res, err := s.Wait(context.Background(), WaitRequest{Filter: Filter{Sender: "lead"}, Timeout: 30 * time.Millisecond})
	if err != nil || !res.TimedOut || res.Message.ID != "" {
		t.Fatalf("Wait = %+v, %v; want timed out", res, err)
	}
	// The caller's own context ending is not a timeout.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	_, err = s.Wait(ctx, WaitRequest{Filter: Filter{Sender: "lead"}})
	if !errors.Is(err, ErrInterrupted) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("interrupted Wait: %v", err)
	}
}

// The CLI refused a type no message can have while MCP waited the whole
// timeout for it: Wait refuses it for both.
func TestWaitRefusesImpossibleFilters(t *testing.T) {
	s := mailboxSvc(t, "ana")
	for _, tc := range []struct {
		fl    Filter
		field string
		is    error
	}{
		{Filter{Type: "Claim!"}, "type", ErrBadType},
		{Filter{ReplyTo: "nope"}, "reply_to", ErrNotMessageID},
		{Filter{Sender: "a;b"}, "sender", target.ErrInvalid},
	} {
		_, err := s.Wait(context.Background(), WaitRequest{Filter: tc.fl, Timeout: time.Hour})
		var fe *FilterError
		if !errors.As(err, &fe) || fe.Field != tc.field || !errors.Is(err, tc.is) {
			t.Errorf("%+v: %v; want a FilterError on %s", tc.fl, err, tc.field)
		}
	}
	if _, err := s.Wait(context.Background(), WaitRequest{Timeout: -time.Second}); err == nil {
		t.Error("a negative timeout was accepted")
	}
	noTeam := s.as("ana")
	noTeam.Team = ""
	if _, err := noTeam.Wait(context.Background(), WaitRequest{Timeout: time.Millisecond}); !errors.Is(err, ErrTeamNeeded) {
		t.Errorf("no team: %v", err)
	}
}

func ids(envs []mailbox.Envelope) []message.ID {
	var out []message.ID
	for _, e := range envs {
		out = append(out, e.ID)
	}
	return out
}

func TestInboxPassesTheCursorOverWhatItReturns(t *testing.T) {
	s := mailboxSvc(t, "ana")
	ctx := context.Background()
	one := put(t, s, "lead", "ana", mailbox.TypeText, "one", "")
	two := put(t, s, "bob", "ana", mailbox.TypeStatus, "two", "")
	three := put(t, s, "bob", "ana", mailbox.TypeText, "three", "")

	// Peek and All leave the cursor alone.
	for _, req := range []InboxRequest{{Peek: true}, {All: true}} {
		res, err := s.Inbox(ctx, req)
		if err != nil || len(res.Messages) != 3 || res.Team != "alpha" || res.Agent != "ana" || res.Reader != "ana" {
			t.Fatalf("Inbox(%+v) = %+v, %v", req, res, err)
		}
	}
	// A filtered read never passes a message it did not return.
	res, err := s.Inbox(ctx, InboxRequest{Filter: Filter{Sender: "bob"}})
	if got := ids(res.Messages); err != nil || len(got) != 2 || got[0] != two.ID || got[1] != three.ID {
		t.Fatalf("--sender bob: %v, %v", got, err)
	}
	if got := unreadIDs(t, s, "ana", "ana"); len(got) != 3 {
		t.Fatalf("the cursor passed lead's message: unread %v", got)
	}
	res, err = s.Inbox(ctx, InboxRequest{})
	if got := ids(res.Messages); err != nil || len(got) != 3 || got[0] != one.ID {
		t.Fatalf("unfiltered: %v, %v", got, err)
	}
	res, err = s.Inbox(ctx, InboxRequest{})
	if err != nil || len(res.Messages) != 0 || res.Messages == nil {
		t.Fatalf("all read: %+v, %v", res.Messages, err)
	}
	// Another reader of the inbox has its own cursor.
	res, err = s.as("lead").Inbox(ctx, InboxRequest{Team: "alpha", Agent: "ana"})
	if err != nil || len(res.Messages) != 3 || res.Reader != "lead" {
		t.Fatalf("lead reading ana's inbox: %+v, %v", res, err)
	}
	if _, err := s.Inbox(ctx, InboxRequest{Filter: Filter{Type: "Text"}}); !errors.Is(err, ErrBadType) {
		t.Errorf("bad type: %v", err)
	}
	noTeam := s.as("ana")
	noTeam.Team = ""
	if _, err := noTeam.Inbox(ctx, InboxRequest{}); !errors.Is(err, ErrTeamNeeded) {
		t.Errorf("no team: %v", err)
	}
}

func TestFollowShowsEachMatchingArrival(t *testing.T) {
	s := mailboxSvc(t, "ana")
	put(t, s, "lead", "ana", mailbox.TypeText, "before", "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res, err := s.Inbox(ctx, InboxRequest{Filter: Filter{Type: mailbox.TypeText}})
	if err != nil || len(res.Messages) != 1 {
		t.Fatalf("Inbox: %+v, %v", res, err)
	}
	got := make(chan mailbox.Envelope)
	done := make(chan error)
	go func() {
		done <- s.Follow(ctx, res, func(e mailbox.Envelope) error { got <- e; return nil })
	}()
	skipped := put(t, s, "bob", "ana", mailbox.TypeStatus, "not shown", "")
	after := put(t, s, "bob", "ana", mailbox.TypeText, "after", "")
	if e := <-got; e.ID != after.ID {
		t.Fatalf("followed %+v, want %s", e, after.ID)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Follow ended with %v", err)
	}
	// The status message was never shown, so it is still unread.
	if u := unreadIDs(t, s, "ana", "ana"); len(u) == 0 || u[0] != skipped.ID {
		t.Fatalf("unread %v, want %s first", u, skipped.ID)
	}
}

func TestReadFindsAMessageInAnyInbox(t *testing.T) {
	s := mailboxSvc(t, "lead")
	put(t, s, "lead", "ana", mailbox.TypeText, "short", "")
	long := put(t, s, "ana", "bob", mailbox.TypeText, "a long text\nof two lines", "")
	got, err := s.Read(context.Background(), long.ID)
	if err != nil || got.Content != long.Content || got.From != "ana" {
		t.Fatalf("Read = %+v, %v", got, err)
	}
	if _, err := s.Read(context.Background(), "MSG_BOB_0000abcd"); !errors.Is(err, mailbox.ErrNoMessage) {
		t.Errorf("a missing message: %v", err)
	}
	if _, err := s.Read(context.Background(), "nope"); !errors.Is(err, ErrNotMessageID) {
		t.Errorf("not an id: %v", err)
	}
}

func TestLogAndHistory(t *testing.T) {
	s := mailboxSvc(t, "lead")
	ctx := context.Background()
	a := put(t, s, "lead", "ana", mailbox.TypeText, "to ana", "")
	b := put(t, s, "ana", "bob", mailbox.TypeText, "to bob", "")
	all, err := s.Log(ctx, LogRequest{})
	if err != nil || len(all.Entries) != 2 || all.Entries[0].ID != a.ID || all.Entries[0].Inbox != "ana" || all.Entries[1].ID != b.ID {
		t.Fatalf("Log = %+v, %v", all, err)
	}
	one, err := s.Log(ctx, LogRequest{Team: "alpha", Agent: "bob"})
	if err != nil || len(one.Entries) != 1 || one.Entries[0].ID != b.ID || one.Entries[0].Team != "alpha" {
		t.Fatalf("Log alpha bob = %+v, %v", one, err)
	}
	h, err := s.History(ctx, LogRequest{}, a.ID)
	if err != nil || len(h) != 1 || h[0].Inbox != "ana" || h[0].Message.ID != a.ID || h[0].Delivery == nil {
		t.Fatalf("History = %+v, %v", h, err)
	}
	if _, err := s.History(ctx, LogRequest{Team: "alpha", Agent: "bob"}, a.ID); !errors.Is(err, mailbox.ErrNoMessage) {
		t.Errorf("History in an inbox without it: %v", err)
	}
}

// A team named must exist: a mistyped one is never read as an empty inbox.
func TestInboxAndLogRefuseAnUnknownTeam(t *testing.T) {
	s := mailboxSvc(t, "ana")
	put(t, s, "lead", "ana", mailbox.TypeText, "hi", "")
	ctx := context.Background()
	if _, err := s.Inbox(ctx, InboxRequest{Team: "alpah", Agent: "ana"}); !errors.Is(err, ErrNoTeam) {
		t.Errorf("Inbox of alpah: %v", err)
	}
	if _, err := s.Log(ctx, LogRequest{Team: "alpah"}); !errors.Is(err, ErrNoTeam) {
		t.Errorf("Log of alpah: %v", err)
	}
	if _, err := s.History(ctx, LogRequest{Team: "alpah"}, "MSG_LEAD_0000abcd"); !errors.Is(err, ErrNoTeam) {
		t.Errorf("History in alpah: %v", err)
	}
	if res, err := s.Inbox(ctx, InboxRequest{Team: "alpha"}); err != nil || len(res.Messages) != 1 {
		t.Errorf("Inbox of alpha, named: %+v, %v", res, err)
	}
}

// putIn is put with the delivery state the inbox records for the message.
func putIn(t *testing.T, s *Service, to, content string, st mailbox.DeliveryState) mailbox.Envelope {
	t.Helper()
	env := put(t, s, "lead", to, mailbox.TypeText, content, "")
	b, err := s.Store.Box(s.Team, to)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.SetDelivery(env.ID, mailbox.Delivery{State: st}); err != nil {
		t.Fatal(err)
	}
	return env
}

func TestInboxListsWhatTheAgentHasNotSeen(t *testing.T) {
	s := mailboxSvc(t, "ana")
	ctx := context.Background()
	submitted := putIn(t, s, "ana", "typed and submitted", mailbox.StateSubmitted)
	queued := putIn(t, s, "ana", "queued behind a turn", mailbox.StateQueued)
	inBox := putIn(t, s, "ana", "typed, in the box", mailbox.StateTyped)
	refused := putIn(t, s, "ana", "refused with exit 4", mailbox.StateFailed)
	deferred := putIn(t, s, "ana", "waits for deliver", mailbox.StateDeferred)
	mailboxOnly := putIn(t, s, "ana", "only to read", mailbox.StateInbox)

	// ana saw in her pane what was typed there; a refused send is its
	// sender's to send again: neither is news to her.
	res, err := s.Inbox(ctx, InboxRequest{})
	if got := ids(res.Messages); err != nil || !slices.Equal(got, []message.ID{deferred.ID, mailboxOnly.ID}) {
		t.Fatalf("ana's inbox lists %v, %v; want only %s and %s", got, err, deferred.ID, mailboxOnly.ID)
	}
	if got := unreadIDs(t, s, "ana", "ana"); len(got) != 0 {
		t.Fatalf("the cursor stopped before messages ana has seen: unread %v", got)
	}
	// Another reader of her inbox saw none of it in a pane of its own,
	// but a refused send is no news to it either.
	res, err = s.as("lead").Inbox(ctx, InboxRequest{Team: "alpha", Agent: "ana"})
	if got := ids(res.Messages); err != nil || !slices.Equal(got, []message.ID{submitted.ID, queued.ID, inBox.ID, deferred.ID, mailboxOnly.ID}) {
		t.Fatalf("lead reading ana's inbox: %v, %v", got, err)
	}
	// --all still shows every message.
	res, err = s.Inbox(ctx, InboxRequest{All: true})
	if err != nil || len(res.Messages) != 6 || res.Messages[3].ID != refused.ID {
		t.Fatalf("--all: %v, %v", ids(res.Messages), err)
	}
}

// arrive appends a message from lead to an inbox of the service's team
// as a deliverer does: with its first delivery record in the same line,
// then each later one.
func arrive(t *testing.T, s *Service, to, content string, records ...mailbox.Delivery) mailbox.Envelope {
	t.Helper()
	id, err := message.NewID("LEAD", nil)
	if err != nil {
		t.Fatal(err)
	}
	env := mailbox.Envelope{ID: id, From: "lead", To: to, Type: mailbox.TypeText, Content: content, Delivery: &records[0]}
	b, err := s.Store.Box(s.Team, to)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Append(env); err != nil {
		t.Fatal(err)
	}
	for _, d := range records[1:] {
		if err := b.SetDelivery(id, d); err != nil {
			t.Fatal(err)
		}
	}
	return env
}

// The delivery records of a message typed into the pane, from the first.
var (
	typing    = mailbox.Delivery{State: mailbox.StateTyping}
	busy      = mailbox.Delivery{State: mailbox.StateTyping, Reason: "busy"} // its deliverer waits for the agent
	pasted    = mailbox.Delivery{State: mailbox.StateTyping, Reached: "pasted"}
	submitted = mailbox.Delivery{State: mailbox.StateSubmitted, Reached: "pressed"}
	deferred  = mailbox.Delivery{State: mailbox.StateDeferred}
	inboxOnly = mailbox.Delivery{State: mailbox.StateInbox}
)

// waitAsync runs s.Wait in the background, for a test to add messages meanwhile.
func waitAsync(s *Service, req WaitRequest) <-chan WaitResult {
	done := make(chan WaitResult, 1)
	go func() {
		res, err := s.Wait(context.Background(), req)
		if err != nil {
			res.Message.Content = "error: " + err.Error()
		}
		done <- res
	}()
	return done
}

// wait returned what was typed into the agent's own pane as news, as
// inbox did before (TestInboxListsWhatTheAgentHasNotSeen): a message
// typed there, already or while it waits, is passed over; one that is
// being typed counts once its delivery ends, and only if the agent did
// not see it. One whose deliverer records that it waits for the agent
// (busy: it runs this wait) is not in the pane, and is news at once.
func TestWaitPassesOverWhatTheAgentHasSeen(t *testing.T) {
	s := mailboxSvc(t, "ana")
	putIn(t, s, "ana", "typed and submitted", mailbox.StateSubmitted)
	putIn(t, s, "ana", "queued behind a turn", mailbox.StateQueued)
	putIn(t, s, "ana", "typed, in the box", mailbox.StateTyped)
	putIn(t, s, "ana", "refused with exit 4", mailbox.StateFailed)
	res, err := s.Wait(context.Background(), WaitRequest{Timeout: 50 * time.Millisecond})
	if err != nil || !res.TimedOut {
		t.Fatalf("Wait = %+v, %v; want timed out: ana saw every message in her pane", res, err)
	}

	done := waitAsync(s, WaitRequest{Timeout: 10 * time.Second})
	arrive(t, s, "ana", "typed while she waits", typing, pasted, submitted)
	mailboxOnly := arrive(t, s, "ana", "only to read", inboxOnly)
	if res := <-done; res.TimedOut || res.Message.ID != mailboxOnly.ID || res.Left != 0 {
		t.Fatalf("Wait = %+v; want %s and nothing left", res, mailboxOnly.ID)
	}
	if got := unreadIDs(t, s, "ana", "ana"); len(got) != 0 {
		t.Fatalf("the cursor stopped before messages ana has seen: unread %v", got)
	}

	// About to be typed, then not taken: kept for deliver, news to her.
	done = waitAsync(s, WaitRequest{Timeout: 10 * time.Second})
	kept := arrive(t, s, "ana", "her box closed", typing, pasted, deferred)
	if res := <-done; res.TimedOut || res.Message.ID != kept.ID || res.Message.Delivery.State != mailbox.StateDeferred {
		t.Fatalf("Wait = %+v; want %s once deferred", res, kept.ID)
	}

	waiting := arrive(t, s, "ana", "she is busy waiting", typing, busy)
	if res, err := s.Wait(context.Background(), WaitRequest{Timeout: 10 * time.Second}); err != nil || res.Message.ID != waiting.ID {
		t.Fatalf("Wait = %+v, %v; want %s, whose sender waits for her", res, err, waiting.ID)
	}
}

// inbox --follow showed each message typed into the agent's own pane; it
// follows the rule of inbox, and another reader of her inbox sees them.
func TestFollowPassesOverWhatTheAgentHasSeen(t *testing.T) {
	s := mailboxSvc(t, "ana")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	follow := func(reader *Service) (<-chan mailbox.Envelope, <-chan error) {
		res, err := reader.Inbox(ctx, InboxRequest{Agent: "ana"})
		if err != nil || len(res.Messages) != 0 {
			t.Fatalf("Inbox: %+v, %v", res, err)
		}
		got, done := make(chan mailbox.Envelope, 10), make(chan error, 1)
		go func() { done <- reader.Follow(ctx, res, func(e mailbox.Envelope) error { got <- e; return nil }) }()
		return got, done
	}
	ana, anaDone := follow(s)
	lead, leadDone := follow(s.as("lead"))
	typed := arrive(t, s, "ana", "typed while she follows", typing, pasted, submitted)
	kept := arrive(t, s, "ana", "her box closed", typing, deferred)
	mailboxOnly := arrive(t, s, "ana", "only to read", inboxOnly)
	for _, want := range []message.ID{kept.ID, mailboxOnly.ID} {
		if e := <-ana; e.ID != want {
			t.Fatalf("ana followed %s (%s), want %s", e.ID, e.Content, want)
		}
	}
	for _, want := range []message.ID{typed.ID, kept.ID, mailboxOnly.ID} {
		if e := <-lead; e.ID != want {
			t.Fatalf("lead followed %s (%s), want %s", e.ID, e.Content, want)
		}
	}
	cancel()
	for _, done := range []<-chan error{anaDone, leadDone} {
		if err := <-done; err != nil {
			t.Fatalf("Follow ended with %v", err)
		}
	}
	select {
	case e := <-ana:
		t.Fatalf("ana followed %s (%s) too", e.ID, e.Content)
	default:
	}
}
