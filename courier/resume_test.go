package courier

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/agentmsg/agentmsg/delivery"
	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
	"github.com/agentmsg/agentmsg/tmux"
	"github.com/agentmsg/agentmsg/tmux/tmuxtest"
)

// spyTmux is the fake server with a look at the inbox before every paste
// and press, and pastes that can be held back (a frozen agent).
type spyTmux struct {
	tmux.Client
	fake   *tmuxtest.Server
	before func(what string)

	mu   sync.Mutex
	hold bool
	held []string // pane, text
}

func (s *spyTmux) Paste(ctx context.Context, pane, text string) error {
	s.before("paste")
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hold {
		s.held = append(s.held, pane, text)
		return nil
	}
	return s.fake.Paste(ctx, pane, text)
}

func (s *spyTmux) SendBytes(ctx context.Context, pane string, b ...byte) error {
	s.before("press")
	return s.fake.SendBytes(ctx, pane, b...)
}

// thaw lets the held pastes land.
func (s *spyTmux) thaw() {
	s.mu.Lock()
	held := s.held
	s.hold, s.held = false, nil
	s.mu.Unlock()
	for i := 0; i < len(held); i += 2 {
		_ = s.fake.Paste(context.Background(), held[i], held[i+1])
	}
}

func newSpyCourier(t *testing.T) (*Courier, *spyTmux) {
	t.Helper()
	c, tm := newCourier(t, "agent-alpha-ana")
	spy := &spyTmux{Client: tm, fake: tm, before: func(string) {}}
	c.Dispatch.Tmux = spy
	return c, spy
}

func delivery1(t *testing.T, c *Courier, id message.ID) mailbox.Delivery {
	t.Helper()
	b, err := c.Store.Read("alpha", "ana")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range b.Envelopes {
		if e.ID == id && e.Delivery != nil {
			return *e.Delivery
		}
	}
	t.Fatalf("%s not in the inbox", id)
	return mailbox.Delivery{}
}

// The inbox says a message may be in the pane before it can be: a crash
// right after a paste or a press leaves a record a deliverer trusts.
func TestStepsAreRecordedBeforeTheyAreTaken(t *testing.T) {
	c, spy := newSpyCourier(t)
	env := envelope(t, "hello")
	var seen []string
	spy.before = func(what string) {
		d := delivery1(t, c, env.ID)
		seen = append(seen, what+" "+string(d.State)+" "+d.Reached)
	}
	res := c.Send(context.Background(), ana(t), env, Mode{Queue: true})
	if res.Verdict != delivery.Submitted {
		t.Fatalf("result %+v", res)
	}
	if want := []string{"paste typing pasted", "press typing pressed"}; !slices.Equal(seen, want) {
		t.Errorf("the inbox said %q at the paste and the press, want %q", seen, want)
	}
	if d := delivery1(t, c, env.ID); d.State != mailbox.StateSubmitted || d.Reached != string(delivery.Pressed) {
		t.Errorf("final record %+v, want submitted and pressed", d)
	}
}

// leftTyping is a courier whose ana has one message in her inbox marked
// typing, as a sender killed at step reached leaves it.
func leftTyping(t *testing.T, reached string) (*Courier, *tmuxtest.Server, mailbox.Envelope) {
	t.Helper()
	c, tm := newCourier(t, "agent-alpha-ana")
	env := envelope(t, "once")
	env.To = "ana"
	env.Delivery = &mailbox.Delivery{State: mailbox.StateTyping, Attempts: 1, Reached: reached}
	box, err := c.Store.Box("alpha", "ana")
	if err != nil {
		t.Fatal(err)
	}
	if err := box.Append(env); err != nil {
		t.Fatal(err)
	}
	return c, tm, env
}

// A deliverer that finds a message marked typing, and no trace of it on
// screen, types it only if nothing of it reached the pane before; else it
// reports unknown and never types it.
func TestDeliverTypesAgainOnlyWhatNeverReachedThePane(t *testing.T) {
	for _, tt := range []struct {
		reached string
		want    delivery.Verdict
		state   mailbox.DeliveryState
		typed   int
	}{
		{"", delivery.Submitted, mailbox.StateSubmitted, 1},
		{"pasted", delivery.Submitted, mailbox.StateSubmitted, 1},   // never pressed: cannot have been submitted
		{"unseen", delivery.VerdictUnknown, mailbox.StateFailed, 0}, // may still arrive
		{"pressed", delivery.VerdictUnknown, mailbox.StateFailed, 0},
	} {
		t.Run("reached "+tt.reached, func(t *testing.T) {
			c, tm, env := leftTyping(t, tt.reached)
			done, err := c.Deliver(context.Background(), "", dispatch.Call{})
			if err != nil || len(done) != 1 || done[0].Verdict != tt.want {
				t.Fatalf("deliver: %+v, %v; want verdict %s", done, err, tt.want)
			}
			if got := tm.Received("agent-alpha-ana"); len(got) != tt.typed {
				t.Errorf("typed %d times, want %d", len(got), tt.typed)
			}
			d := delivery1(t, c, env.ID)
			if d.State != tt.state || (tt.reached != "" && !(tt.typed == 0 && d.Reached == tt.reached || tt.typed == 1 && d.Reached == "pressed")) {
				t.Errorf("record %+v, want state %s, reached kept or further", d, tt.state)
			}
			// A second pass types nothing.
			if done, _ := c.Deliver(context.Background(), "", dispatch.Call{}); len(done) != 0 {
				t.Errorf("a second pass: %+v", done)
			}
		})
	}
}

