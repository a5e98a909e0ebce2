package courier

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/delivery"
	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/lock"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
	"github.com/agentmsg/agentmsg/profile"
	"github.com/agentmsg/agentmsg/target"
	"github.com/agentmsg/agentmsg/tmux"
	"github.com/agentmsg/agentmsg/tmux/tmuxtest"
)

func newCourier(t *testing.T, sessions ...string) (*Courier, *tmuxtest.Server) {
	t.Helper()
	tm := tmuxtest.New(sessions...)
	opts := delivery.DefaultOptions()
	opts.ReadyTimeout, opts.ConfirmTimeout = 50*time.Millisecond, 500*time.Millisecond
	opts.Settle, opts.Poll = time.Millisecond, time.Millisecond
	locks := lock.Dir{Path: t.TempDir()}
	d := &dispatch.Dispatcher{Tmux: tm, Locks: locks, Clock: tmuxtest.Clock{}, Opts: opts, Concurrency: 4}
	store := mailbox.New(t.TempDir())
	store.CheckTransitions = true
	return &Courier{Store: store, Dispatch: d, Locks: locks}, tm
}

func envelope(t *testing.T, text string) mailbox.Envelope {
	t.Helper()
	id, err := message.NewID("LEAD", nil)
	if err != nil {
		t.Fatal(err)
	}
	return mailbox.Envelope{ID: id, From: "lead", Type: mailbox.TypeText, Content: text}
}

