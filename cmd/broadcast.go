package cmd

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/service"
	"github.com/agentmsg/agentmsg/target"
	"github.com/agentmsg/agentmsg/wire"
)

// BroadcastOptions are broadcast's inputs.
type BroadcastOptions struct {
	composer
	IO   *IOStreams
	JSON func() bool

	Team      string // "" with All
	All       bool
	AllHosts  bool
	Message   string
	FromStdin bool
}

func NewCmdBroadcast(f *Factory, runF func(context.Context, *BroadcastOptions) error) *cobra.Command {
	opts := &BroadcastOptions{composer: newComposer(f), IO: f.IO, JSON: func() bool { return f.JSON }}
	c := &cobra.Command{
		Use:   "broadcast (TEAM | --all) [MESSAGE...]",
		Short: "Send one message to every agent of a team, or to every agent session, in parallel",
		Long: `Broadcast delivers MESSAGE to every agent session of TEAM (agent-TEAM-*), or with
--all to every agent-* session on the server and nothing else, in parallel
(--concurrency at a time). Each target gets the same id and its own verdict;
one target's failure never stops the others.

The message comes from the arguments, or from stdin when none is given or it
is "-". Everything send says about waiting and safety holds for each target.

` + exitCodesHelp,
		Example: `  agentmsg broadcast alpha "stand-up in 5 minutes"
  agentmsg broadcast --all "the build is green"
  agentmsg --json broadcast alpha "status?" | jq '.results[] | select(.exit_code != 0)'`,
		ValidArgsFunction: completeTeam(f),
		RunE: func(c *cobra.Command, args []string) error {
			var rest []string
			switch {
			case opts.All:
				rest = args
			case len(args) == 0:
				return usagef("broadcast: name a TEAM, or use --all for every agent session\nUsage: %s", c.UseLine())
			default:
				if err := target.ValidateTeam(args[0]); err != nil {
					return err
				}
				opts.Team, rest = args[0], args[1:]
			}
			opts.Message, opts.FromStdin = textArgs(rest)
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return broadcastRun(c.Context(), opts)
		},
	}
	c.Flags().BoolVar(&opts.All, "all", false, "every agent-* session on the server (no TEAM)")
	c.Flags().BoolVar(&opts.AllHosts, "all-hosts", false, "the agents on every host linked through NATS too (agentmsg hosts; needs agentmsg serve), each copy typed by its own host")
	noQueue := false
	c.Flags().BoolVar(&noQueue, "no-queue", false, "a target not ready in time fails (exit 6) instead of keeping the message for agentmsg deliver")
	c.Flags().BoolVar(&opts.Delivery.MailboxOnly, "mailbox-only", false, "only record the message in each agent's inbox")
	opts.Envelope.register(c)
	opts.Agent.register(c, true)
	c.PreRun = func(*cobra.Command, []string) { opts.Delivery.Queue = !noQueue }
	return c
}

func broadcastRun(ctx context.Context, opts *BroadcastOptions) error {
	draft, svc, err := opts.prepare(ctx, opts.IO, opts.Message, opts.FromStdin)
	if err != nil {
		return err
	}
	if !opts.JSON() {
		opts.Delivery.Call.OnWait = newWaitPrinter(opts.IO.ErrOut, false).wait
	}
	res, err := svc.Broadcast(ctx, service.BroadcastRequest{Team: opts.Team, All: opts.All, AllHosts: opts.AllHosts, Draft: draft, Delivery: opts.Delivery})
	if errors.Is(err, dispatch.ErrEmptyMessage) && opts.FromStdin && !opts.All {
		// Most often the team was forgotten: the message became the team.
		return usagef("broadcast: no message: %q was taken for the TEAM, and stdin held nothing; give both: agentmsg broadcast TEAM MESSAGE (or --all MESSAGE)", opts.Team)
	}
	if err != nil {
		return err
	}
	code := ExitOK
	if !res.OK() {
		code = ExitPartial
	}
	if opts.JSON() {
		writeJSON(&Factory{IO: opts.IO}, wire.NewBroadcast(res, opts.Team, opts.All, errText))
		return exitError{code}
	}
	for _, r := range res.Results {
		fmt.Fprintf(opts.IO.Out, "%s %s\n", resultMark(r), describeResult(r))
		if len(r.Older) > 0 {
			fmt.Fprintln(opts.IO.Out, olderLines(r))
		}
	}
	fmt.Fprintf(opts.IO.Out, "%d of %d delivered as %s", len(res.Delivered), len(res.Results), res.ID)
	if n := len(res.Deferred); n > 0 {
		fmt.Fprintf(opts.IO.Out, "; %d deferred (agentmsg deliver types them once ready)", n)
	}
	if n := len(res.Failed); n > 0 {
		fmt.Fprintf(opts.IO.Out, "; %d failed", n)
	}
	fmt.Fprintln(opts.IO.Out)
	return exitError{code}
}