// A paste to a frozen agent is never repeated: send reports unknown and
// keeps it typed; once the agent thaws, a deliver only submits it.
func TestUnansweredPasteIsSubmittedLaterNeverPastedAgain(t *testing.T) {
	c, spy := newSpyCourier(t)
	spy.hold = true
	env := envelope(t, "are you there")
	res := c.Send(context.Background(), ana(t), env, Mode{Queue: true})
	if res.Verdict != delivery.VerdictUnknown || res.OK() || res.State != mailbox.StateTyped || res.Typings != 1 {
		t.Fatalf("result %+v (err %v), want unknown after one paste, kept as typed", res, res.Err)
	}
	spy.thaw()
	done, err := c.Deliver(context.Background(), "", dispatch.Call{})
	if err != nil || len(done) != 1 || done[0].Verdict != delivery.Submitted || done[0].Typings != 0 {
		t.Fatalf("deliver: %+v, %v; want submitted without typing", done, err)
	}
	if got := spy.fake.Received("agent-alpha-ana"); !slices.Equal(got, []string{string(env.ID) + ": are you there"}) {
		t.Errorf("received %q, want the message once", got)
	}
}

// A broadcast records the steps in each target's own inbox.
func TestBroadcastRecordsStepsPerTarget(t *testing.T) {
	c, _ := newCourier(t, "agent-alpha-ana", "agent-alpha-bob")
	env := envelope(t, "all hands")
	results, err := c.Broadcast(context.Background(), "alpha", env, Mode{Queue: true})
	if err != nil || len(results) != 2 {
		t.Fatalf("%+v, %v", results, err)
	}
	for _, name := range []string{"ana", "bob"} {
		b, err := c.Store.Read("alpha", name)
		if err != nil || len(b.Envelopes) != 1 {
			t.Fatalf("%s: %+v, %v", name, b.Envelopes, err)
		}
		if d := b.Envelopes[0].Delivery; d == nil || d.State != mailbox.StateSubmitted || d.Reached != string(delivery.Pressed) {
			t.Errorf("%s's record %+v, want submitted and pressed", name, d)
		}
	}
}