func ana(t *testing.T) target.Target {
	t.Helper()
	tg, err := target.New("alpha", "ana")
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

func state(t *testing.T, c *Courier, id message.ID) mailbox.DeliveryState {
	t.Helper()
	b, err := c.Store.Read("alpha", "ana")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range b.Envelopes {
		if e.ID == id {
			return e.Delivery.State
		}
	}
	t.Fatalf("%s not in the inbox", id)
	return ""
}

func TestSendRecordsThenTypes(t *testing.T) {
	c, tm := newCourier(t, "agent-alpha-ana")
	env := envelope(t, "hello")
	res := c.Send(context.Background(), ana(t), env, Mode{Queue: true})
	if res.Verdict != delivery.Submitted || !res.OK() || res.State != mailbox.StateSubmitted {
		t.Fatalf("result %+v", res)
	}
	if got := tm.Received("agent-alpha-ana"); !slices.Equal(got, []string{string(env.ID) + ": hello"}) {
		t.Errorf("typed %q", got)
	}
	if s := state(t, c, env.ID); s != mailbox.StateSubmitted {
		t.Errorf("inbox says %s", s)
	}
}

// A message with an answer hint is typed with it, in parentheses after
// its text, by a send and by a later deliver alike; one without is typed
// as it is.
func TestHintIsTypedAfterTheText(t *testing.T) {
	c, tm := newCourier(t, "agent-alpha-ana")
	c.Hint = func(e mailbox.Envelope) string {
		if e.Type == mailbox.TypeShutdownRequest {
			return "answer: how"
		}
		return ""
	}
	stop := envelope(t, "stop")
	stop.Type = mailbox.TypeShutdownRequest
	plain := envelope(t, "plain")
	if res := c.Send(context.Background(), ana(t), stop, Mode{Queue: true}); !res.OK() {
		t.Fatalf("send: %+v", res)
	}
	tm.SetDialog("agent-alpha-ana", true)
	later := envelope(t, "later")
	later.Type = mailbox.TypeShutdownRequest
	for _, e := range []mailbox.Envelope{plain, later} {
		if res := c.Send(context.Background(), ana(t), e, Mode{Queue: true}); res.Verdict != delivery.Deferred {
			t.Fatalf("send with the dialog open: %+v", res)
		}
	}
	tm.SetDialog("agent-alpha-ana", false)
	if _, err := c.Deliver(context.Background(), "alpha", dispatch.Call{}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		string(stop.ID) + ": [shutdown-request] stop (answer: how)",
		string(plain.ID) + ": plain",
		string(later.ID) + ": [shutdown-request] later (answer: how)",
	}
	if got := tm.Received("agent-alpha-ana"); !slices.Equal(got, want) {
		t.Errorf("typed %q, want %q", got, want)
	}
}

func TestNotReadyIsDeferredThenDelivered(t *testing.T) {
	c, tm := newCourier(t, "agent-alpha-ana")
	tm.SetDialog("agent-alpha-ana", true)
	env := envelope(t, "later")
	res := c.Send(context.Background(), ana(t), env, Mode{Queue: true})
	if res.Verdict != delivery.Deferred || !res.OK() || res.Err != nil {
		t.Fatalf("result %+v, want deferred", res)
	}
	if done, err := c.Deliver(context.Background(), "", dispatch.Call{}); err != nil || len(done) != 1 || done[0].Verdict != delivery.Deferred {
		t.Fatalf("deliver with the dialog open: %+v, %v", done, err)
	}
	tm.SetDialog("agent-alpha-ana", false)
	done, err := c.Deliver(context.Background(), "alpha", dispatch.Call{})
	if err != nil || len(done) != 1 || done[0].Verdict != delivery.Submitted {
		t.Fatalf("deliver when ready: %+v, %v", done, err)
	}
	if done, _ := c.Deliver(context.Background(), "", dispatch.Call{}); len(done) != 0 {
		t.Errorf("a second pass typed again: %+v", done)
	}
	if got := tm.Received("agent-alpha-ana"); len(got) != 1 {
		t.Errorf("typed %d times: %q", len(got), got)
	}
	if s := state(t, c, env.ID); s != mailbox.StateSubmitted {
		t.Errorf("inbox says %s", s)
	}
}

func TestNoQueueFails(t *testing.T) {
	c, tm := newCourier(t, "agent-alpha-ana")
	tm.SetDialog("agent-alpha-ana", true)
	env := envelope(t, "now")
	res := c.Send(context.Background(), ana(t), env, Mode{})
	if res.Verdict != delivery.NotReady || res.OK() || state(t, c, env.ID) != mailbox.StateFailed {
		t.Fatalf("result %+v, want not ready and recorded failed", res)
	}
}

func TestMailboxOnlyIsNeverTyped(t *testing.T) {
	c, tm := newCourier(t, "agent-alpha-ana")
	env := envelope(t, "read me")
	res := c.Send(context.Background(), ana(t), env, Mode{MailboxOnly: true})
	if res.Verdict != delivery.Recorded || res.State != mailbox.StateInbox {
		t.Fatalf("result %+v", res)
	}
	if done, _ := c.Deliver(context.Background(), "", dispatch.Call{}); len(done) != 0 || len(tm.Received("agent-alpha-ana")) != 0 {
		t.Errorf("deliver typed a mailbox-only message: %+v", done)
	}
}

func TestMissingAgentLeavesNoInbox(t *testing.T) {
	c, _ := newCourier(t, "agent-alpha-ana-2")
	res := c.Send(context.Background(), ana(t), envelope(t, "hi"), Mode{Queue: true})
	if res.Verdict != delivery.NotFound || res.State != "" {
		t.Fatalf("result %+v, want not found and nothing stored", res)
	}
	if _, err := os.Stat(filepath.Join(c.Store.Root, "teams", "alpha", "mailbox", "ana.jsonl")); err == nil {
		t.Error("an inbox was made for a missing agent")
	}
}

func TestTypedShowsTypeAndMetadata(t *testing.T) {
	env := mailbox.Envelope{Type: mailbox.TypeStatus, Content: "tests pass", ReplyTo: "MSG_LEAD_0123abcd",
		Metadata: map[string]string{"state": "complete", "step": "build"}}
	if got, want := Typed(env), "[status] re MSG_LEAD_0123abcd: state=complete step=build tests pass"; got != want {
		t.Errorf("Typed = %q, want %q", got, want)
	}
	if got := Typed(mailbox.Envelope{Type: mailbox.TypeText, Content: "plain"}); got != "plain" {
		t.Errorf("Typed(text) = %q", got)
	}
}

func TestBroadcastRecordsEachTarget(t *testing.T) {
	c, tm := newCourier(t, "agent-alpha-ana", "agent-alpha-bob", "agent-beta-cy")
	tm.SetDialog("agent-alpha-bob", true)
	env := envelope(t, "all hands")
	results, err := c.Broadcast(context.Background(), "alpha", env, Mode{Queue: true})
	if err != nil || len(results) != 2 {
		t.Fatalf("%+v, %v", results, err)
	}
	verdicts := map[string]delivery.Verdict{}
	for _, r := range results {
		verdicts[r.Target.Name] = r.Verdict
	}
	if verdicts["ana"] != delivery.Submitted || verdicts["bob"] != delivery.Deferred {
		t.Errorf("verdicts %v", verdicts)
	}
	for _, name := range []string{"ana", "bob"} {
		b, err := c.Store.Read("alpha", name)
		if err != nil || len(b.Envelopes) != 1 || b.Envelopes[0].To != mailbox.Broadcast {
			t.Errorf("%s's inbox: %+v, %v", name, b.Envelopes, err)
		}
	}
}

// An inbox past Keep and its slack is compacted to Keep by the next send
// or deliver; within the slack it is left as it is.
func TestDeliverCompactsAnOutgrownInbox(t *testing.T) {
	c, _ := newCourier(t, "agent-alpha-ana")
	c.Keep = mailbox.Retention{MaxCount: 20}
	for range 23 {
		if res := c.Send(context.Background(), ana(t), envelope(t, "m"), Mode{Queue: true}); !res.OK() {
			t.Fatal(res.Err)
		}
	}
	// 23 is within Keep and its slack (20 + 3): nothing to do yet.
	if _, err := c.Deliver(context.Background(), "", dispatch.Call{}); err != nil {
		t.Fatal(err)
	}
	if b, err := c.Store.Read("alpha", "ana"); err != nil || len(b.Envelopes) != 23 {
		t.Errorf("within the slack: %d messages, %v; want 23", len(b.Envelopes), err)
	}
	if res := c.Send(context.Background(), ana(t), envelope(t, "m"), Mode{Queue: true}); !res.OK() {
		t.Fatal(res.Err)
	}
	if _, err := c.Deliver(context.Background(), "", dispatch.Call{}); err != nil {
		t.Fatal(err)
	}
	b, err := c.Store.Read("alpha", "ana")
	if err != nil || len(b.Envelopes) != 20 {
		t.Errorf("after compaction: %d messages, %v; want 20", len(b.Envelopes), err)
	}
}

// Mailbox-only messages to an agent that never read its inbox are all
// unread: deliver's compaction keeps every one (issue 10, item 9).
func TestDeliverKeepsMailboxOnlyMessagesNeverRead(t *testing.T) {
	c, _ := newCourier(t, "agent-alpha-ana")
	c.Keep = mailbox.Retention{MaxCount: 2}
	var sent []message.ID
	for range 5 {
		env := envelope(t, "m")
		if res := c.Send(context.Background(), ana(t), env, Mode{MailboxOnly: true}); !res.OK() {
			t.Fatal(res.Err)
		}
		sent = append(sent, env.ID)
	}
	if _, err := c.Deliver(context.Background(), "", dispatch.Call{}); err != nil {
		t.Fatal(err)
	}
	b, err := c.Store.Read("alpha", "ana")
	if err != nil {
		t.Fatal(err)
	}
	var got []message.ID
	for _, e := range b.Envelopes {
		got = append(got, e.ID)
	}
	if !slices.Equal(got, sent) {
		t.Errorf("after deliver: %d of 5 unread messages kept", len(got))
	}
}

// An agent reads in the order messages were sent: a new message never
// overtakes older ones still waiting for it.
func TestOlderMessagesGoFirst(t *testing.T) {
	c, tm := newCourier(t, "agent-alpha-ana")
	tm.SetDialog("agent-alpha-ana", true)
	m1, m2, m3 := envelope(t, "one"), envelope(t, "two"), envelope(t, "three")
	if r := c.Send(context.Background(), ana(t), m1, Mode{Queue: true}); r.Verdict != delivery.Deferred {
		t.Fatalf("m1: %+v", r)
	}
	// Still not ready: m2 waits behind m1 instead of being tried on its
	// own, and says that m1 was tried first and why it still waits.
	r := c.Send(context.Background(), ana(t), m2, Mode{Queue: true})
	if r.Verdict != delivery.Deferred || r.Reason != ReasonBehindOlder || len(r.Older) != 1 || r.Older[0].ID != m1.ID ||
		r.Older[0].Verdict != delivery.Deferred || r.Older[0].Reason != ReasonDialog {
		t.Fatalf("m2: %+v, want deferred behind m1 (tried first: deferred, dialog)", r)
	}
	tm.SetDialog("agent-alpha-ana", false)
	// Ready now: m3's send types m1 and m2 first, and says so.
	r = c.Send(context.Background(), ana(t), m3, Mode{Queue: true})
	if r.Verdict != delivery.Submitted || len(r.Older) != 2 || r.Older[0].ID != m1.ID || r.Older[1].ID != m2.ID ||
		r.Older[0].Verdict != delivery.Submitted || r.Older[1].Verdict != delivery.Submitted {
		t.Fatalf("m3: %+v, want submitted after m1 and m2 (both submitted first)", r)
	}
	want := []string{string(m1.ID) + ": one", string(m2.ID) + ": two", string(m3.ID) + ": three"}
	if got := tm.Received("agent-alpha-ana"); !slices.Equal(got, want) {
		t.Errorf("received %q, want %q", got, want)
	}
}

// A send reads the inbox to keep the order, so it also keeps the inbox to
// its bound: sends alone, with no deliver run, never let it grow past Keep
// and its slack (a tenth), and compact it once per slack, not every time.
func TestSendKeepsTheInboxBounded(t *testing.T) {
	c, _ := newCourier(t, "agent-alpha-ana")
	c.Keep = mailbox.Retention{MaxCount: 20}
	gens := map[string]bool{}
	for range 60 {
		if res := c.Send(context.Background(), ana(t), envelope(t, "m"), Mode{Queue: true}); !res.OK() {
			t.Fatal(res.Err)
		}
		b, err := c.Store.Read("alpha", "ana")
		if err != nil || len(b.Envelopes) > 20+3+1 {
			t.Fatalf("%d messages with keep 20 (%v); want at most 24 (20 kept, a slack of 3, the newest)", len(b.Envelopes), err)
		}
		gens[b.End.Gen] = true
	}
	// 60 sends, one compaction per 4 past the first 24: about 10.
	if n := len(gens) - 1; n < 5 || n > 15 {
		t.Errorf("%d compactions in 60 sends with keep 20, want about 10", n)
	}
}

// hookClock is wall time whose Sleep first tells onSleep how long it is
// asked to sleep: a test stops a delivery at a chosen step with it.
type hookClock struct{ onSleep func(time.Duration) }

func (hookClock) Now() time.Time { return time.Now() }
func (h hookClock) Sleep(ctx context.Context, d time.Duration) error {
	h.onSleep(d)
	return tmuxtest.Clock{}.Sleep(ctx, d)
}

// A send stopped by its caller (SIGINT, SIGTERM, an MCP client gone) is
// recorded as what it is, never as failed: waiting (deferred) when nothing
// was typed, typed when the text waits in the box. Deliver then finishes
// it, exactly once, and so does a later send to the same agent, before its
// own message.
func TestInterruptedSendIsKeptAndFinishedOnce(t *testing.T) {
	const settle = 20 * time.Millisecond
	tests := []struct {
		name   string
		dialog bool // the agent shows a dialog until the send is stopped
		at     time.Duration
		// The result and record of the stopped send.
		verdict delivery.Verdict
		state   mailbox.DeliveryState
		// finish with a later send instead of deliver
		bySend bool
	}{
		{name: "waiting for a dialog to close", dialog: true, at: time.Millisecond, verdict: delivery.Deferred, state: mailbox.StateDeferred},
		{name: "in the settle", at: settle, verdict: delivery.Typed, state: mailbox.StateTyped},
		{name: "in the settle, then another send", at: settle, verdict: delivery.Typed, state: mailbox.StateTyped, bySend: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, tm := newCourier(t, "agent-alpha-ana")
			c.Dispatch.Opts.Settle = settle
			tm.SetDialog("agent-alpha-ana", tt.dialog)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			sleeps := 0
			c.Dispatch.Clock = hookClock{func(d time.Duration) {
				if d == tt.at {
					if sleeps++; sleeps == 3 || tt.at == settle {
						cancel()
					}
				}
			}}
			env := envelope(t, "stopped half way")
			res := c.Send(ctx, ana(t), env, Mode{Queue: true})
			if res.Verdict != tt.verdict || res.State != tt.state || state(t, c, env.ID) != tt.state {
				t.Fatalf("result %s (stored %s, err %v), inbox %s; want %s and %s", res.Verdict, res.State, res.Err, state(t, c, env.ID), tt.verdict, tt.state)
			}
			if !errors.Is(res.Err, delivery.ErrInterrupted) && res.Verdict != delivery.Deferred {
				t.Errorf("err %v, want it to say it was interrupted", res.Err)
			}
			if got := tm.Received("agent-alpha-ana"); len(got) != 0 {
				t.Fatalf("submitted %q before it was finished", got)
			}

			tm.SetDialog("agent-alpha-ana", false)
			c.Dispatch.Clock = tmuxtest.Clock{}
			want := []string{string(env.ID) + ": stopped half way"}
			if tt.bySend {
				next := envelope(t, "next")
				if r := c.Send(context.Background(), ana(t), next, Mode{Queue: true}); r.Verdict != delivery.Submitted {
					t.Fatalf("next send: %+v", r)
				}
				want = append(want, string(next.ID)+": next")
			}
			for range 2 { // a second pass finds nothing left to do
				if _, err := c.Deliver(context.Background(), "", dispatch.Call{}); err != nil {
					t.Fatal(err)
				}
			}
			if got := tm.Received("agent-alpha-ana"); !slices.Equal(got, want) {
				t.Fatalf("received %q, want %q", got, want)
			}
			if s := state(t, c, env.ID); s != mailbox.StateSubmitted {
				t.Errorf("inbox says %s, want submitted", s)
			}
		})
	}
}

