package delivery

import (
	"testing"
	"time"
)

// Deliveries that wait for their agents look less often the more of them
// wait: with 499 others waiting, one more agent in a dialog for the whole
// second is looked at twice (at once, and when the time is up), not a
// hundred times; a lone one still polls as before. The pace forgets each
// delivery once it stops waiting.
func TestPaceSpreadsTheLooksOfWaitingDeliveries(t *testing.T) {
	for _, tc := range []struct {
		name           string
		others         int
		minLooks, most int
	}{
		{name: "alone", others: 0, minLooks: 90, most: 110},
		{name: "beside 499 waiting", others: 499, minLooks: 2, most: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pace := &Pace{}
			for range tc.others {
				defer pace.join()()
			}
			a, c := newFakeAgent()
			a.mode = "dialog"
			res, _ := deliverTo(t, a, c, "hello", func(o *Options) {
				o.ReadyTimeout, o.Poll, o.Pace = time.Second, 10*time.Millisecond, pace
			})
			if res.Verdict != NotReady {
				t.Fatalf("verdict %s, want not_ready", res.Verdict)
			}
			if a.captures < tc.minLooks || a.captures > tc.most {
				t.Errorf("looked %d times in %s, want %d to %d", a.captures, res.Elapsed, tc.minLooks, tc.most)
			}
			if res.Elapsed < time.Second || res.Elapsed > time.Second+100*time.Millisecond {
				t.Errorf("gave up after %s, want the ready timeout (1s)", res.Elapsed)
			}
			if n := pace.waiting.Load(); n != int64(tc.others) {
				t.Errorf("the pace counts %d waiting after the delivery, want %d", n, tc.others)
			}
		})
	}
}

// A delivery whose agent is ready is not slowed by the others waiting:
// it types at once, with no sleep longer than a poll.
func TestPaceLeavesAReadyAgentAlone(t *testing.T) {
	pace := &Pace{}
	for range 499 {
		defer pace.join()()
	}
	a, c := newFakeAgent()
	res, _ := deliverTo(t, a, c, "hello", func(o *Options) { o.Pace = pace })
	if res.Verdict != Submitted {
		t.Fatalf("verdict %s: %v", res.Verdict, res.Err)
	}
	if res.Phases.Ready > 10*time.Millisecond {
		t.Errorf("waited %s for a ready agent", res.Phases.Ready)
	}
}
