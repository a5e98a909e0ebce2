package cmd

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentmsg/agentmsg/service"
	"github.com/agentmsg/agentmsg/wire"
)

func NewCmdTeam(f *Factory, runF func(context.Context, *TeamCleanOptions) error) *cobra.Command {
	c := &cobra.Command{
		Use:   "team",
		Short: "Manage what the mailbox keeps for a team",
		Args:  argsBetween(0, 0, "a subcommand: clean"),
	}
	c.AddCommand(NewCmdTeamClean(f, runF))
	return c
}

// TeamCleanOptions are team clean's inputs.
type TeamCleanOptions struct {
	teamDeps

	Team string
	Yes  bool
}

func NewCmdTeamClean(f *Factory, runF func(context.Context, *TeamCleanOptions) error) *cobra.Command {
	opts := &TeamCleanOptions{teamDeps: newTeamDeps(f)}
	c := &cobra.Command{
		Use:   "clean TEAM",
		Short: "Remove a team's mailboxes, requests and status board",
		Long: `Clean removes everything the mailbox keeps for TEAM: every agent's inbox and
read cursors, the open and claimed requests, and the status board. Messages
not yet delivered are lost with it.

Without --yes it only says what it would remove (and exits 2). Stop the
team's agents first: one still running recreates its own inbox.`,
		Example: `  agentmsg team clean alpha
  agentmsg team clean alpha --yes`,
		Args:              argsBetween(1, 1, "TEAM"),
		ValidArgsFunction: completeMailboxTeam(f),
		RunE: func(c *cobra.Command, args []string) error {
			team, err := teamArg(args[0])
			if err != nil {
				return err
			}
			opts.Team = team
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return teamCleanRun(c.Context(), opts)
		},
	}
	c.Flags().BoolVarP(&opts.Yes, "yes", "y", false, "really remove it")
	return c
}

func teamCleanRun(ctx context.Context, opts *TeamCleanOptions) error {
	svc, err := opts.Service(ctx)
	if err != nil {
		return err
	}
	r, err := svc.CleanTeam(ctx, service.CleanTeam{Team: opts.Team, DryRun: !opts.Yes})
	if err != nil {
		return err
	}
	var parts []string
	if len(r.Inboxes) > 0 {
		parts = append(parts, fmt.Sprintf("%d inbox(es) (%s)", len(r.Inboxes), show(strings.Join(r.Inboxes, ", "))))
	}
	if r.Requests > 0 {
		parts = append(parts, fmt.Sprintf("%d request(s)", r.Requests))
	}
	if r.Statuses > 0 {
		parts = append(parts, fmt.Sprintf("%d status(es)", r.Statuses))
	}
	what := strings.Join(parts, ", ")
	if what == "" {
		what = "nothing but empty directories"
	}
	switch {
	case !r.Stored && opts.JSON():
		writeJSON(opts.jsonOut(), wire.NewTeamClean(r))
	case !r.Stored:
		fmt.Fprintf(opts.IO.ErrOut, "nothing is stored for team %s\n", r.Team)
	case !r.Removed:
		return usagef("team clean %s would remove %s: %s; run it again with --yes to remove them", r.Team, r.Path, what)
	case opts.JSON():
		writeJSON(opts.jsonOut(), wire.NewTeamClean(r))
	default:
		fmt.Fprintf(opts.IO.Out, "removed %s: %s\n", r.Path, what)
	}
	return nil
}

// errNoTeam is a team that has never existed: exit 3.
var errNoTeam = service.ErrNoTeam