// A message recorded as typing by a sender that is still at work (waiting
// for the pane, say) is that sender's to finish: deliver leaves it, and the
// messages behind it, alone while the sender holds its typing lock, and
// resumes it only once the lock is free (the sender died).
func TestDeliverLeavesAMessageItsLiveSenderIsTyping(t *testing.T) {
	c, tm := newCourier(t, "agent-alpha-ana")
	box, err := c.Store.Box("alpha", "ana")
	if err != nil {
		t.Fatal(err)
	}
	busy := envelope(t, "being typed by a live sender")
	busy.To = "ana"
	busy.Delivery = &mailbox.Delivery{State: mailbox.StateTyping, Attempts: 1}
	behind := envelope(t, "deferred behind it")
	behind.To = "ana"
	behind.Delivery = &mailbox.Delivery{State: mailbox.StateDeferred}
	for _, e := range []mailbox.Envelope{busy, behind} {
		if err := box.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	unlock, err := c.holdTyping(context.Background(), busy.ID)
	if err != nil {
		t.Fatal(err)
	}
	done, err := c.Deliver(context.Background(), "", dispatch.Call{})
	if err != nil || len(done) != 0 {
		t.Fatalf("deliver while the sender types: %+v, %v; want nothing done", done, err)
	}
	if got := tm.Received("agent-alpha-ana"); len(got) != 0 {
		t.Fatalf("typed %q while its sender was still at work", got)
	}
	unlock() // the sender died: the kernel released its lock
	done, err = c.Deliver(context.Background(), "", dispatch.Call{})
	if err != nil || len(done) != 2 {
		t.Fatalf("deliver after the sender died: %+v, %v; want both typed", done, err)
	}
	if got := tm.Received("agent-alpha-ana"); len(got) != 2 {
		t.Fatalf("typed %q, want both messages once", got)
	}
}

func (s *spyTmux) Pinned(tmux.Pane) tmux.Client { return s }

// A message typed by an earlier attempt waits in the box: an attempt that
// then touches nothing (its agent cannot be told apart from a program
// beside it, say) leaves it typed, never failed, since a person's Enter
// may still submit it (found by e2e/chaos, seed 821432).
func TestAnAttemptThatTouchedNothingLeavesATypedMessageTyped(t *testing.T) {
	c, spy := newSpyCourier(t)
	spy.hold = true
	env := envelope(t, "are you there")
	if res := c.Send(context.Background(), ana(t), env, Mode{Queue: true}); res.State != mailbox.StateTyped {
		t.Fatalf("result %+v (err %v), want kept as typed", res, res.Err)
	}
	box, err := c.Store.Box("alpha", "ana")
	if err != nil {
		t.Fatal(err)
	}
	d := delivery1(t, c, env.ID)
	for _, verdict := range []delivery.Verdict{delivery.NotFound, delivery.Failed} {
		out := dispatch.Outcome{Verdict: verdict, ID: env.ID, Err: errors.New("two panes run a known program")}
		res := c.settle(context.Background(), box, env.ID, out, Mode{Queue: true}, 2, prior{state: mailbox.StateTyped, reached: delivery.Step(d.Reached), resumed: true})
		if res.State != mailbox.StateTyped {
			t.Errorf("%s: result state %s, want typed", verdict, res.State)
		}
		if got := delivery1(t, c, env.ID); got.State != mailbox.StateTyped {
			t.Errorf("%s: recorded %+v, want typed", verdict, got)
		}
	}
}

// A broadcast holds one typing lock for all its copies, not one each: a
// lock file is an inode made and freed, and a hundred of them were a
// quarter of the daemon's time in a broadcast to a hundred agents. While
// it types, every copy is still its own: no deliverer resumes one.
func TestBroadcastHoldsOneTypingLock(t *testing.T) {
	sessions := make([]string, 20)
	for i := range sessions {
		sessions[i] = fmt.Sprintf("agent-alpha-a%02d", i)
	}
	c, tm := newCourier(t, sessions...)
	spy := &spyTmux{Client: tm, fake: tm}
	c.Dispatch.Tmux = spy
	env := envelope(t, "all hands")
	var once sync.Once
	spy.before = func(string) {
		once.Do(func() {
			files, _ := filepath.Glob(filepath.Join(c.Locks.Path, "named-typing-*"))
			if len(files) != 1 {
				t.Errorf("typing locks while the broadcast types: %d, want 1", len(files))
			}
			if _, free := c.tryTyping(env.ID); free {
				t.Error("a deliverer could take a copy the broadcast is typing")
			}
		})
	}
	results, err := c.Broadcast(context.Background(), "alpha", env, Mode{Queue: true})
	if err != nil || len(results) != len(sessions) {
		t.Fatalf("%+v, %v", results, err)
	}
}

// Deliverers of several copies of one message resume them at once (its
// typing lock is shared between them), and none while its sender types.
func TestCopiesAreResumedAtOnce(t *testing.T) {
	c, _ := newCourier(t, "agent-alpha-ana")
	id := envelope(t, "x").ID
	first, free := c.tryTyping(id)
	if !free {
		t.Fatal("a free message's lock not taken")
	}
	second, free := c.tryTyping(id)
	if !free {
		t.Fatal("a second copy's deliverer was kept out")
	}
	first()
	second()
	unlock, err := c.holdTyping(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	if _, free := c.tryTyping(id); free {
		t.Error("a deliverer took a message its sender is typing")
	}
}

// A message an earlier attempt may have typed (a sender whose record of
// the outcome failed after pressing, say) is never failed by a pass that
// cannot even find its pane: it may be in the box, or the agent may have
// it (e2e/chaos, seed 281912). One that never reached the pane fails.
func TestAPaneNotFoundNeverFailsWhatMayHaveArrived(t *testing.T) {
	for _, tt := range []struct {
		reached string
		state   mailbox.DeliveryState
	}{
		{"", mailbox.StateFailed},
		{"pasted", mailbox.StateTyped},
		{"pressed", mailbox.StateTyped},
	} {
		t.Run("reached "+tt.reached, func(t *testing.T) {
			c, tm, env := leftTyping(t, tt.reached)
			// A pane the session does not have: the agent's cannot be told.
			done, err := c.Deliver(context.Background(), "", dispatch.Call{Pane: "7.7"})
			if err != nil || len(done) != 1 || done[0].OK() {
				t.Fatalf("deliver: %+v, %v; want one that did not go through", done, err)
			}
			if s := state(t, c, env.ID); s != tt.state {
				t.Errorf("inbox says %s, want %s", s, tt.state)
			}
			if got := tm.Received("agent-alpha-ana"); len(got) != 0 {
				t.Errorf("typed %q", got)
			}
		})
	}
}
