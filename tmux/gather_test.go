package tmux

import (
	"context"
	"sync"
	"testing"
	"time"
)

// While callers say they are coming (Gather), a command list waits for
// their calls and takes them all in one tmux process; it goes at once
// when every caller coming has called, and after gatherWait at most when
// one does not call.
func TestGatherWaitsForTheCallersComing(t *testing.T) {
	e, _ := testServer(t)
	ctx := context.Background()

	// Two coming, the second a long while after the first: one process,
	// started only once the second came.
	e.gatherWait = time.Minute
	e.Gather(2)
	before := e.procs.Load()
	var wg sync.WaitGroup
	answered := make(chan string, 2)
	call := func(word string) {
		defer wg.Done()
		out, err := e.run(ctx, "display-message", "-p", word)
		if err != nil {
			t.Error(err)
		}
		answered <- string(out)
	}
	wg.Add(2)
	go call("first")
	time.Sleep(50 * time.Millisecond)
	select {
	case out := <-answered:
		t.Fatalf("the first call (%q) went without the second, still coming", out)
	default:
	}
	go call("second")
	wg.Wait()
	if n := e.procs.Load() - before; n != 1 {
		t.Errorf("the two calls took %d tmux processes, want 1", n)
	}

	// One of two callers never calls: the list goes after gatherWait.
	e.gatherWait = 20 * time.Millisecond
	start := time.Now()
	if _, err := e.run(ctx, "display-message", "-p", "alone"); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < e.gatherWait || took > 5*time.Second {
		t.Errorf("a call whose fellow never came took %s, want gatherWait (%s) and a process", took, e.gatherWait)
	}

	// A caller that was coming goes away (to sleep, say): the list waiting
	// for it goes at once.
	e.gatherWait = time.Minute // two coming still
	done := make(chan error, 1)
	start = time.Now()
	go func() {
		_, err := e.run(ctx, "display-message", "-p", "left behind")
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	e.Gather(-1)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("a call whose fellow went away waited %s", took)
	}

	// A lone caller's call never waits (a minute would show): one coming.
	start = time.Now()
	if _, err := e.run(ctx, "display-message", "-p", "lone"); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("a lone caller's call waited %s", took)
	}
	e.Gather(-1)
}
