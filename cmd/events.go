package cmd

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentmsg/agentmsg/eventlog"
	"github.com/agentmsg/agentmsg/service"
	"github.com/agentmsg/agentmsg/wire"
)

// EventsOptions are events' inputs.
type EventsOptions struct {
	IO      *IOStreams
	JSON    func() bool
	Service func(ctx context.Context) (*service.Service, error)
	Since   string
	Follow  bool
}

// NewCmdEvents is agentmsg events: the event stream, as the daemon's
// GET /v1/events serves it.
func NewCmdEvents(f *Factory, runF func(context.Context, *EventsOptions) error) *cobra.Command {
	opts := &EventsOptions{IO: f.IO, JSON: func() bool { return f.JSON }, Service: f.Service}
	c := &cobra.Command{
		Use:   "events",
		Short: "Print every change of every message and agent as it happens",
		Long: `events prints the event log every agentmsg process writes: each message
recorded, typed, submitted, deferred (with why), read, claimed or answered, and
each agent appearing, busy, ready, in a dialog, gone (the daemon records
those). Each event has an id that only grows: --since ID goes on after it, so a
script that remembers the last id it saw misses nothing and sees nothing
twice. Events that could not be written (a full disk) are told, once the log
can be written again, by an events.lost event: how many, since when; every
message's state is in its inbox. It is the stream the daemon serves at
GET /v1/events.`,
		Example: `  agentmsg events                       # from the oldest kept, then as they come
  agentmsg events --since now           # only what comes next
  agentmsg --json events --since 4711   # JSON lines, after event 4711`,
		Args: argsBetween(0, 0, "no arguments"),
		RunE: func(c *cobra.Command, args []string) error {
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return eventsRun(c.Context(), opts)
		},
	}
	c.Flags().StringVar(&opts.Since, "since", "", "start after this event id (now: only what comes next; default: the oldest kept)")
	c.Flags().BoolVar(&opts.Follow, "follow", true, "go on printing new events until interrupted (--follow=false: print what is there and exit)")
	return c
}

func eventsRun(ctx context.Context, opts *EventsOptions) error {
	svc, err := opts.Service(ctx)
	if err != nil {
		return err
	}
	after := int64(-1)
	switch opts.Since {
	case "":
	case "now":
		if after, err = svc.LastEvent(); err != nil {
			return err
		}
	default:
		if after, err = strconv.ParseInt(opts.Since, 10, 64); err != nil || after < -1 {
			return usagef("--since %q: want an event id, or now", opts.Since)
		}
	}
	err = svc.Events(ctx, after, opts.Follow, func(e eventlog.Event) error {
		if opts.JSON() {
			return jsonLine(opts.IO, e)
		}
		_, err := fmt.Fprintln(opts.IO.Out, describeEvent(e))
		return err
	})
	if errors.Is(err, context.Canceled) {
		return nil // interrupted: the way a follow ends
	}
	return err
}

// jsonLine prints v as one line of JSON.
func jsonLine(io *IOStreams, v any) error { return wire.EncodeLine(io.Out, v) }

// describeEvent is one line for a person.
func describeEvent(e eventlog.Event) string {
	who := e.Agent
	if e.Team != "" {
		who = e.Team + "/" + e.Agent
	}
	s := fmt.Sprintf("%d  %s  %-18s %s", e.ID, e.Time.Local().Format(time.TimeOnly), e.Type, show(who))
	if e.Type == eventlog.TypeLost {
		return s + fmt.Sprintf("%d events since %s could not be written (%s): every message's state is in its inbox",
			e.Lost, e.Since.Local().Format(time.TimeOnly), show(e.Reason))
	}
	if e.Message != "" {
		s += " " + e.Message
	}
	if e.Reason != "" {
		s += " (" + e.Reason + ")"
	}
	if e.Detail != "" && e.Reason == "" {
		s += ": " + show(e.Detail)
	}
	return s
}
