package mailbox

import (
	"context"
	"errors"
	"testing"
	"time"
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
