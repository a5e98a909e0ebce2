package cmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/target"
)

// BroadcastOptions are broadcast's inputs.
type BroadcastOptions struct {
	IO         *IOStreams
	Dispatcher func() (*dispatch.Dispatcher, error)
	Sender     func(ctx context.Context) (string, string, error)
	JSON       func() bool

	Team      string // "" with All
	All       bool
	Message   string
	FromStdin bool
}

func NewCmdBroadcast(f *Factory, runF func(context.Context, *BroadcastOptions) error) *cobra.Command {
	opts := &BroadcastOptions{IO: f.IO, Dispatcher: f.Dispatcher, Sender: f.Sender, JSON: func() bool { return f.JSON }}
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
			if len(rest) == 0 || (len(rest) == 1 && rest[0] == "-") {
				opts.FromStdin = true
			} else {
				opts.Message = joinWords(rest)
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return broadcastRun(c.Context(), opts)
		},
	}
	c.Flags().BoolVar(&opts.All, "all", false, "every agent-* session on the server (no TEAM)")
	return c
}

func broadcastRun(ctx context.Context, opts *BroadcastOptions) error {
	text, err := messageText(opts.IO, opts.Message, opts.FromStdin)
	if err != nil {
		return err
	}
	sender, _, err := opts.Sender(ctx)
	if err != nil {
		return err
	}
	d, err := opts.Dispatcher()
	if err != nil {
		return err
	}
	if !opts.JSON() {
		d.OnWait = newWaitPrinter(opts.IO.ErrOut, false).wait
	}
	rep, err := d.Broadcast(ctx, opts.Team, sender, text)
	if err != nil {
		return err
	}
	code := ExitOK
	if rep.Failed > 0 {
		code = ExitPartial
	}
	if opts.JSON() {
		results := make([]outcomeJSON, len(rep.Outcomes))
		for i, o := range rep.Outcomes {
			results[i] = toJSON(o)
		}
		verdict := map[bool]string{true: "delivered", false: "partial"}[rep.Failed == 0]
		if rep.Delivered == 0 {
			verdict = "failed"
		}
		writeJSON(&Factory{IO: opts.IO}, struct {
			ID        string        `json:"id"`
			From      string        `json:"from"`
			Team      string        `json:"team,omitempty"`
			All       bool          `json:"all"`
			Verdict   string        `json:"verdict"`
			Delivered int           `json:"delivered"`
			Failed    int           `json:"failed"`
			ExitCode  int           `json:"exit_code"`
			Results   []outcomeJSON `json:"results"`
		}{string(rep.ID), sender, opts.Team, opts.All, verdict, rep.Delivered, rep.Failed, code, results})
		return exitError{code}
	}
	for _, o := range rep.Outcomes {
		mark := "✓"
		if !o.OK() {
			mark = "✗"
		}
		fmt.Fprintf(opts.IO.Out, "%s %s\n", mark, describe(o))
	}
	fmt.Fprintf(opts.IO.Out, "%d of %d delivered as %s", rep.Delivered, len(rep.Outcomes), rep.ID)
	if rep.Failed > 0 {
		fmt.Fprintf(opts.IO.Out, "; %d failed", rep.Failed)
	}
	fmt.Fprintln(opts.IO.Out)
	return exitError{code}
}
