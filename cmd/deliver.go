package cmd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentmsg/agentmsg/courier"
	"github.com/agentmsg/agentmsg/service"
	"github.com/agentmsg/agentmsg/wire"
)

// DeliverOptions are deliver's inputs.
type DeliverOptions struct {
	IO   *IOStreams
	F    *Factory
	Team string
	// Watch keeps going until interrupted, a pass every Every.
	Watch bool
	Every time.Duration
	// ReadyTimeout bounds each agent's wait in a pass: 1s unless
	// --ready-timeout is given (0: the configured one).
	ReadyTimeout time.Duration
	// TurnEnd is the pass an agent's turn-end hook runs: the caller's
	// team, taking turns with the others, within TurnEndLimit.
	TurnEnd bool
	Agent   agentFlags // --agent
}

// TurnEndLimit bounds a turn-end hook's deliver (and its wait for the pass
// at work): nothing a hook starts in the background may run on forever.
const TurnEndLimit = time.Minute

func NewCmdDeliver(f *Factory, runF func(context.Context, *DeliverOptions) error) *cobra.Command {
	opts := &DeliverOptions{IO: f.IO, F: f, Every: 500 * time.Millisecond}
	c := &cobra.Command{
		Use:   "deliver [TEAM]",
		Short: "Type the messages that are waiting in inboxes into their agents, once each is ready",
		Long: `Deliver types every pending or deferred message (one that send kept because its
agent was busy, showed a dialog or held a person's draft) into its agent, oldest
first, each exactly once. An inbox stops at its first message whose agent is
still not ready, so the order holds; the rest wait for the next pass.

Each message is marked "typing" before it is typed and with its verdict after,
so a deliver that is killed half-way leaves nothing lost: the next one looks
for the message on the agent's screen first and neither types it twice nor
skips it. Inboxes of names with no agent session (people, agents outside tmux)
are left for their owners to read with agentmsg inbox.

With --watch it keeps going, a pass every --every, until interrupted.

--turn-end is what the turn-end hook (agentmsg hooks install) runs when an
agent's turn ends: a pass over the caller's team (TEAM, else the team of the
agent session it runs in, else every team), at most ` + TurnEndLimit.String() + `. One such pass
per team runs at a time, and one more waits to run after it; any other
leaves at once, saying so: the waiting one reads the inboxes after it was
started, so it types what waits now.

Each pass waits at most --ready-timeout per agent (default for deliver: 1s).`,
		Example: `  agentmsg deliver
  agentmsg deliver alpha --watch
  agentmsg --json deliver`,
		Args: argsBetween(0, 1, "at most a TEAM"),
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Team = args[0]
			}
			if opts.Every <= 0 {
				return usagef("--every must be above 0")
			}
			if opts.Watch && opts.TurnEnd {
				return usagef("--turn-end makes one pass: not with --watch")
			}
			// A pass looks, it does not wait long: the next pass comes soon.
			if fl := c.Flags().Lookup("ready-timeout"); fl == nil || !fl.Changed {
				opts.ReadyTimeout = time.Second
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return deliverRun(c.Context(), opts)
		},
	}
	c.Flags().BoolVar(&opts.Watch, "watch", false, "keep delivering until interrupted")
	c.Flags().DurationVar(&opts.Every, "every", opts.Every, "with --watch, the time between passes")
	c.Flags().BoolVar(&opts.TurnEnd, "turn-end", false, "the pass of an agent's turn-end hook: its team, one at a time, within "+TurnEndLimit.String())
	opts.Agent.register(c, false)
	return c
}

func deliverRun(ctx context.Context, opts *DeliverOptions) error {
	f := opts.F
	call, err := opts.Agent.call(f)
	if err != nil {
		return err
	}
	svc, err := f.Service(ctx)
	if err != nil {
		return err
	}
	req := service.DeliverRequest{Team: opts.Team, ReadyTimeout: opts.ReadyTimeout, Agent: call.Agent, AgentWhy: call.AgentWhy}
	if opts.TurnEnd {
		if req.Team == "" {
			req.Team = svc.Team
		}
		req.TakeTurns, req.Limit = true, TurnEndLimit
	}
	var all []courier.Typing
	serverLook := time.Now()
	for {
		res, err := svc.Deliver(ctx, req)
		var ahead *courier.PassAheadError
		if errors.As(err, &ahead) {
			// Not a failure: the waiting pass types what waits now.
			if f.JSON {
				return finishDeliver(opts, nil, nil)
			}
			fmt.Fprintf(opts.IO.Out, "left to the next pass: %s\n", showText(err.Error()))
			return nil
		}
		if res.RemindErr != nil {
			f.Log.Debug("reminding of expired requests", "err", res.RemindErr)
		}
		all = append(all, res.Typed...)
		if !f.JSON {
			for _, t := range res.Typed {
				fmt.Fprintf(opts.IO.Out, "%s %s\n", resultMark(t.Result), describeResult(t.Result))
			}
		}
		if err != nil {
			// A pass that could not start (no server, no such team)
			// ends even a watch; one that failed in part is retried.
			var pass *service.PassError
			if !opts.Watch || ctx.Err() != nil || !errors.As(err, &pass) {
				return finishDeliver(opts, all, err)
			}
			fmt.Fprintf(opts.IO.ErrOut, "agentmsg: %s\n", showText(err.Error()))
		}
		if !opts.Watch {
			return finishDeliver(opts, all, nil)
		}
		// A watch over a mailbox or a tmux server that has gone would
		// find nothing for ever: it ends, saying which.
		if err := watchedGone(ctx, svc, &serverLook); err != nil {
			return finishDeliver(opts, all, err)
		}
		select {
		case <-ctx.Done():
			return finishDeliver(opts, all, nil)
		case <-time.After(opts.Every):
		}
	}
}

// serverLookEvery is how often deliver --watch asks whether its tmux
// server still runs: a tmux process each time (2 ms), where a pass with
// nothing to deliver runs none.
const serverLookEvery = 5 * time.Second

// watchedGone says why a watch must end: the mailbox was removed, or the
// tmux server it delivers to no longer runs (asked every serverLookEvery,
// last being when it last was).
func watchedGone(ctx context.Context, svc *service.Service, last *time.Time) error {
	if err := svc.Store.Gone(); err != nil {
		return err
	}
	if time.Since(*last) < serverLookEvery {
		return nil
	}
	*last = time.Now()
	return svc.ServerGone(ctx)
}

// finishDeliver reports a deliver: with --json one document, which
// carries the error that ended it, if any, with its exit code (a second
// document for the error would break a reader of one).
func finishDeliver(opts *DeliverOptions, all []courier.Typing, err error) error {
	switch {
	case opts.F.JSON && err != nil:
		code := exitCode(err)
		fmt.Fprintf(opts.IO.ErrOut, "agentmsg: %s\n", showText(errText(err)))
		writeJSON(opts.F, struct {
			wire.Deliver
			Error    string `json:"error"`
			ExitCode int    `json:"exit_code"`
		}{wire.NewDeliver(all, errText), errText(err), code})
		return exitError{code}
	case opts.F.JSON:
		writeJSON(opts.F, wire.NewDeliver(all, errText))
	case len(all) == 0 && err == nil:
		fmt.Fprintln(opts.IO.Out, "nothing to deliver")
	}
	if err == nil && anyFailed(all) {
		return exitError{ExitPartial}
	}
	return err
}

// anyFailed reports whether a message tried was neither taken nor kept.
func anyFailed(all []courier.Typing) bool {
	for _, t := range all {
		if !t.OK() {
			return true
		}
	}
	return false
}
