package cmd

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentmsg/agentmsg/service"
	"github.com/agentmsg/agentmsg/wire"
)

// RequestsOptions are requests' inputs.
type RequestsOptions struct {
	teamDeps

	Team  string // "" for the caller's
	Nudge bool
}

func NewCmdRequests(f *Factory, runF func(context.Context, *RequestsOptions) error) *cobra.Command {
	opts := &RequestsOptions{teamDeps: newTeamDeps(f)}
	c := &cobra.Command{
		Use:   "requests [TEAM]",
		Short: "List a team's requests: open, claimed or expired",
		Long: `Requests lists the requests of your team (or of TEAM), oldest first, with
their state: open, claimed (by whom, when) or expired (timed out unclaimed).

--nudge first tells the team about each request that expired unclaimed:
a message of type request goes into every inbox of the team, once per
request however often (or from however many places) --nudge runs. Run it
from a timer or a hook.`,
		Example: `  agentmsg requests
  agentmsg requests alpha --nudge
  agentmsg --json requests alpha | jq '.requests[] | select(.state == "open")'`,
		Args:              argsBetween(0, 1, "at most a TEAM"),
		ValidArgsFunction: completeMailboxTeam(f),
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 1 {
				team, err := teamArg(args[0])
				if err != nil {
					return err
				}
				opts.Team = team
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return requestsRun(c.Context(), opts)
		},
	}
	c.Flags().BoolVar(&opts.Nudge, "nudge", false, "first tell the team, once, about requests that expired unclaimed")
	return c
}

func requestsRun(ctx context.Context, opts *RequestsOptions) error {
	svc, team, err := opts.serviceTeam(ctx, opts.Team)
	if err != nil {
		return err
	}
	l, err := svc.Requests(ctx, service.ListRequests{Team: team, Nudge: opts.Nudge})
	if !opts.JSON() {
		for _, r := range l.Nudged {
			fmt.Fprintf(opts.IO.ErrOut, "nudged team %s: %s expired unclaimed\n", l.Team, show(r.ID))
		}
	}
	if err != nil {
		return teamError(err)
	}
	doc := wire.NewRequests(l)
	if opts.JSON() {
		writeJSON(opts.jsonOut(), doc)
	} else if len(doc.Requests) == 0 {
		fmt.Fprintf(opts.IO.ErrOut, "no requests in team %s\n", l.Team)
	} else if err := writeRequests(opts, doc.Requests); err != nil {
		return err
	}
	if l.Unreadable != nil {
		return fmt.Errorf("some requests could not be read: %w", l.Unreadable)
	}
	return nil
}

func writeRequests(opts *RequestsOptions, out []wire.RequestInfo) error {
	now := opts.Now()
	tw := tabwriter.NewWriter(opts.IO.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tFROM\tPOSTED\tEXPIRES\tCLAIMED BY\tDESCRIPTION")
	for _, r := range out {
		state := r.State
		if r.Nudged {
			state += " (nudged)"
		}
		expires := "never"
		if !r.Expires.IsZero() {
			expires = r.Expires.Local().Format(time.DateTime)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", show(r.ID), show(string(state)), show(r.From), sinceText(now, r.Posted), expires,
			show(orDash(r.ClaimedBy)), cell(r.Description, 60))
	}
	return tw.Flush()
}
