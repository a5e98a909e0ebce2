package tui

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentmsg/agentmsg/eventlog"
	"github.com/agentmsg/agentmsg/service"
)

// Reader is what Direct reads through: *service.Service.
type Reader interface {
	Screens(ctx context.Context) (service.ScreensResult, error)
	Log(ctx context.Context, req service.LogRequest) (service.LogResult, error)
}

// Direct is the source top uses when no daemon runs: it looks at the
// agents' screens itself, at most once per Look, and follows the event
// log, reading again only the inboxes an event names.
type Direct struct {
	Service Reader
	Events  *eventlog.Log // nil: inboxes are only read every Reread
	// Place is the tmux server (canonical socket) watched: the event log
	// is shared by every server's mailbox, and only its own events count.
	Place string
	// Look is the least time from one look at the screens to the next
	// (0: DefaultLook). A look that took long waits LookRatio times as
	// long: tmux answers every pane's capture, and 500 panes take a while.
	Look time.Duration
	// Follow is how often the event log is read (0: DefaultFollow).
	Follow time.Duration
	// Reread is how often every inbox is read anew (0: DefaultReread): a
	// late look at a change whose event was never written, and at what
	// compaction dropped (it writes no event).
	Reread time.Duration
}

// Defaults of Direct.
const (
	DefaultLook   = time.Second
	LookRatio     = 4
	DefaultFollow = 250 * time.Millisecond
	DefaultReread = time.Minute
	// eventsPerRead bounds one read of the event log.
	eventsPerRead = 10000
)

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// Run looks at the screens and follows the mailbox until ctx ends.
func (d *Direct) Run(ctx context.Context, out chan<- Update) error {
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.look(ctx, out)
	}()
	d.follow(ctx, out)
	<-done
	return nil
}

// send hands u on, unless ctx ends first.
func send(ctx context.Context, out chan<- Update, u Update) bool {
	select {
	case out <- u:
		return true
	case <-ctx.Done():
		return false
	}
}

// sleep waits for d, or for ctx to end (false).
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// look reads every agent's screen, again and again.
func (d *Direct) look(ctx context.Context, out chan<- Update) {
	every := orDefault(d.Look, DefaultLook)
	for {
		start := time.Now()
		res, err := d.Service.Screens(ctx)
		if ctx.Err() != nil {
			return
		}
		took := time.Since(start)
		if !send(ctx, out, Update{At: time.Now(), Screens: &res, Err: err}) {
			return
		}
		if !sleep(ctx, pause(every, took)) {
			return
		}
	}
}

// pause is the wait after a look that took took: the next starts every
// after this one did, and never before LookRatio times took has passed.
func pause(every, took time.Duration) time.Duration { return max(every-took, LookRatio*took) }

// follow reads every inbox once, then the ones each new event names.
func (d *Direct) follow(ctx context.Context, out chan<- Update) {
	cursor := int64(-1)
	if d.Events != nil {
		// Taken before the first read: no change falls between the two.
		cursor, _ = d.Events.Last()
	}
	lastFull, ok := d.readAll(ctx, out)
	if !ok {
		return
	}
	every, reread := orDefault(d.Follow, DefaultFollow), orDefault(d.Reread, DefaultReread)
	for sleep(ctx, every) {
		if time.Since(lastFull) >= reread || d.Events == nil {
			if lastFull, ok = d.readAll(ctx, out); !ok {
				return
			}
			continue
		}
		evs, next, err := d.Events.Since(cursor, eventsPerRead)
		if errors.Is(err, eventlog.ErrExpired) {
			// Some events were lost to rotation: read everything again.
			cursor, _ = d.Events.Last()
			if lastFull, ok = d.readAll(ctx, out); !ok {
				return
			}
			continue
		}
		cursor = next
		ours := d.ours(evs)
		if err != nil {
			err = fmt.Errorf("reading the event log: %w", err)
		}
		if len(ours) == 0 && err == nil {
			continue
		}
		if hasLoss(ours) {
			// Events were lost (a full disk): the inboxes they named
			// are not known, so read them all, as after a rotation.
			if !send(ctx, out, Update{At: time.Now(), Events: ours}) {
				return
			}
			if lastFull, ok = d.readAll(ctx, out); !ok {
				return
			}
			continue
		}
		u := Update{At: time.Now(), Events: ours, Err: err}
		var rerr error
		u.Inboxes, rerr = d.readNamed(ctx, ours)
		u.Err = errors.Join(u.Err, rerr)
		if !send(ctx, out, u) {
			return
		}
	}
}

// hasLoss reports whether evs tell of events that could not be written.
func hasLoss(evs []eventlog.Event) bool {
	for _, e := range evs {
		if e.Type == eventlog.TypeLost {
			return true
		}
	}
	return false
}

// ours are the events of the watched place.
func (d *Direct) ours(evs []eventlog.Event) []eventlog.Event {
	var out []eventlog.Event
	for _, e := range evs {
		if e.Place == d.Place || e.Place == "" {
			out = append(out, e)
		}
	}
	return out
}

// readAll reads every inbox and sends them as a full update.
func (d *Direct) readAll(ctx context.Context, out chan<- Update) (time.Time, bool) {
	at := time.Now()
	res, err := d.Service.Log(ctx, service.LogRequest{})
	if ctx.Err() != nil {
		return at, false
	}
	u := Update{At: at, Err: err}
	if err == nil {
		u.Inboxes, u.Full = group(res.Entries), true
	}
	return at, send(ctx, out, u)
}

// readNamed reads the inboxes of the message events in evs.
func (d *Direct) readNamed(ctx context.Context, evs []eventlog.Event) ([]Inbox, error) {
	seen := map[inboxKey]bool{}
	var out []Inbox
	var errs []error
	for _, e := range evs {
		k := inboxKey{e.Team, e.Agent}
		if !strings.HasPrefix(string(e.Type), "message.") || k.Team == "" || k.Agent == "" || seen[k] {
			continue
		}
		seen[k] = true
		res, err := d.Service.Log(ctx, service.LogRequest{Team: k.Team, Agent: k.Agent})
		if err != nil {
			errs = append(errs, fmt.Errorf("reading the inbox of %s/%s: %w", k.Team, k.Agent, err))
			continue
		}
		in := Inbox{Team: k.Team, Agent: k.Agent}
		for _, en := range res.Entries {
			in.Messages = append(in.Messages, en.Envelope)
		}
		out = append(out, in)
	}
	return out, errors.Join(errs...)
}

// group sorts log entries into their inboxes.
func group(entries []service.LogEntry) []Inbox {
	at := map[inboxKey]int{}
	var out []Inbox
	for _, e := range entries {
		k := inboxKey{e.Team, e.Inbox}
		i, ok := at[k]
		if !ok {
			i = len(out)
			at[k] = i
			out = append(out, Inbox{Team: e.Team, Agent: e.Inbox})
		}
		out[i].Messages = append(out[i].Messages, e.Envelope)
	}
	return out
}
