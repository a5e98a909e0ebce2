package lock

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"
)

func TestPaneExcludes(t *testing.T) {
	d := Dir{Path: t.TempDir()}
	var mu sync.Mutex
	inside, maxInside := 0, 0
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				unlock, err := d.Pane(context.Background(), "/tmp/s", "%1")
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				inside++
				maxInside = max(maxInside, inside)
				mu.Unlock()
				time.Sleep(100 * time.Microsecond)
				mu.Lock()
				inside--
				mu.Unlock()
				unlock()
			}
		}()
	}
	wg.Wait()
	if maxInside != 1 {
		t.Fatalf("%d holders at once, want 1", maxInside)
	}
	// Released locks leave no file behind (a busy server has many panes).
	if left, _ := os.ReadDir(d.Path); len(left) != 0 {
		t.Errorf("%d lock files left behind", len(left))
	}
}

func TestPaneKeys(t *testing.T) {
	d := Dir{Path: t.TempDir()}
	u1, err := d.Pane(context.Background(), "/tmp/s", "%1")
	if err != nil {
		t.Fatal(err)
	}
	defer u1()
	// Another pane, and the same pane on another server, are free.
	for _, k := range [][2]string{{"/tmp/s", "%2"}, {"/tmp/other", "%1"}} {
		u, err := d.Pane(context.Background(), k[0], k[1])
		if err != nil {
			t.Fatalf("lock %v: %v", k, err)
		}
		u()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := d.Pane(ctx, "/tmp/s", "%1"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second lock of a held pane: %v, want a deadline error", err)
	}
	u1()
	u2, err := d.Pane(context.Background(), "/tmp/s", "%1")
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	u2()
}
