package dispatch

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/agentmsg/agentmsg/delivery"
	"github.com/agentmsg/agentmsg/target"
	"github.com/agentmsg/agentmsg/tmux"
)

// Inspection is what agentmsg sees of one target, for doctor.
type Inspection struct {
	Target  target.Target
	Server  tmux.Info
	Found   bool
	Similar []string // sessions a prefix match would have reached instead
	Pane    tmux.Pane
	Profile AgentProfile
	Why     string // how the profile was chosen
	Reading delivery.Reading
	Screen  []string
	// Would says what a send would do now, in a sentence.
	Would string
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
	for _, p := range panes {
		if p.Session == t.Session {
			in.Found, in.Pane = true, p
		} else if strings.HasPrefix(p.Session, t.Session) {
			in.Similar = append(in.Similar, p.Session)
		}
	}
	if !in.Found {
		in.Would = "refuse with exit 3: there is no session named exactly " + t.Session
		return in, nil
	}
	if in.Screen, err = d.Tmux.Capture(ctx, in.Pane.ID, 0); err != nil {
		if errors.Is(err, tmux.ErrPaneNotFound) {
			in.Found, in.Would = false, "refuse with exit 3: the session went away"
			return in, nil
		}
		return in, err
	}
	in.Profile, in.Why = AgentProfile{Name: "generic"}, "no profiles configured"
	if p, why, ok := d.profile(call, in.Pane, in.Screen); ok {
		in.Profile, in.Why = p, why
	}
	reader := d.Opts.Reader
	if in.Profile.Reader != nil {
		reader = in.Profile.Reader
	}
	in.Reading = reader.Read(in.Screen)
	in.Would = d.would(in, call)
	for range probe {
		start := time.Now()
		if _, err := d.Tmux.Capture(ctx, in.Pane.ID, 0); err != nil {
			return in, err
		}
		in.Probe = append(in.Probe, time.Since(start))
	}
	return in, nil
}

func (d *Dispatcher) would(in Inspection, call Call) string {
	rd := in.Reading
	switch {
	case in.Pane.Dead:
		return "fail: the program in the pane has exited"
	case d.Self != "" && in.Pane.ID == d.Self:
		return "refuse: that is the pane you run in"
	case rd.Shell && !call.Force:
		return "refuse: the pane shows a shell prompt, so a message would run as a command (--force types it anyway)"
	case rd.State == delivery.Ready:
		return "type the message now, submit it after " + max(d.Opts.Settle, in.Profile.Settle).String() + " and confirm it"
	case rd.State == delivery.Busy && in.Profile.Queues && !call.WaitIdle && rd.BoxRow >= 0 && rd.Box == "":
		return "type it now: the agent is busy but queues messages (verdict queued; --wait-idle waits instead)"
	case rd.State == delivery.Dialog:
		return "wait up to " + d.Opts.ReadyTimeout.String() + " for the dialog to close, typing and pressing nothing; then keep it for deliver (or exit 4 with --no-queue)"
	case rd.State == delivery.Draft:
		return "wait up to " + d.Opts.ReadyTimeout.String() + " for the person's text to leave the box, never touching it; then keep it for deliver (or exit 4 with --no-queue)"
	}
	return "wait up to " + d.Opts.ReadyTimeout.String() + " for an empty input box (" + string(rd.State) + "); then keep it for deliver (or exit 4 with --no-queue)"
}