// A broadcast stopped mid-way leaves every target's copy kept: typed where
// the text waits in the box, deferred where nothing was typed yet.
func TestInterruptedBroadcastKeepsEveryCopy(t *testing.T) {
	c, tm := newCourier(t, "agent-alpha-ana", "agent-alpha-bob")
	c.Dispatch.Opts.Settle = 20 * time.Millisecond
	tm.SetDialog("agent-alpha-bob", true)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c.Dispatch.Clock = hookClock{func(d time.Duration) {
		if d == 20*time.Millisecond {
			cancel() // ana is in its settle; bob waits for his dialog
		}
	}}
	env := envelope(t, "all hands")
	results, err := c.Broadcast(ctx, "alpha", env, Mode{Queue: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		want := map[string]mailbox.DeliveryState{"ana": mailbox.StateTyped, "bob": mailbox.StateDeferred}[r.Target.Name]
		if r.State != want {
			t.Errorf("%s: %s (stored %s, %v), want stored %s", r.Target.Name, r.Verdict, r.State, r.Err, want)
		}
	}
	tm.SetDialog("agent-alpha-bob", false)
	c.Dispatch.Clock = tmuxtest.Clock{}
	if _, err := c.Deliver(context.Background(), "", dispatch.Call{}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"agent-alpha-ana", "agent-alpha-bob"} {
		if got := tm.Received(s); len(got) != 1 {
			t.Errorf("%s received %q, want the broadcast once", s, got)
		}
	}
}

// A deliverer holding an inbox (another deliver, or one that is stuck)
// makes no one wait past their ready timeout: a send records its message
// deferred behind the older ones, and a deliver pass moves on.
func TestBusyInboxDelivererIsNotWaitedFor(t *testing.T) {
	c, tm := newCourier(t, "agent-alpha-ana")
	tm.SetDialog("agent-alpha-ana", true)
	older := envelope(t, "older")
	if r := c.Send(context.Background(), ana(t), older, Mode{Queue: true}); r.Verdict != delivery.Deferred {
		t.Fatalf("older: %+v", r)
	}
	tm.SetDialog("agent-alpha-ana", false)
	other := lock.Dir{Path: c.Locks.Path, Owner: "agentmsg deliver --watch"}
	unlock, err := other.Named(context.Background(), "deliver-alpha-ana")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	env := envelope(t, "newer")
	res := c.Send(ctx, ana(t), env, Mode{Queue: true})
	if res.Verdict != delivery.Deferred || state(t, c, env.ID) != mailbox.StateDeferred {
		t.Fatalf("send: %+v, want deferred behind the older message", res)
	}
	if done, err := c.Deliver(ctx, "", dispatch.Call{}); err != nil || len(done) != 0 {
		t.Fatalf("deliver with the inbox held: %+v, %v; want it left to its deliverer", done, err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("took %s with a ready timeout of %s", took, c.Dispatch.Opts.ReadyTimeout)
	}
	unlock()
	if _, err := c.Deliver(context.Background(), "", dispatch.Call{}); err != nil {
		t.Fatal(err)
	}
	want := []string{string(older.ID) + ": older", string(env.ID) + ": newer"}
	if got := tm.Received("agent-alpha-ana"); !slices.Equal(got, want) {
		t.Errorf("received %q, want %q", got, want)
	}
}

// fakeServer lets fullDisk embed the fake server without its field name
// hiding the server's Server method.
type fakeServer = tmuxtest.Server

// fullDisk is the fake tmux server of a machine whose disk fills up just
// as the agent is told to submit: the inbox can no longer be written (its
// lock file is made unopenable, which stops root too).
type fullDisk struct {
	*fakeServer
	lockFile string
	full     bool
}

func (f *fullDisk) SendBytes(ctx context.Context, pane string, b ...byte) error {
	if !f.full {
		f.full = true
		if err := fillDisk(f.lockFile); err != nil {
			return err
		}
	}
	return f.fakeServer.SendBytes(ctx, pane, b...)
}

// fillDisk makes an inbox unwritable from now on: its lock file becomes
// a directory, which no one opens for writing, root included.
func fillDisk(lockFile string) error {
	if err := os.Remove(lockFile); err != nil && !os.IsNotExist(err) {
		return err
	}
	return os.Mkdir(lockFile, 0o700)
}

// When the record of the outcome cannot be written, the result says what
// the inbox really holds (typing), is not OK, and says why; a later
// deliver finds the message submitted and does not type it again.
func TestFailedFinalRecordIsReportedAsStored(t *testing.T) {
	c, tm := newCourier(t, "agent-alpha-ana")
	disk := &fullDisk{fakeServer: tm, lockFile: filepath.Join(c.Store.Root, "teams", "alpha", "mailbox", "ana.lock")}
	c.Dispatch.Tmux = disk
	env := envelope(t, "hello")
	res := c.Send(context.Background(), ana(t), env, Mode{Queue: true})
	if res.OK() || res.State != mailbox.StateTyping || res.Verdict != delivery.Submitted {
		t.Fatalf("result %s, stored %s, ok %v, err %v; want submitted, stored typing, not ok", res.Verdict, res.State, res.OK(), res.Err)
	}
	if res.Err == nil || !strings.Contains(res.Err.Error(), "recording that in the inbox failed (it still says typing)") {
		t.Errorf("err %v, want it to say the record failed", res.Err)
	}
	if s := state(t, c, env.ID); s != mailbox.StateTyping {
		t.Fatalf("inbox says %s", s)
	}
	// Space again: deliver finds it submitted, and types nothing.
	if err := os.Remove(disk.lockFile); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Deliver(context.Background(), "", dispatch.Call{}); err != nil {
		t.Fatal(err)
	}
	if s := state(t, c, env.ID); s != mailbox.StateSubmitted {
		t.Errorf("after deliver the inbox says %s, want submitted", s)
	}
	if got := tm.Received("agent-alpha-ana"); len(got) != 1 {
		t.Errorf("received %q, want it once", got)
	}
}

// A request is typed with its REQ_ id, so that the agent can claim what
// it reads; once it is claimed or expired, deliver no longer types it and
// records why (issue 10, item 18). The reminder that a request expired is
// still typed.
func TestDeliverTypesRequestIDsAndSkipsClosedRequests(t *testing.T) {
	c, tm := newCourier(t, "agent-alpha-ana")
	now := time.Now()
	for _, r := range []mailbox.Request{
		{ID: "REQ_0000aaaa", From: "lead", Description: "open job", Posted: now},
		{ID: "REQ_0000bbbb", From: "lead", Description: "taken job", Posted: now},
		{ID: "REQ_0000cccc", From: "lead", Description: "old job", Posted: now.Add(-time.Hour), Timeout: time.Minute},
	} {
		if err := c.Store.Post("alpha", r); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Store.Claim("alpha", "REQ_0000bbbb", "bob"); err != nil {
		t.Fatal(err)
	}
	box, err := c.Store.Box("alpha", "ana")
	if err != nil {
		t.Fatal(err)
	}
	request := func(reqID, text string, meta map[string]string) mailbox.Envelope {
		env := envelope(t, text)
		env.Type, env.RequestID, env.Metadata, env.To = mailbox.TypeRequest, reqID, meta, mailbox.Broadcast
		env.Delivery = &mailbox.Delivery{State: mailbox.StatePending}
		if err := box.Append(env); err != nil {
			t.Fatal(err)
		}
		return env
	}
	open := request("REQ_0000aaaa", "open job", nil)
	taken := request("REQ_0000bbbb", "taken job", nil)
	old := request("REQ_0000cccc", "old job", nil)
	reminder := request("REQ_0000cccc", "Reminder: old job expired", map[string]string{mailbox.MetaNudge: "expired"})

	done, err := c.Deliver(context.Background(), "", dispatch.Call{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		string(open.ID) + ": [request REQ_0000aaaa] open job",
		string(reminder.ID) + ": [request REQ_0000cccc] nudge=expired Reminder: old job expired",
	}
	if got := tm.Received("agent-alpha-ana"); !slices.Equal(got, want) {
		t.Errorf("ana's pane got %q, want %q", got, want)
	}
	for _, tc := range []struct {
		env mailbox.Envelope
		why string
	}{{taken, "claimed by bob"}, {old, "expired unclaimed"}} {
		b, _ := c.Store.Read("alpha", "ana")
		for _, e := range b.Envelopes {
			if e.ID == tc.env.ID && (e.Delivery.State != mailbox.StateSkipped || !strings.Contains(e.Delivery.LastVerdict, tc.why)) {
				t.Errorf("%s is recorded %+v, want skipped: %s", tc.env.Content, e.Delivery, tc.why)
			}
		}
	}
	skipped := 0
	for _, d := range done {
		if d.Verdict == delivery.Skipped {
			skipped++
			if !d.OK() {
				t.Errorf("a skipped request is not a failure: %+v", d)
			}
		}
	}
	if skipped != 2 || len(done) != 4 {
		t.Errorf("deliver reported %d results, %d skipped: %+v", len(done), skipped, done)
	}
	// Nothing is left for a later pass.
	if again, _ := c.Deliver(context.Background(), "", dispatch.Call{}); len(again) != 0 {
		t.Errorf("second pass: %+v", again)
	}
}

// A broadcast follows the same enqueue rule as a send: it never overtakes
// a message deferred to one of its targets. A target whose older messages
// can go now gets them first; one whose older messages still cannot go
// keeps the broadcast behind them.
func TestBroadcastNeverOvertakesADeferredMessage(t *testing.T) {
	c, tm := newCourier(t, "agent-alpha-ana", "agent-alpha-bob", "agent-alpha-cy")
	bob := mustTarget(t, "alpha", "bob")
	cy := mustTarget(t, "alpha", "cy")
	tm.SetDialog("agent-alpha-bob", true)
	tm.SetDialog("agent-alpha-cy", true)
	older := envelope(t, "older to bob")
	if r := c.Send(context.Background(), bob, older, Mode{Queue: true}); r.Verdict != delivery.Deferred {
		t.Fatalf("older: %+v", r)
	}
	olderCy := envelope(t, "older to cy")
	if r := c.Send(context.Background(), cy, olderCy, Mode{Queue: true}); r.Verdict != delivery.Deferred {
		t.Fatalf("older to cy: %+v", r)
	}
	tm.SetDialog("agent-alpha-bob", false) // bob is ready now; cy is not
	all := envelope(t, "to everyone")
	results, err := c.Broadcast(context.Background(), "alpha", all, Mode{Queue: true})
	if err != nil {
		t.Fatal(err)
	}
	verdicts := map[string]delivery.Verdict{}
	for _, r := range results {
		verdicts[r.Target.Agent()] = r.Verdict
	}
	if verdicts["ana"] != delivery.Submitted || verdicts["bob"] != delivery.Submitted || verdicts["cy"] != delivery.Deferred {
		t.Fatalf("verdicts %v: want ana and bob submitted, cy deferred behind its older message", verdicts)
	}
	want := []string{string(older.ID) + ": older to bob", string(all.ID) + ": to everyone"}
	if got := tm.Received("agent-alpha-bob"); !slices.Equal(got, want) {
		t.Errorf("bob received %q, want %q (the older message first)", got, want)
	}
	if got := tm.Received("agent-alpha-cy"); len(got) != 0 {
		t.Errorf("cy received %q while its dialog was open", got)
	}
	tm.SetDialog("agent-alpha-cy", false)
	if _, err := c.Deliver(context.Background(), "", dispatch.Call{}); err != nil {
		t.Fatal(err)
	}
	want = []string{string(olderCy.ID) + ": older to cy", string(all.ID) + ": to everyone"}
	if got := tm.Received("agent-alpha-cy"); !slices.Equal(got, want) {
		t.Errorf("cy received %q, want %q (in order, once)", got, want)
	}
}

// A broadcast says, per target, which older messages it tried first and
// what became of each, as a send does: bob's was typed before it, cy's
// still waits (and so does the broadcast, behind it); ana had none.
func TestBroadcastSaysWhichOlderMessagesWentFirst(t *testing.T) {
	c, tm := newCourier(t, "agent-alpha-ana", "agent-alpha-bob", "agent-alpha-cy")
	tm.SetDialog("agent-alpha-bob", true)
	tm.SetDialog("agent-alpha-cy", true)
	older, olderCy := envelope(t, "older to bob"), envelope(t, "older to cy")
	for _, m := range []struct {
		to  string
		env mailbox.Envelope
	}{{"bob", older}, {"cy", olderCy}} {
		if r := c.Send(context.Background(), mustTarget(t, "alpha", m.to), m.env, Mode{Queue: true}); r.Verdict != delivery.Deferred {
			t.Fatalf("older to %s: %+v", m.to, r)
		}
	}
	tm.SetDialog("agent-alpha-bob", false)
	results, err := c.Broadcast(context.Background(), "alpha", envelope(t, "to everyone"), Mode{Queue: true})
	if err != nil {
		t.Fatal(err)
	}
	olderOf := map[string][]Result{}
	for _, r := range results {
		olderOf[r.Target.Agent()] = r.Older
	}
	if o := olderOf["bob"]; len(o) != 1 || o[0].ID != older.ID || o[0].Verdict != delivery.Submitted {
		t.Errorf("bob's older messages: %+v, want %s submitted", o, older.ID)
	}
	if o := olderOf["cy"]; len(o) != 1 || o[0].ID != olderCy.ID || o[0].Verdict != delivery.Deferred || o[0].Reason != ReasonDialog {
		t.Errorf("cy's older messages: %+v, want %s deferred (dialog)", o, olderCy.ID)
	}
	if o := olderOf["ana"]; len(o) != 0 {
		t.Errorf("ana had no older message, got %+v", o)
	}
}

func mustTarget(t *testing.T, team, name string) target.Target {
	t.Helper()
	tg, err := target.New(team, name)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

// Past keep_age a send compacts the seen messages away, however few; a
// message that still waits is older but never counts (every send would
// compact in vain).
func TestSendDropsExpiredMessages(t *testing.T) {
	c, _ := newCourier(t, "agent-alpha-ana")
	c.Keep = mailbox.Retention{MaxCount: 1000, MaxAge: 24 * time.Hour}
	now := time.Now()
	c.Now = func() time.Time { return now }
	// A message that waits (mailbox-only, never typed) and three that
	// arrive, all two days old.
	old := envelope(t, "waits")
	old.Timestamp = now.Add(-48 * time.Hour)
	if res := c.Send(context.Background(), ana(t), old, Mode{MailboxOnly: true}); !res.OK() && res.Verdict != delivery.Recorded {
		t.Fatal(res.Err)
	}
	for range 3 {
		e := envelope(t, "seen")
		e.Timestamp = now.Add(-48 * time.Hour)
		if res := c.Send(context.Background(), ana(t), e, Mode{Queue: true}); !res.OK() {
			t.Fatal(res.Err)
		}
	}
	// The next send finds them past keep_age: the three seen ones go.
	if res := c.Send(context.Background(), ana(t), envelope(t, "now"), Mode{Queue: true}); !res.OK() {
		t.Fatal(res.Err)
	}
	b, err := c.Store.Read("alpha", "ana")
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, e := range b.Envelopes {
		left = append(left, e.Content)
	}
	if strings.Join(left, ",") != "waits,now" {
		t.Errorf("left %q, want the waiting message and the newest", left)
	}
	gen := b.End.Gen
	for range 3 {
		if res := c.Send(context.Background(), ana(t), envelope(t, "more"), Mode{Queue: true}); !res.OK() {
			t.Fatal(res.Err)
		}
	}
	if b, _ := c.Store.Read("alpha", "ana"); b.End.Gen != gen {
		t.Errorf("the inbox was compacted again for a message that waits")
	}
}

func (f *fullDisk) Pinned(tmux.Pane) tmux.Client { return f }

// A pass works on every inbox at once: an agent that stays in a dialog
// holds up its own messages only. The ready agent, whose inbox comes last,
// has its message before the first stuck agent's wait ends, and the
// results still come in the order of the inboxes.
func TestDeliverPassIsNotHeldUpByStuckAgents(t *testing.T) {
	const stuck = 20
	var sessions []string
	for i := range stuck {
		sessions = append(sessions, fmt.Sprintf("agent-alpha-s%02d", i))
	}
	sessions = append(sessions, "agent-alpha-zz")
	c, tm := newCourier(t, sessions...)
	for _, s := range sessions {
		tm.SetDialog(s, true)
		tg, _ := target.FromSession(s)
		if r := c.Send(context.Background(), tg, envelope(t, "for "+s), Mode{Queue: true}); r.Verdict != delivery.Deferred {
			t.Fatalf("%s: %+v, want deferred", s, r)
		}
	}
	tm.SetDialog("agent-alpha-zz", false)

	const wait = 2 * time.Second // each stuck agent's
	type pass struct {
		done []Typing
		err  error
	}
	ended := make(chan pass, 1)
	start := time.Now()
	go func() {
		done, err := c.Deliver(context.Background(), "alpha", dispatch.Call{ReadyTimeout: wait})
		ended <- pass{done, err}
	}()
	for len(tm.Received("agent-alpha-zz")) == 0 {
		if time.Since(start) > wait {
			t.Fatalf("the ready agent had nothing when the first stuck agent's wait ended")
		}
		time.Sleep(time.Millisecond)
	}
	p := <-ended
	if p.err != nil {
		t.Fatal(p.err)
	}
	var got []string
	for _, d := range p.done {
		got = append(got, d.Target.Session+" "+string(d.Verdict))
	}
	var want []string
	for _, s := range sessions[:stuck] {
		want = append(want, s+" deferred")
	}
	want = append(want, "agent-alpha-zz submitted")
	if !slices.Equal(got, want) {
		t.Errorf("results\n%q\nwant\n%q", got, want)
	}
}

// Passes that take turns: one at work, one waiting, and any more leave at
// once, naming the one that waits (it reads the inboxes after them). Each
// team of each server has its own turns.
func TestPassesTakeTurns(t *testing.T) {
	c, _ := newCourier(t, "agent-alpha-ana")
	ctx := context.Background()
	first, err := c.TakeTurn(ctx, "alpha", 0)
	if err != nil {
		t.Fatal(err)
	}
	type turn struct {
		release func()
		err     error
	}
	second := make(chan turn, 1)
	go func() {
		release, err := c.TakeTurn(ctx, "alpha", 10*time.Second)
		second <- turn{release, err}
	}()
	line := filepath.Join(c.Locks.Path, "named-pass-next-"+passKey("/fake/sock", "alpha")+".lock")
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		if b, _ := os.ReadFile(line); len(b) > 0 {
			break // the second one's claim: it waits in line
		}
		if time.Now().After(deadline) {
			t.Fatal("the second pass never took its place in line")
		}
	}
	_, err = c.TakeTurn(ctx, "alpha", 10*time.Second)
	var ahead *PassAheadError
	if !errors.As(err, &ahead) || ahead.Waiting == nil || ahead.Waiting.PID != os.Getpid() || ahead.Team != "alpha" {
		t.Fatalf("a third pass: %v, want PassAheadError naming the waiting one", err)
	}
	if !strings.Contains(err.Error(), "waits to deliver to team alpha after the pass at work") {
		t.Errorf("error %q", err)
	}
	// Other teams, every team, and the same team on another server do not wait.
	other := *c
	other.Dispatch = &dispatch.Dispatcher{Tmux: otherSocket{c.Dispatch.Tmux}, Locks: c.Dispatch.Locks, Clock: c.Dispatch.Clock, Opts: c.Dispatch.Opts}
	for name, take := range map[string]func() (func(), error){
		"team beta":               func() (func(), error) { return c.TakeTurn(ctx, "beta", time.Millisecond) },
		"every team":              func() (func(), error) { return c.TakeTurn(ctx, "", time.Millisecond) },
		"alpha on another server": func() (func(), error) { return other.TakeTurn(ctx, "alpha", time.Millisecond) },
	} {
		release, err := take()
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		release()
	}
	first()
	got := <-second
	if got.err != nil {
		t.Fatalf("the waiting pass: %v", got.err)
	}
	// A waiter that runs out of time says who is at work, and leaves the
	// line to the next.
	_, err = c.TakeTurn(ctx, "alpha", 20*time.Millisecond)
	var held *lock.HeldError
	if !errors.As(err, &held) || errors.As(err, &ahead) {
		t.Errorf("waiting past its time: %v, want the pass at work named", err)
	}
	release, err := c.TakeTurn(ctx, "alpha", time.Millisecond)
	if err == nil {
		release()
	}
	if errors.As(err, &ahead) {
		t.Errorf("the line was not left: %v", err)
	}
	got.release()
}

// otherSocket is a tmux client of another server.
type otherSocket struct{ tmux.Client }

func (otherSocket) Server() tmux.Server { return tmux.Server{Socket: "/other/sock"} }

// A typist that died after its paste leaves its message in the box and
// recorded as typing, behind older messages that wait: deliver submits
// the one in the box first, then types the older ones. Before, the older
// ones waited for an empty box for ever and the one in the box behind them
// (found by the daemon chaos test: 859 of 1,008 messages never delivered).
func TestDeliverFinishesTheMessageInTheBoxFirst(t *testing.T) {
	c, tm := newCourier(t, "agent-alpha-ana")
	older := envelope(t, "older, waiting")
	older.To = "ana"
	older.Delivery = &mailbox.Delivery{State: mailbox.StateDeferred}
	inBox := envelope(t, "pasted by a sender that died")
	inBox.To = "ana"
	inBox.Delivery = &mailbox.Delivery{State: mailbox.StateTyping, Attempts: 1}
	box, err := c.Store.Box("alpha", "ana")
	if err != nil {
		t.Fatal(err)
	}
	for _, env := range []mailbox.Envelope{older, inBox} {
		if err := box.Append(env); err != nil {
			t.Fatal(err)
		}
	}
	if err := box.SetDelivery(inBox.ID, mailbox.Delivery{State: mailbox.StateTyping, Attempts: 1, Reached: "pasted"}); err != nil {
		t.Fatal(err)
	}
	if err := tm.Paste(context.Background(), tm.PaneID("agent-alpha-ana"), message.Format(inBox.ID, inBox.Content)); err != nil {
		t.Fatal(err)
	}
	done, err := c.Deliver(context.Background(), "alpha", dispatch.Call{})
	if err != nil {
		t.Fatal(err)
	}
	got := tm.Received("agent-alpha-ana")
	want := []string{message.Format(inBox.ID, inBox.Content), message.Format(older.ID, older.Content)}
	if !slices.Equal(got, want) || len(done) != 2 {
		t.Fatalf("ana received %q (pass: %+v); want the one in the box, then the older one", got, done)
	}
}

// fullBeforePaste fills the disk at the first look at the pane: after the
// message is recorded as typing, before its first step can be.
type fullBeforePaste struct {
	*fakeServer
	lockFile string
	inbox    string // once it exists, the message is recorded
	full     bool
}

func (f *fullBeforePaste) Pinned(tmux.Pane) tmux.Client { return f }

func (f *fullBeforePaste) Capture(ctx context.Context, pane string, lines int) ([]string, error) {
	if _, err := os.Stat(f.inbox); err == nil && !f.full {
		f.full = true
		if err := fillDisk(f.lockFile); err != nil {
			return nil, err
		}
	}
	return f.fakeServer.Capture(ctx, pane, lines)
}

// A send that typed nothing and could record neither its step nor its
// failure (a full disk) leaves the message kept as typing: it says so,
// deferred and not OK, never failed; the next deliver types it once
// (e2e/chaos, seed 962481: the sender said failed, and deliver later
// typed it).
func TestNothingTypedAndNothingRecordedIsKeptNotFailed(t *testing.T) {
	c, tm := newCourier(t, "agent-alpha-ana")
	dir := filepath.Join(c.Store.Root, "teams", "alpha", "mailbox")
	disk := &fullBeforePaste{fakeServer: tm, lockFile: filepath.Join(dir, "ana.lock"), inbox: filepath.Join(dir, "ana.jsonl")}
	c.Dispatch.Tmux = disk
	env := envelope(t, "hello")
	res := c.Send(context.Background(), ana(t), env, Mode{Queue: true})
	if res.Verdict != delivery.Deferred || res.State != mailbox.StateTyping || res.RecordErr == nil || res.Typings != 0 {
		t.Fatalf("result %s, stored %s, typings %d, err %v; want deferred, stored typing, its record's error", res.Verdict, res.State, res.Typings, res.Err)
	}
	if !strings.Contains(res.Err.Error(), "the next deliver types it") {
		t.Errorf("err %v, want it to say what becomes of the message", res.Err)
	}
	if got := tm.Received("agent-alpha-ana"); len(got) != 0 {
		t.Fatalf("received %q before deliver", got)
	}
	if err := os.Remove(disk.lockFile); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Deliver(context.Background(), "", dispatch.Call{}); err != nil {
		t.Fatal(err)
	}
	if s := state(t, c, env.ID); s != mailbox.StateSubmitted {
		t.Errorf("after deliver the inbox says %s, want submitted", s)
	}
	if got := tm.Received("agent-alpha-ana"); len(got) != 1 {
		t.Errorf("received %q, want it once", got)
	}
}

// Older messages are waited for as long as the sender's own would be: a
// send with a 10ms ready timeout behind an agent in a dialog gave up on
// the older one after the default instead (30s outside the tests).
func TestOlderMessagesAreWaitedForAsLongAsTheSendersOwn(t *testing.T) {
	c, tm := newCourier(t, "agent-alpha-ana")
	c.Dispatch.Opts.ReadyTimeout = 5 * time.Second
	tm.SetDialog("agent-alpha-ana", true)
	short := Mode{Queue: true, Call: dispatch.Call{ReadyTimeout: 10 * time.Millisecond}}
	if r := c.Send(context.Background(), ana(t), envelope(t, "one"), short); r.Verdict != delivery.Deferred {
		t.Fatalf("m1: %+v", r)
	}
	r := c.Send(context.Background(), ana(t), envelope(t, "two"), short)
	if len(r.Older) != 1 || r.Older[0].Verdict != delivery.Deferred {
		t.Fatalf("m2: %+v, want the older one tried first and deferred", r)
	}
	// Far from either bound: the default is 500 times the sender's.
	if waited := r.Older[0].Elapsed; waited >= c.Dispatch.Opts.ReadyTimeout/2 {
		t.Errorf("the older one was waited for %s, want about 10ms, as the sender asked", waited)
	}
}

// While a send waits for its agent, the message's typing record says why
// (a reader waiting for news takes it at once: nothing of it is in the
// pane); the steps of typing it, once the agent is ready, replace that.
// A send to a ready agent records no wait.
func TestASendThatWaitsForItsAgentRecordsWhy(t *testing.T) {
	c, tm := newCourier(t, "agent-alpha-ana")
	c.Dispatch.Opts.ReadyTimeout = time.Minute
	tm.SetDialog("agent-alpha-ana", true)
	msg := envelope(t, "while the dialog is open")
	sent := make(chan Result, 1)
	go func() { sent <- c.Send(context.Background(), ana(t), msg, Mode{Queue: true}) }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	e, err := c.Store.WaitSettled(ctx, "alpha", "ana", func(e mailbox.Envelope) bool { return e.ID == msg.ID }, mailbox.Position{})
	if err != nil || e.Delivery.State != mailbox.StateTyping || e.Delivery.Reason != ReasonDialog || e.Delivery.Reached != "" {
		t.Fatalf("while the send waits: %+v, %v; want typing, reason dialog, nothing reached", e.Delivery, err)
	}
	tm.SetDialog("agent-alpha-ana", false)
	if r := <-sent; r.Verdict != delivery.Submitted {
		t.Fatalf("send: %+v", r)
	}
	ready := envelope(t, "to a ready agent")
	if r := c.Send(context.Background(), ana(t), ready, Mode{Queue: true}); r.Verdict != delivery.Submitted {
		t.Fatalf("send: %+v", r)
	}
	_, history, err := c.Store.History("alpha", "ana", ready.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range history {
		if d.Reason != "" {
			t.Errorf("a send to a ready agent recorded %+v", d)
		}
	}
}

// countingTmux counts the looks-up of a session's panes, and can end a
// session the moment a number of looks at it have been taken since the
// agent got its first message.
type countingTmux struct {
	*fakeServer
	mu            sync.Mutex
	lookups       int
	killAfter     int // end the session at this capture after the first message (0: never)
	capturesSince int
}

func (c *countingTmux) SessionPanes(ctx context.Context, session string) ([]tmux.Pane, error) {
	c.mu.Lock()
	c.lookups++
	c.mu.Unlock()
	return c.fakeServer.SessionPanes(ctx, session)
}

func (c *countingTmux) Pinned(tmux.Pane) tmux.Client { return c }

func (c *countingTmux) Capture(ctx context.Context, id string, history int) ([]string, error) {
	c.mu.Lock()
	if c.killAfter > 0 && len(c.Received("agent-alpha-ana")) > 0 {
		if c.capturesSince++; c.capturesSince == c.killAfter {
			_ = c.KillSession(ctx, "agent-alpha-ana")
		}
	}
	c.mu.Unlock()
	return c.fakeServer.Capture(ctx, id, history)
}

// queueThree keeps three messages for ana while a dialog is open, then
// closes it.
func queueThree(t *testing.T, c *Courier, tm *tmuxtest.Server) []message.ID {
	t.Helper()
	tm.SetDialog("agent-alpha-ana", true)
	var ids []message.ID
	for i := range 3 {
		env := envelope(t, fmt.Sprint("queued ", i))
		if res := c.Send(context.Background(), ana(t), env, Mode{Queue: true}); res.Verdict != delivery.Deferred {
			t.Fatalf("send %d: %+v", i, res)
		}
		ids = append(ids, env.ID)
	}
	tm.SetDialog("agent-alpha-ana", false)
	return ids
}

// A pass finds an agent's pane once, for its first message: the next ones
// go to the pane the last one was typed into (dispatch.Again), and the
// last look of one stands as the first look of the next.
func TestPassFindsThePaneOncePerInbox(t *testing.T) {
	c, tm := newCourier(t, "agent-alpha-ana")
	queueThree(t, c, tm)
	counting := &countingTmux{fakeServer: tm}
	c.Dispatch.Tmux = counting
	done, err := c.Deliver(context.Background(), "", dispatch.Call{})
	if err != nil || len(done) != 3 {
		t.Fatalf("deliver: %+v, %v", done, err)
	}
	for _, d := range done {
		if d.Verdict != delivery.Submitted {
			t.Fatalf("deliver: %+v", done)
		}
	}
	if got := tm.Received("agent-alpha-ana"); len(got) != 3 {
		t.Errorf("typed %q", got)
	}
	if counting.lookups != 1 {
		t.Errorf("the pass looked the session's panes up %d times for 3 messages, want 1", counting.lookups)
	}
}

// The pane the last message went to ends before the next one: the next is
// not typed (its first look finds no pane), waits, and goes to the agent's
// new pane in the next pass, once, with the one after it.
func TestPassStopsAtAPaneGoneBetweenMessages(t *testing.T) {
	c, tm := newCourier(t, "agent-alpha-ana")
	ids := queueThree(t, c, tm)
	counting := &countingTmux{fakeServer: tm, killAfter: 2} // the first message's proof, then the next one's first look
	c.Dispatch.Tmux = counting
	done, err := c.Deliver(context.Background(), "", dispatch.Call{})
	if err != nil || len(done) != 2 || done[0].Verdict != delivery.Submitted || done[1].Verdict != delivery.Deferred {
		t.Fatalf("deliver: %+v, %v", done, err)
	}
	if s := state(t, c, ids[1]); s != mailbox.StateDeferred && s != mailbox.StatePending {
		t.Errorf("the second message is %s", s)
	}
	if _, _, err := tm.NewSession(context.Background(), "agent-alpha-ana", "", nil, nil); err != nil {
		t.Fatal(err)
	}
	counting.killAfter = 0
	done, err = c.Deliver(context.Background(), "", dispatch.Call{})
	if err != nil || len(done) != 2 || done[0].Verdict != delivery.Submitted || done[1].Verdict != delivery.Submitted {
		t.Fatalf("deliver to the new pane: %+v, %v", done, err)
	}
	if got := tm.Received("agent-alpha-ana"); len(got) != 2 || !strings.Contains(got[0], string(ids[1])) || !strings.Contains(got[1], string(ids[2])) {
		t.Errorf("the new pane got %q", got)
	}
}

// A message recorded with its sender's choices (one from another host) is
// typed by a pass as that sender asked. With no_queue, an agent not ready
// by its Until fails it; a pass that stops before it (an older message
// waits) keeps it until then and fails it after; one an attempt may have
// typed is never failed. One asking for a profile this host lacks fails,
// and the next goes on. The pass's own messages are kept as always.
func TestPassTypesAsItsSenderAsked(t *testing.T) {
	c, tm := newCourier(t, "agent-alpha-ana")
	now := time.Now()
	c.Now = func() time.Time { return now }
	c.Dispatch.Named = func(name string) (profile.Profile, error) {
		return profile.Profile{}, fmt.Errorf("no profile %q", name)
	}
	box, err := c.Store.Box("alpha", "ana")
	if err != nil {
		t.Fatal(err)
	}
	record := func(text string, asked *mailbox.Asked, d mailbox.Delivery) message.ID {
		env := envelope(t, text)
		env.To, env.Asked, env.Delivery = "ana", asked, &d
		if err := box.Append(env); err != nil {
			t.Fatal(err)
		}
		return env.ID
	}
	pending := mailbox.Delivery{State: mailbox.StatePending}
	first := record("now or never", &mailbox.Asked{NoQueue: true, Until: now.Add(20 * time.Millisecond)}, pending)
	tm.SetDialog("agent-alpha-ana", true)
	done, err := c.Deliver(context.Background(), "alpha", dispatch.Call{})
	if err != nil || len(done) != 1 || done[0].Verdict != delivery.NotReady || !errors.Is(done[0].Err, delivery.ErrNotReady) {
		t.Fatalf("pass with the dialog open: %+v, %v; want not ready", done, err)
	}

	// Time left: the pass waits for it no longer than for any other, and
	// keeps it.
	later := &mailbox.Asked{NoQueue: true, Until: now.Add(time.Hour)}
	patient := record("in the next hour", later, pending)
	start := time.Now()
	done, err = c.Deliver(context.Background(), "alpha", dispatch.Call{})
	if err != nil || len(done) != 1 || done[0].Verdict != delivery.Deferred || time.Since(start) > time.Second {
		t.Fatalf("pass with the dialog open, an hour left: %+v, %v after %s; want deferred at the pass's own timeout", done, err, time.Since(start))
	}
	kept := record("when you can", nil, pending)
	behind := record("behind it, never", later, pending)
	resumed := record("maybe in the box", later, mailbox.Delivery{State: mailbox.StateTyping, Attempts: 1, Reached: "pasted"})
	done, err = c.Deliver(context.Background(), "alpha", dispatch.Call{})
	if err != nil || len(done) != 1 || done[0].ID != patient || done[0].Verdict != delivery.Deferred {
		t.Fatalf("pass behind a deferred message, time left: %+v, %v; want only the older one, deferred", done, err)
	}
	if s := state(t, c, behind); s != mailbox.StatePending {
		t.Fatalf("with time left, the --no-queue message behind should wait, inbox says %s", s)
	}
	now = now.Add(2 * time.Hour)
	done, err = c.Deliver(context.Background(), "alpha", dispatch.Call{})
	if err != nil || len(done) != 3 || done[0].ID != patient || done[0].Verdict != delivery.NotReady || done[1].ID != kept || done[1].Verdict != delivery.Deferred ||
		done[2].ID != behind || done[2].Verdict != delivery.NotReady || done[2].Reason != ReasonBehindOlder {
		t.Fatalf("pass behind a deferred message, time up: %+v, %v; want the first failed at once, the older one deferred, then the one behind not ready behind older", done, err)
	}

	strange := record("as a stranger", &mailbox.Asked{Agent: "nosuch"}, pending)
	tm.SetDialog("agent-alpha-ana", false)
	if _, err := c.Deliver(context.Background(), "alpha", dispatch.Call{}); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[message.ID]mailbox.DeliveryState{first: mailbox.StateFailed, patient: mailbox.StateFailed, behind: mailbox.StateFailed, kept: mailbox.StateSubmitted, strange: mailbox.StateFailed} {
		if got := state(t, c, id); got != want {
			t.Errorf("%s: inbox says %s, want %s", id, got, want)
		}
	}
	if got := state(t, c, resumed); got == mailbox.StateFailed {
		t.Errorf("a --no-queue message an attempt may have typed was failed")
	}
	for _, got := range tm.Received("agent-alpha-ana") {
		for _, never := range []message.ID{first, patient, behind, strange} {
			if strings.Contains(got, string(never)) {
				t.Errorf("typed %q", got)
			}
		}
	}
}

// listCounter counts the listings of the whole server a pass makes.
type listCounter struct {
	tmux.Client
	lists atomic.Int32
}

func (l *listCounter) ListPanes(ctx context.Context) ([]tmux.Pane, error) {
	l.lists.Add(1)
	return l.Client.ListPanes(ctx)
}

// A pass starts from what its caller knew of the server a moment ago (a
// receiver of another host's message): an agent it names needs no listing
// of the server; one it does not name is looked for in one listing, never
// passed over (a new agent); and a whole listing that did not find an
// agent leaves its message waiting, with no listing of the pass's own.
func TestAPassStartsFromWhatItsCallerKnew(t *testing.T) {
	c, tm := newCourier(t, "agent-alpha-ana", "agent-alpha-bob")
	lc := &listCounter{Client: tm}
	c.Dispatch.Tmux = lc
	ctx := context.Background()
	bob := mustTarget(t, "alpha", "bob")
	kept := func(to target.Target, session string) {
		t.Helper()
		tm.SetDialog(session, true)
		if res := c.Send(ctx, to, envelope(t, "for "+session), Mode{Queue: true}); res.Verdict != delivery.Deferred {
			t.Fatalf("send to %s behind a dialog: %+v, want deferred", session, res)
		}
		tm.SetDialog(session, false)
	}
	pass := func(known Listing, wantLists int32, want ...string) { // wantLists -1: any
		t.Helper()
		lc.lists.Store(0)
		done, err := c.DeliverListed(ctx, "alpha", dispatch.Call{}, known)
		if err != nil {
			t.Fatal(err)
		}
		var typed []string
		for _, d := range done {
			if d.Verdict == delivery.Submitted {
				typed = append(typed, d.Agent)
			}
		}
		slices.Sort(typed)
		if !slices.Equal(typed, want) || wantLists >= 0 && lc.lists.Load() != wantLists {
			t.Errorf("pass knowing %+v: typed to %v with %d listings, want %v with %d", known, typed, lc.lists.Load(), want, wantLists)
		}
	}
	kept(ana(t), "agent-alpha-ana")
	pass(Listing{Sessions: []string{"agent-alpha-ana"}}, 0, "ana")
	kept(bob, "agent-alpha-bob")
	pass(Listing{Sessions: []string{"agent-alpha-bob"}, Complete: true}, 0, "bob")
	kept(ana(t), "agent-alpha-ana")
	kept(bob, "agent-alpha-bob")
	pass(Listing{Sessions: []string{"agent-alpha-ana"}, Complete: true}, 0, "ana") // bob not in a whole listing: waits
	pass(Listing{Sessions: []string{"agent-alpha-ana"}}, 1, "bob")                 // not named: listed, found, typed
	if got := tm.Received("agent-alpha-bob"); len(got) != 2 {
		t.Errorf("bob got %d messages, want 2: %q", len(got), got)
	}
	// Said to be there, but gone since: the message waits for bob, as one
	// to an agent not listed would, and is never failed as not found.
	kept(bob, "agent-alpha-bob")
	if err := tm.KillSession(ctx, "agent-alpha-bob"); err != nil {
		t.Fatal(err)
	}
	pass(Listing{Sessions: []string{"agent-alpha-bob"}}, -1) // its look at bob's session, which names the others
	b, err := c.Store.Read("alpha", "bob")
	if err != nil {
		t.Fatal(err)
	}
	if last := b.Envelopes[len(b.Envelopes)-1]; !last.Delivery.State.Outstanding() {
		t.Errorf("a message to an agent gone since the caller looked: %s (%s), want it kept", last.Delivery.State, last.Delivery.LastVerdict)
	}
}
