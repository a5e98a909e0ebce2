package cmd

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/service"
	"github.com/agentmsg/agentmsg/wire"
)

// statusStates are the states an agent can report on the board.
var statusStates = mailbox.StatusStates()

func NewCmdStatus(f *Factory, runF func(context.Context, *StatusOptions) error) *cobra.Command {
	deps := newTeamDeps(f)
	c := &cobra.Command{
		Use:   "status",
		Short: "Show or report what you are doing on your team's status board",
		Long: `Status shows your entry on your team's status board (agentmsg board shows
everyone's); agentmsg status set changes it. See agentmsg status set --help.`,
		Example: `  agentmsg status
  agentmsg status set --state working --working-on "inbox cursor"`,
		Args: unknownCommand,
		RunE: func(c *cobra.Command, args []string) error { return statusShowRun(c.Context(), deps) },
	}
	c.AddCommand(NewCmdStatusSet(f, runF))
	return c
}

// statusShowRun prints the caller's own entry on its team's board.
func statusShowRun(ctx context.Context, deps teamDeps) error {
	svc, team, err := deps.serviceTeam(ctx, "")
	if err != nil {
		return err
	}
	b, err := svc.Board(ctx, team)
	if err != nil {
		return teamError(err)
	}
	i := slices.IndexFunc(b.Agents, func(st mailbox.Status) bool { return st.Agent == svc.Name })
	if i < 0 {
		if b.ReadErr != nil {
			return b.ReadErr
		}
		fmt.Fprintf(deps.IO.ErrOut, "%s has no entry on team %s's board yet (agentmsg status set --state working --working-on ...)\n", svc.Name, b.Team)
		return nil
	}
	if deps.JSON() {
		writeJSON(deps.jsonOut(), wire.NewStatus(service.StatusResult{Team: b.Team, Status: b.Agents[i]}))
		return nil
	}
	return writeBoard(deps.IO.Out, deps.IO.ErrOut, b.Team, b.Agents[i:i+1], deps.Now())
}

// StatusOptions are status set's inputs. Only the fields whose flags were
// given change; the rest of the entry stays.
type StatusOptions struct {
	teamDeps

	Mission, WorkingOn, State string
	Done, Next                []string
	Set                       map[string]bool // flag names given
}

func NewCmdStatusSet(f *Factory, runF func(context.Context, *StatusOptions) error) *cobra.Command {
	opts := &StatusOptions{teamDeps: newTeamDeps(f)}
	c := &cobra.Command{
		Use:   "set",
		Short: "Set your entry on your team's status board",
		Long: `Set updates your entry on your team's status board. Only what you give
changes: --state alone keeps your mission and lists. --done and --next may
be given more than once; each given list replaces the old one, and an empty
value (--next "") clears it.

States: ` + strings.Join(statusStates, ", ") + `.`,
		Example: `  agentmsg status set --mission "ship the mailbox" --state working --working-on "inbox cursor"
  agentmsg status set --done "cursor" --done "wait" --next "board --watch"
  agentmsg status set --state blocked --working-on "waiting for a review of PR 12"`,
		Args: argsBetween(0, 0, "flags only"),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Set = map[string]bool{}
			for _, name := range []string{"mission", "working-on", "done", "next", "state"} {
				if c.Flags().Changed(name) {
					opts.Set[name] = true
				}
			}
			if len(opts.Set) == 0 {
				return usagef("status set: nothing to set; give --mission, --working-on, --done, --next or --state")
			}
			if opts.Set["state"] && !slices.Contains(statusStates, opts.State) {
				return usagef("--state %q: want one of %s", opts.State, strings.Join(statusStates, ", "))
			}
			opts.Done, opts.Next = nonEmpty(opts.Done), nonEmpty(opts.Next)
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return statusSetRun(c.Context(), opts)
		},
	}
	fl := c.Flags()
	fl.StringVar(&opts.Mission, "mission", "", "what you are here to do")
	fl.StringVar(&opts.WorkingOn, "working-on", "", "what you are doing now")
	fl.StringArrayVar(&opts.Done, "done", nil, "something finished (repeat for a list)")
	fl.StringArrayVar(&opts.Next, "next", nil, "something to do next (repeat for a list)")
	fl.StringVar(&opts.State, "state", "", "one of "+strings.Join(statusStates, "|"))
	return c
}

func nonEmpty(list []string) []string {
	var out []string
	for _, s := range list {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func statusSetRun(ctx context.Context, opts *StatusOptions) error {
	svc, err := opts.Service(ctx)
	if err != nil {
		return err
	}
	var up service.StatusUpdate
	if opts.Set["mission"] {
		up.Mission = &opts.Mission
	}
	if opts.Set["working-on"] {
		up.WorkingOn = &opts.WorkingOn
	}
	if opts.Set["done"] {
		up.Done = &opts.Done
	}
	if opts.Set["next"] {
		up.Next = &opts.Next
	}
	if opts.Set["state"] {
		up.State = &opts.State
	}
	r, err := svc.SetStatus(ctx, up)
	if r.BoardErr != nil {
		// An unreadable board still lets an agent say what it does.
		fmt.Fprintf(opts.IO.ErrOut, "agentmsg: reading the board of %s: %v\n", r.Team, r.BoardErr)
	}
	if errors.Is(err, service.ErrBadState) {
		return usageError{err}
	}
	if err != nil {
		return teamError(err)
	}
	st := r.Status
	if opts.JSON() {
		writeJSON(opts.jsonOut(), wire.NewStatus(r))
		return nil
	}
	fmt.Fprintf(opts.IO.Out, "%s/%s: %s", r.Team, st.Agent, show(orDash(st.State)))
	if st.WorkingOn != "" {
		fmt.Fprintf(opts.IO.Out, ", working on %s", show(st.WorkingOn))
	}
	fmt.Fprintln(opts.IO.Out)
	return nil
}
