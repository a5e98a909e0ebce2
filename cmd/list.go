package cmd

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/charmbracelet/log"
	"github.com/spf13/cobra"

	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/service"
	"github.com/agentmsg/agentmsg/target"
	"github.com/agentmsg/agentmsg/wire"
)

// ListOptions are list's inputs.
type ListOptions struct {
	IO         *IOStreams
	Dispatcher func() (*dispatch.Dispatcher, error)
	JSON       func() bool
	// Mailbox says, for a team with no sessions, whether it exists at all.
	Mailbox func() (*mailbox.Store, error)
	Team    string
	Factory *Factory   // --agent's profiles come from its config
	Agent   agentFlags // --agent
}

func NewCmdList(f *Factory, runF func(context.Context, *ListOptions) error) *cobra.Command {
	opts := &ListOptions{IO: f.IO, Dispatcher: f.Dispatcher, JSON: func() bool { return f.JSON },
		Mailbox: func() (*mailbox.Store, error) { return f.Mailbox() }, Factory: f}
	c := &cobra.Command{
		Use:   "list [TEAM]",
		Short: "Show the agents on the tmux server and the state of each one's input box",
		Long: `List shows every agent session (agent-<team>-<name>, agent-<team>-<name>-<n>,
agent-ralph-<id>) on the server, or those of TEAM, with its pane, foreground
command and the state its screen shows now:

  ready    the input box is on screen and empty: a send would type now
  busy     the agent is working
  dialog   a permission, trust or selection dialog is open
  draft    the input box holds text (a person typing)
  unknown  no input box at the bottom of the screen

PROFILE is how the screen was read: --agent, else the kind spawn registered
(spawn --agent), else what the pane's command, processes and screen say.

Sessions that are not named like agents are left out.`,
		Example: `  agentmsg list
  agentmsg list alpha
  agentmsg -L work --json list`,
		Args:              argsBetween(0, 1, "at most a TEAM"),
		ValidArgsFunction: completeTeam(f),
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 1 {
				if err := target.ValidateTeam(args[0]); err != nil {
					return err
				}
				opts.Team = args[0]
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return listRun(c.Context(), opts)
		},
	}
	opts.Agent.register(c, false)
	return c
}

func listRun(ctx context.Context, opts *ListOptions) error {
	d, err := opts.Dispatcher()
	if err != nil {
		return err
	}
	call, err := opts.Agent.call(opts.Factory)
	if err != nil {
		return err
	}
	agents, err := d.Agents(ctx, opts.Team, call)
	if err != nil {
		return err
	}
	if f := opts.Factory; f != nil && f.Log != nil && f.Log.GetLevel() <= log.DebugLevel {
		saySkipped(ctx, opts.IO.ErrOut, d)
	}
	if len(agents) == 0 && opts.Team != "" && opts.Mailbox != nil {
		s, err := opts.Mailbox()
		if err != nil {
			return err
		}
		// The one team check (service.CheckTeam); no caller is needed.
		if err := (&service.Service{Store: s, Dispatcher: opts.Dispatcher}).CheckTeam(ctx, opts.Team); err != nil {
			return err
		}
	}
	if opts.JSON() {
		writeJSON(&Factory{IO: opts.IO}, wire.NewAgents(d.Tmux.Server().Socket, agents))
		return nil
	}
	if len(agents) == 0 {
		where := "on " + d.Tmux.Server().Socket
		if opts.Team != "" {
			where = "of team " + opts.Team + " " + where
		}
		fmt.Fprintf(opts.IO.ErrOut, "no agent sessions %s\n", where)
		return nil
	}
	tw := tabwriter.NewWriter(opts.IO.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TEAM\tAGENT\tSESSION\tPANE\tCOMMAND\tSTATE\tPROFILE\tDETAIL")
	for _, a := range agents {
		team := a.Target.Team
		if team == "" {
			team = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", team, a.Target.Agent(), a.Target.Session, show(a.Pane.ID), show(a.Pane.Command),
			show(string(a.State)), show(orDash(a.Profile)), show(a.Detail))
	}
	return tw.Flush()
}

// saySkipped names, for list -v, each session called agent-... that names
// no agent (agent-solo, agent-Alpha-x), and why: list leaves them out.
func saySkipped(ctx context.Context, w io.Writer, d *dispatch.Dispatcher) {
	panes, err := d.Tmux.ListPanes(ctx)
	if err != nil {
		return // list itself says what failed
	}
	said := map[string]bool{}
	for _, p := range panes {
		if said[p.Session] {
			continue
		}
		said[p.Session] = true
		if err := target.NotAgentSession(p.Session); err != nil {
			fmt.Fprintf(w, "skipped session %s: %s\n", show(p.Session), show(err.Error()))
		}
	}
}
