package mailbox

import (
	"context"
	"errors"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/message"
)

func TestWaitWakesOnAppend(t *testing.T) {
	s := newStore(t)
	b := box(t, s, "ana")
	appendN(t, b, 2)
	start := mustRead(t, s, "ana").End

	want := newEnv(t, "bob", "ana", "the reply")
	want.ReplyTo = "MSG_ANA_0badf00d"
	type result struct {
		e   Envelope
		err error
	}
	done := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		e, err := s.Wait(ctx, team, "ana", func(e Envelope) bool { return e.ReplyTo == want.ReplyTo }, start)
		done <- result{e, err}
	}()
	appendN(t, b, 3) // not matching
	if err := b.Append(want); err != nil {
		t.Fatal(err)
	}
	sent := time.Now()
	r := <-done
	if r.err != nil || r.e.ID != want.ID {
		t.Fatalf("Wait = %+v, %v", r.e, r.err)
	}
	t.Logf("woke %v after the append", time.Since(sent))

	// Already there after the position: returned at once.
	e, err := s.Wait(context.Background(), team, "ana", func(e Envelope) bool { return e.ID == want.ID }, start)
	if err != nil || e.ID != want.ID {
		t.Fatalf("Wait on existing = %v", err)
	}
}

func TestWaitAcrossCompaction(t *testing.T) {
	s := newStore(t)
	b := box(t, s, "ana")
	envs := appendN(t, b, 5)
	start := mustRead(t, s, "ana").End
	if _, err := s.Compact(team, "ana", Retention{MaxCount: 5}); err != nil { // new generation
		t.Fatal(err)
	}
	want := newEnv(t, "bob", "ana", "after compaction")
	if err := b.Append(want); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	e, err := s.Wait(ctx, team, "ana", func(Envelope) bool { return true }, start)
	if err != nil || e.ID != want.ID {
		t.Fatalf("Wait = %s, %v; want %s, not old %s", e.ID, err, want.ID, envs[0].ID)
	}
}

func TestWaitCancel(t *testing.T) {
	s := newStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := s.Wait(ctx, team, "ana", func(Envelope) bool { return true }, Position{})
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Wait did not return on cancel")
	}
}

func TestWaitBeforeInboxExists(t *testing.T) {
	s := newStore(t)
	want := newEnv(t, "bob", "ana", "first ever")
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		e, err := s.Wait(ctx, team, "ana", func(Envelope) bool { return true }, Position{})
		if err == nil && e.ID != want.ID {
			err = errors.New("woke on the wrong message " + string(e.ID))
		}
		done <- err
	}()
	if err := box(t, s, "ana").Append(want); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// Waits on one inbox share one poller, which stops with the last of them:
// 10,000 waits each polling on their own kept a core busy.
func TestWaitsShareOnePoller(t *testing.T) {
	s := newStore(t)
	const waiters = 50
	want := newEnv(t, "bob", "ana", "for everyone")
	errs := make(chan error, waiters)
	for range waiters {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			e, err := s.Wait(ctx, team, "ana", func(e Envelope) bool { return e.ID == want.ID }, Position{})
			if err == nil && e.ID != want.ID {
				err = errors.New("woke on the wrong message " + string(e.ID))
			}
			errs <- err
		}()
	}
	deadline := time.Now().Add(10 * time.Second)
	for pollers, users := s.watching(); users < waiters; pollers, users = s.watching() {
		if pollers > 1 {
			t.Fatalf("%d pollers for one inbox", pollers)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d waits are watching", users, waiters)
		}
		time.Sleep(time.Millisecond)
	}
	if pollers, _ := s.watching(); pollers != 1 {
		t.Fatalf("%d waits on one inbox run %d pollers, want 1", waiters, pollers)
	}
	if err := box(t, s, "ana").Append(want); err != nil {
		t.Fatal(err)
	}
	for range waiters {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if pollers, users := s.watching(); pollers != 0 || users != 0 {
		t.Errorf("after the waits: %d pollers for %d users, want none", pollers, users)
	}
}

// watching counts the inboxes polled for Wait and the waits on them.
func (s *Store) watching() (pollers, users int) {
	s.watches.mu.Lock()
	defer s.watches.mu.Unlock()
	for _, w := range s.watches.by {
		pollers++
		users += w.users
	}
	return pollers, users
}

