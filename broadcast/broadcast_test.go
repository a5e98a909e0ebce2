package broadcast

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

func TestEachKeepsOrderAndLimit(t *testing.T) {
	var inFlight, peak atomic.Int32
	items := make([]int, 50)
	for i := range items {
		items[i] = i
	}
	got := Each(context.Background(), items, 4, func(_ context.Context, n int) error {
		cur := inFlight.Add(1)
		for {
			p := peak.Load()
			if cur <= p || peak.CompareAndSwap(p, cur) {
				break
			}
		}
		time.Sleep(time.Millisecond)
		inFlight.Add(-1)
		if n%7 == 0 {
			return errors.New("failed")
		}
		return nil
	})
	if len(got) != len(items) {
		t.Fatalf("%d results for %d items", len(got), len(items))
	}
	for i, err := range got {
		if (err != nil) != (i%7 == 0) {
			t.Errorf("result %d = %v: out of order, or a failure spread to others", i, err)
		}
	}
	if p := peak.Load(); p > 4 || p < 2 {
		t.Errorf("peak concurrency %d, want 2..4", p)
	}
}

func TestEachEmpty(t *testing.T) {
	if got := Each(context.Background(), []int(nil), 3, func(context.Context, int) int { return 1 }); len(got) != 0 {
		t.Fatalf("got %v", got)
	}
}
