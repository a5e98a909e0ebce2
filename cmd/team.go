package cmd

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/mailbox"
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
	MailboxDeps

	Team string
	Yes  bool
}

func NewCmdTeamClean(f *Factory, runF func(context.Context, *TeamCleanOptions) error) *cobra.Command {
	opts := &TeamCleanOptions{MailboxDeps: mailboxDeps(f)}
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
	s, err := opts.Mailbox()
	if err != nil {
		return err
	}
	agents, err := s.Agents(opts.Team)
	if err != nil {
		return err
	}
	reqs, _ := s.Requests(opts.Team)
	board, _ := s.Board(opts.Team)
	teams, err := s.Teams()
	if err != nil {
		return err
	}
	path := filepath.Join(s.Root, "teams", opts.Team)
	stored := false
	for _, t := range teams {
		stored = stored || t == opts.Team
	}
	var parts []string
	if len(agents) > 0 {
		parts = append(parts, fmt.Sprintf("%d inbox(es) (%s)", len(agents), show(strings.Join(agents, ", "))))
	}
	if len(reqs) > 0 {
		parts = append(parts, fmt.Sprintf("%d request(s)", len(reqs)))
	}
	if len(board) > 0 {
		parts = append(parts, fmt.Sprintf("%d status(es)", len(board)))
	}
	what := strings.Join(parts, ", ")
	if what == "" {
		what = "nothing but empty directories"
	}

	if !stored {
		if opts.JSON() {
			writeJSON(opts.jsonOut(), teamCleanJSON{Team: opts.Team, Path: path})
		} else {
			fmt.Fprintf(opts.IO.ErrOut, "nothing is stored for team %s\n", opts.Team)
		}
		return nil
	}
	if !opts.Yes {
		return usagef("team clean %s would remove %s: %s; run it again with --yes to remove them", opts.Team, path, what)
	}
	if err := s.CleanTeam(opts.Team); err != nil {
		return err
	}
	if opts.JSON() {
		writeJSON(opts.jsonOut(), teamCleanJSON{Team: opts.Team, Path: path, Removed: true,
			Inboxes: append([]string{}, agents...), Requests: len(reqs), Statuses: len(board)})
		return nil
	}
	fmt.Fprintf(opts.IO.Out, "removed %s: %s\n", path, what)
	return nil
}

type teamCleanJSON struct {
	Team     string   `json:"team"`
	Path     string   `json:"path"`
	Removed  bool     `json:"removed"`
	Inboxes  []string `json:"inboxes,omitempty"`
	Requests int      `json:"requests"`
	Statuses int      `json:"statuses"`
}

// errNoTeam is a team that has never existed: exit 3.
var errNoTeam = errors.New("no such team")

// knownTeam is nil when team exists: something is stored for it (an inbox,
// a status, a request, a registry entry) or an agent session on the server
// is in it (live lists those teams; nil, or an error, when there is no
// server to ask). Otherwise it is errNoTeam naming the teams that do
// exist, so that a mistyped team is never read as an empty one.
func knownTeam(ctx context.Context, store *mailbox.Store, live func(context.Context) ([]string, error), team string) error {
	stored, err := store.Teams()
	if err != nil || slices.Contains(stored, team) {
		return nil // when the store cannot say, it is not for us to refuse
	}
	var running []string
	if live != nil {
		running, _ = live(ctx)
	}
	if slices.Contains(running, team) {
		return nil
	}
	return unknownTeam(team, slices.Compact(slices.Sorted(slices.Values(append(stored, running...)))))
}

// unknownTeam words a team nobody knows, with the teams there are.
func unknownTeam(team string, teams []string) error {
	there := "there are none yet"
	if len(teams) > 0 {
		there = "teams: " + strings.Join(teams, ", ")
	}
	return fmt.Errorf("%w %q: nothing is stored for it and no agent session on the tmux server is in it (%s)", errNoTeam, team, there)
}

// liveTeams lists the teams of the agent sessions d's server runs.
func liveTeams(ctx context.Context, d *dispatch.Dispatcher) ([]string, error) {
	ts, err := d.Targets(ctx, "")
	var teams []string
	for _, t := range ts {
		if !t.IsRalph() && !slices.Contains(teams, t.Team) {
			teams = append(teams, t.Team)
		}
	}
	return teams, err
}

// factoryLiveTeams is liveTeams on the configured server.
func factoryLiveTeams(f *Factory) func(context.Context) ([]string, error) {
	return func(ctx context.Context) ([]string, error) {
		d, err := f.Dispatcher()
		if err != nil {
			return nil, err
		}
		return liveTeams(ctx, d)
	}
}
