package dispatch

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/agentmsg/agentmsg/delivery"
	"github.com/agentmsg/agentmsg/profile"
	"github.com/agentmsg/agentmsg/target"
	"github.com/agentmsg/agentmsg/tmux"
)

// Inspection is what agentmsg sees of one target, for doctor.
type Inspection struct {
	Target  target.Target
	Server  tmux.Info
	Found   bool
	Similar []string // sessions a prefix match would have reached instead
	// Panes are all the panes of the session; Pane is the agent's, unless
	// it cannot be told (PaneErr, Would.Stop StopPaneChoice).
	Panes   []tmux.Pane
	Pane    tmux.Pane
	PaneErr error
	Profile profile.Profile
	Why     string // how the profile was chosen
	Reading delivery.Reading
	Screen  []string
	// Would is what a send would do now.
	Would Plan
	// Probe: round-trip times of a harmless command (a screen capture)
	// over the client a send uses; empty unless asked for.
	Probe []time.Duration
}

// Inspect looks at t without typing anything. probe > 0 also times that
// many harmless captures.
func (d *Dispatcher) Inspect(ctx context.Context, t target.Target, probe int, call Call) (Inspection, error) {
	in := Inspection{Target: t}
	info, err := d.Tmux.Info(ctx)
	if err != nil {
		return in, err
	}
	in.Server = info
	panes, err := d.Tmux.ListPanes(ctx)
	if err != nil {
		return in, err
	}
	var mine []tmux.Pane
	for _, p := range panes {
		if p.Session == t.Session {
			mine = append(mine, p)
		} else if strings.HasPrefix(p.Session, t.Session) && !slices.Contains(in.Similar, p.Session) {
			in.Similar = append(in.Similar, p.Session)
		}
	}
	if len(mine) == 0 {
		in.Would.Stop = StopNotFound
		return in, nil
	}
	in.Found, in.Panes = true, mine
	if in.Pane, err = d.choosePane(t, mine, call.Pane); err != nil {
		in.Would.Stop, in.PaneErr = StopPaneChoice, err
		return in, nil
	}
	if in.Screen, err = d.Tmux.Pinned(in.Pane).Capture(ctx, in.Pane.ID, 0); err != nil {
		if errors.Is(err, tmux.ErrPaneNotFound) {
			in.Found, in.Would.Stop = false, StopGone
			return in, nil
		}
		return in, err
	}
	in.Profile, in.Why = profile.Profile{Name: "generic", PromptOnly: true}, "no profiles configured"
	opts := d.Opts
	opts.Force = call.Force
	if p, why, ok := d.profile(call, t, in.Pane, in.Screen); ok {
		in.Profile, in.Why = p, why
		opts = d.options(opts, p, call)
	}
	in.Reading = opts.Reader.Read(in.Screen)
	in.Would = d.plan(in, opts)
	for range probe {
		start := time.Now()
		if _, err := d.Tmux.Pinned(in.Pane).Capture(ctx, in.Pane.ID, 0); err != nil {
			return in, err
		}
		in.Probe = append(in.Probe, time.Since(start))
	}
	return in, nil
}

// Plan is what a send to one target would do now, by the rules a send
// follows; doctor words it.
type Plan struct {
	// Stop, when set, is why no delivery would start.
	Stop Stop
	// Otherwise Action is what the delivery would do with the screen read
	// (delivery.Options.Decide), in State.
	Action       delivery.Action
	State        delivery.State
	Settle       time.Duration // the pause before submit
	ReadyTimeout time.Duration // how long it waits for an empty box
}

// Stop is why a send would start no delivery.
type Stop string

const (
	StopNotFound Stop = "not_found" // no session of exactly the target's name
	StopGone     Stop = "gone"      // the session went away while it was looked at
	StopDead     Stop = "dead"      // the program in the pane has exited
	StopSelf     Stop = "self"      // the pane the caller runs in
	// StopPaneChoice: the session has several panes and none can be told
	// to be the agent's.
	StopPaneChoice Stop = "pane_choice"
)

// plan applies a send's rules to what in found, for a delivery with opts.
func (d *Dispatcher) plan(in Inspection, opts delivery.Options) Plan {
	p := Plan{State: in.Reading.State, Settle: opts.Settle, ReadyTimeout: opts.ReadyTimeout}
	switch {
	case in.Pane.Dead:
		p.Stop = StopDead
	case d.Self != "" && in.Pane.ID == d.Self:
		p.Stop = StopSelf
	default:
		p.Action = opts.Decide(in.Reading)
	}
	return p
}
