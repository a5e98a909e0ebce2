package delivery

import (
	"sync/atomic"
	"time"
)

// Pace shares tmux among the deliveries of one process that wait for
// their agents (busy, in a dialog, holding a draft): each looks less often
// the more of them wait, so that together they look about once per
// lookShare however many agents are stuck, and the looks of a delivery
// whose agent is ready are not queued behind theirs (tmux runs one command
// list at a time: see tmux/batch.go). The zero value is ready for use.
type Pace struct{ waiting atomic.Int64 }

// lookShare is how often the waiting deliveries of a process look, all
// together, once there are enough of them: 250 looks a second, a quarter
// of what one tmux 3.3a server answered here in command lists of about a
// dozen calls. 500 agents polled every 10 ms kept it at its limit (46,710
// looks in an 11 s pass), each look answered about 90 ms late.
const lookShare = 4 * time.Millisecond

// join counts one more delivery waiting until leave is called.
func (p *Pace) join() (leave func()) {
	if p == nil {
		return func() {}
	}
	p.waiting.Add(1)
	return func() { p.waiting.Add(-1) }
}

// every is how long a waiting delivery sleeps between looks: poll, or
// longer when many wait.
func (p *Pace) every(poll time.Duration) time.Duration {
	if p == nil {
		return poll
	}
	return max(poll, time.Duration(p.waiting.Load())*lookShare)
}
