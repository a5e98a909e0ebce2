package cmd

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/service"
	"github.com/agentmsg/agentmsg/wire"
)

// RequestOptions are request's inputs.
type RequestOptions struct {
	teamDeps

	Team        string
	Description string
	Timeout     time.Duration // 0: never expires
}

func NewCmdRequest(f *Factory, runF func(context.Context, *RequestOptions) error) *cobra.Command {
	opts := &RequestOptions{teamDeps: newTeamDeps(f)}
	c := &cobra.Command{
		Use:   "request TEAM DESCRIPTION...",
		Short: "Post an open request that any agent of the team can claim",
		Long: `Request posts an open request (REQ_<8 hex>) in TEAM and puts a message of
type request, addressed to everyone, into the inbox of each other agent of
the team (one with an inbox, a status on the board or a session now). Any
of them can take it with agentmsg claim REQ_...; exactly one succeeds, and
you get a message of type claim saying who.

With --timeout the request expires: after it nobody can claim it, and
agentmsg requests --nudge tells the team, once, that it went unclaimed.

--json prints {"request_id": ..., ...}.`,
		Example: `  agentmsg request alpha "review PR 12"
  agentmsg request alpha --timeout 10m "someone take the flaky test in ci.yml"
  id=$(agentmsg --json request alpha "run the benchmarks" | jq -r .request_id)
  agentmsg wait --type claim`,
		Args:              argsBetween(2, -1, "TEAM DESCRIPTION..."),
		ValidArgsFunction: completeMailboxTeam(f),
		RunE: func(c *cobra.Command, args []string) error {
			team, err := teamArg(args[0])
			if err != nil {
				return err
			}
			opts.Team, opts.Description = team, strings.TrimSpace(joinWords(args[1:]))
			if opts.Description == "" {
				return usagef("request: the description is empty")
			}
			if opts.Timeout < 0 {
				return usagef("--timeout %s: want a duration of 0 (never expires) or more", opts.Timeout)
			}
			opts.Timeout = min(opts.Timeout, mailbox.MaxRequestTimeout)
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return requestRun(c.Context(), opts)
		},
	}
	c.Flags().DurationVar(&opts.Timeout, "timeout", 0, "the request expires unclaimed after this long (0: never; at most 8760h, a year)")
	return c
}

func requestRun(ctx context.Context, opts *RequestOptions) error {
	svc, err := opts.Service(ctx)
	if err != nil {
		return err
	}
	p, err := svc.Request(ctx, service.PostRequest{Team: opts.Team, Description: opts.Description, Timeout: opts.Timeout})
	if errors.Is(err, service.ErrEmptyDescription) {
		return usagef("request: the description is empty once cleaned of control characters")
	}
	if err != nil {
		return teamError(err)
	}
	r := p.Request
	if opts.JSON() {
		writeJSON(opts.jsonOut(), wire.NewRequest(p))
	} else {
		fmt.Fprintf(opts.IO.Out, "posted %s in team %s\n", r.ID, p.Team)
		if len(p.Notified) > 0 {
			// Only the inboxes are written: a deliver (or an agent's
			// turn-end hook) types it into the panes.
			fmt.Fprintf(opts.IO.ErrOut, "recorded in the inboxes of %s; the next agentmsg deliver types it (or a turn-end hook); claim it with: agentmsg claim %s\n", show(strings.Join(p.Notified, ", ")), r.ID)
		} else {
			fmt.Fprintf(opts.IO.ErrOut, "no other agent of %s has an inbox yet; they see it with: agentmsg requests %s\n", p.Team, p.Team)
		}
	}
	if len(p.Failed) > 0 {
		for _, a := range slices.Sorted(maps.Keys(p.Failed)) {
			fmt.Fprintf(opts.IO.ErrOut, "agentmsg: could not tell %s about %s: %s\n", show(a), r.ID, showErr(p.Failed[a]))
		}
		return exitError{ExitPartial}
	}
	return nil
}
