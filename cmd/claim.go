package cmd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/service"
	"github.com/agentmsg/agentmsg/wire"
)

// ClaimOptions are claim's inputs.
type ClaimOptions struct {
	teamDeps

	Team      string // "" for the caller's
	RequestID string
}

func NewCmdClaim(f *Factory, runF func(context.Context, *ClaimOptions) error) *cobra.Command {
	opts := &ClaimOptions{teamDeps: newTeamDeps(f)}
	c := &cobra.Command{
		Use:   "claim [TEAM] REQUEST_ID",
		Short: "Claim an open request; exactly one claimant gets it",
		Long: `Claim takes the open request REQUEST_ID of your team (or of TEAM) for you.
However many agents claim it at once, exactly one succeeds: it exits 0 and
the requester gets a message of type claim naming it. Every other claimant
is told who has it and since when, and exits 8; so does a claim of a
request that expired.

` + exitCodesHelp,
		Example: `  agentmsg claim REQ_1a2b3c4d
  agentmsg --from ana claim alpha REQ_1a2b3c4d && echo "mine"`,
		Args: argsBetween(1, 2, "[TEAM] REQUEST_ID"),
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 2 {
				team, err := teamArg(args[0])
				if err != nil {
					return err
				}
				opts.Team = team
			}
			opts.RequestID = args[len(args)-1]
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return claimRun(c.Context(), opts)
		},
	}
	return c
}

func claimRun(ctx context.Context, opts *ClaimOptions) error {
	svc, team, err := opts.serviceTeam(ctx, opts.Team)
	if err != nil {
		return err
	}
	r, err := svc.Claim(ctx, service.ClaimRequest{Team: team, RequestID: opts.RequestID})
	var ce *mailbox.ClaimedError
	switch {
	case errors.As(err, &ce):
		if opts.JSON() {
			writeJSON(opts.jsonOut(), wire.NewClaim(opts.RequestID, r, err))
		}
		fmt.Fprintf(opts.IO.ErrOut, "agentmsg: %s already claimed by %s at %s\n", show(opts.RequestID), show(r.ClaimedBy), r.ClaimedAt.Local().Format(time.DateTime))
		return exitError{ExitClaimed}
	case errors.Is(err, mailbox.ErrExpired):
		if opts.JSON() {
			writeJSON(opts.jsonOut(), wire.NewClaim(opts.RequestID, r, err))
		}
		fmt.Fprintf(opts.IO.ErrOut, "agentmsg: %s expired unclaimed at %s; nobody can claim it now (ask %s)\n",
			show(opts.RequestID), r.Expires.Local().Format(time.DateTime), show(r.Request.From))
		return exitError{ExitClaimed}
	case err != nil:
		return teamError(err)
	}
	if r.TellErr != nil {
		// The claim stands; only the note to the requester is missing.
		fmt.Fprintf(opts.IO.ErrOut, "agentmsg: claimed, but could not tell %s: %s\n", show(r.Request.From), showErr(r.TellErr))
	}
	if opts.JSON() {
		writeJSON(opts.jsonOut(), wire.NewClaim(opts.RequestID, r, nil))
		return nil
	}
	fmt.Fprintf(opts.IO.Out, "claimed %s from %s: %s\n", show(r.Request.ID), show(r.Request.From), show(r.Request.Description))
	return nil
}
