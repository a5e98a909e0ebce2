package cmd

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/charmbracelet/log"
	"github.com/spf13/cobra"

	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/hosts"
	"github.com/agentmsg/agentmsg/service"
	"github.com/agentmsg/agentmsg/target"
	"github.com/agentmsg/agentmsg/wire"
)

// ListOptions are list's inputs.
type ListOptions struct {
	IO         *IOStreams
	Dispatcher func() (*dispatch.Dispatcher, error)
	JSON       func() bool
	// Anyone is the service for no caller in particular: for a team with
	// no sessions, it says whether the team exists at all.
	Anyone  func() (*service.Service, error)
	Team    string
	Factory *Factory   // --agent's profiles come from its config
	Agent   agentFlags // --agent
	// AllHosts lists the agents other hosts announce too.
	AllHosts bool
	Service  func(ctx context.Context) (*service.Service, error)
}

func NewCmdList(f *Factory, runF func(context.Context, *ListOptions) error) *cobra.Command {
	opts := &ListOptions{IO: f.IO, Dispatcher: f.Dispatcher, JSON: func() bool { return f.JSON },
		Anyone: func() (*service.Service, error) { return f.Wiring.Service(Identity{}, "", nil) }, Factory: f, Service: f.Service}
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

Sessions that are not named like agents are left out.

--all-hosts adds the agents of every other host linked through NATS (see
agentmsg hosts), as each host last announced them: their states are that
host's to read (agentmsg list there), so they show only the host's link.`,
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
	c.Flags().BoolVar(&opts.AllHosts, "all-hosts", false, "also list the agents of the other hosts linked through NATS (needs agentmsg serve)")
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
	if len(agents) == 0 && opts.Team != "" && opts.Anyone != nil {
		svc, err := opts.Anyone()
		if err != nil {
			return err
		}
		// The one team check (service.CheckTeam); no caller is needed.
		if err := svc.CheckTeam(ctx, opts.Team); err != nil {
			return err
		}
	}
	var others []hosts.HostInfo
	if opts.AllHosts {
		if others, err = otherHosts(ctx, opts); err != nil {
			return err
		}
	}
	if opts.JSON() {
		doc := wire.NewAgents(d.Tmux.Server().Socket, agents)
		if opts.AllHosts {
			writeJSON(&Factory{IO: opts.IO}, struct {
				wire.Agents
				OtherHosts []hosts.HostInfo `json:"other_hosts"`
			}{doc, others})
			return nil
		}
		writeJSON(&Factory{IO: opts.IO}, doc)
		return nil
	}
	if opts.AllHosts {
		defer printOtherHosts(opts, others)
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

// otherHosts are the hosts on the bus but this one, with their agents (of
// opts.Team, when named).
func otherHosts(ctx context.Context, opts *ListOptions) ([]hosts.HostInfo, error) {
	svc, err := opts.Service(ctx)
	if err != nil {
		return nil, err
	}
	list, err := svc.Hostlist(ctx)
	if list == nil {
		return nil, err
	}
	if err != nil {
		fmt.Fprintf(opts.IO.ErrOut, "other hosts cannot be listed now: %s\n", showErr(err))
	}
	var out []hosts.HostInfo
	for _, h := range list {
		if h.Self {
			continue
		}
		if opts.Team != "" {
			var mine []string
			for _, a := range h.Agents {
				if strings.HasPrefix(a, opts.Team+"/") {
					mine = append(mine, a)
				}
			}
			h.Agents = mine
		}
		out = append(out, h)
	}
	return out, nil
}

// printOtherHosts writes the other hosts' agents after this host's.
func printOtherHosts(opts *ListOptions, others []hosts.HostInfo) {
	if len(others) == 0 {
		fmt.Fprintln(opts.IO.ErrOut, "no other host is on the bus")
		return
	}
	tw := tabwriter.NewWriter(opts.IO.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nHOST\tLINK\tAGENT")
	for _, h := range others {
		link := "down"
		if h.Up {
			link = "up"
		}
		if len(h.Agents) == 0 {
			fmt.Fprintf(tw, "%s\t%s\t-\n", show(h.Name), link)
		}
		for _, a := range h.Agents {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", show(h.Name), link, show(a))
		}
	}
	tw.Flush()
}