// What 10,000 idle waits on one inbox cost, at the scale: the
// process's CPU time over 5 s in which nothing arrives. Timing decides it,
// so it runs only with AGENTMSG_MEASURE_MCP=1.
func TestWaitsIdleCPUMeasured(t *testing.T) {
	if os.Getenv("AGENTMSG_MEASURE_MCP") == "" {
		t.Skip("set AGENTMSG_MEASURE_MCP=1 to measure 10,000 idle waits")
	}
	s := newStore(t)
	appendN(t, box(t, s, "ana"), 1)
	const waiters = 10_000
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range waiters {
		wg.Go(func() { _, _ = s.Wait(ctx, team, "ana", func(Envelope) bool { return false }, Position{}) })
	}
	time.Sleep(time.Second) // past the waits' first reads
	before := cpuUsed(t)
	const idle = 5 * time.Second
	time.Sleep(idle)
	used := cpuUsed(t) - before
	cancel()
	wg.Wait()
	share := 100 * used.Seconds() / idle.Seconds()
	t.Logf("%d idle waits on one inbox, %s: %s of CPU (%.2f%% of a core)", waiters, idle, used, share)
	if share >= 5 {
		t.Errorf("%.2f%% of a core, want under 5%%", share)
	}
}

// cpuUsed is the CPU time this process has used, user and system.
func cpuUsed(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// WaitSettled offers a message being typed into the pane once its outcome
// is recorded, wherever it stands in what was read, and meanwhile the
// messages after it; Wait offers it at once.
func TestWaitSettledHoldsAMessageBeingTyped(t *testing.T) {
	s := newStore(t)
	b := box(t, s, "ana")
	appendN(t, b, 2)
	typing := newEnv(t, "bob", "ana", "being typed")
	typing.Delivery = &Delivery{State: StateTyping}
	if err := b.Append(typing); err != nil {
		t.Fatal(err)
	}
	after := newEnv(t, "bob", "ana", "after it")
	if err := b.Append(after); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	fromBob := func(e Envelope) bool { return e.From == "bob" }
	if e, err := s.Wait(ctx, team, "ana", fromBob, Position{}); err != nil || e.ID != typing.ID {
		t.Fatalf("Wait = %s, %v; want %s", e.ID, err, typing.ID)
	}
	if e, err := s.WaitSettled(ctx, team, "ana", fromBob, Position{}); err != nil || e.ID != after.ID {
		t.Fatalf("WaitSettled = %s, %v; want %s, the message after the one being typed", e.ID, err, after.ID)
	}
	done := make(chan Envelope, 1)
	go func() {
		e, err := s.WaitSettled(ctx, team, "ana", func(e Envelope) bool { return e.ID == typing.ID }, Position{})
		if err != nil {
			t.Error(err)
		}
		done <- e
	}()
	appendN(t, b, 2) // changes the inbox: the waiter reads it again
	if err := b.SetDelivery(typing.ID, Delivery{State: StateSubmitted, Reached: "pressed"}); err != nil {
		t.Fatal(err)
	}
	if e := <-done; e.ID != typing.ID || e.Delivery.State != StateSubmitted {
		t.Fatalf("WaitSettled = %+v; want %s once submitted", e, typing.ID)
	}
	// One whose deliverer records that it waits for the agent is not in
	// the pane: offered at once.
	waiting := newEnv(t, "bob", "ana", "the agent is busy")
	waiting.Delivery = &Delivery{State: StateTyping, Reason: "busy"}
	if err := b.Append(waiting); err != nil {
		t.Fatal(err)
	}
	if e, err := s.WaitSettled(ctx, team, "ana", func(e Envelope) bool { return e.ID == waiting.ID }, Position{}); err != nil || e.ID != waiting.ID {
		t.Fatalf("WaitSettled = %s, %v; want %s at once", e.ID, err, waiting.ID)
	}
}

// WaitDelivery offers every delivery record of the message, oldest first,
// whether it came before the wait or after: a state that was passed
// through between two looks (submitted, then read) is not missed, and
// the records of other messages never answer.
func TestWaitDeliveryTakesEveryRecordInOrder(t *testing.T) {
	s := newStore(t)
	b := box(t, s, "ana")
	envs := appendN(t, b, 2)
	id, other := envs[0].ID, envs[1].ID
	final := func(d Delivery) bool { return d.State == StateSubmitted || d.State == StateFailed }
	set := func(id message.ID, st DeliveryState) {
		t.Helper()
		if err := b.SetDelivery(id, Delivery{State: st}); err != nil {
			t.Fatal(err)
		}
	}
	set(id, StateDeferred)
	done := make(chan Delivery, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		d, err := s.WaitDelivery(ctx, team, "ana", id, final)
		if err != nil {
			t.Error(err)
		}
		done <- d
	}()
	set(other, StateFailed)
	set(id, StateTyping)
	set(id, StateSubmitted)
	set(id, StateRead)
	if d := <-done; d.State != StateSubmitted {
		t.Fatalf("WaitDelivery = %+v, want submitted", d)
	}
	// Already recorded: at once, from a whole read.
	d, err := s.WaitDelivery(context.Background(), team, "ana", id, final)
	if err != nil || d.State != StateSubmitted {
		t.Fatalf("WaitDelivery of a message already submitted = %+v, %v", d, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := s.WaitDelivery(ctx, team, "ana", id, func(d Delivery) bool { return d.State == StateHandled }); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitDelivery for a state never recorded: %v", err)
	}
}
