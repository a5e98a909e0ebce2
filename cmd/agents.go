package cmd

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentmsg/agentmsg/lifecycle"
	"github.com/agentmsg/agentmsg/service"
	"github.com/agentmsg/agentmsg/target"
	"github.com/agentmsg/agentmsg/wire"
)

// AgentsOptions are agents' inputs.
type AgentsOptions struct {
	LifecycleDeps
	Team             string // "" for every team
	Reap             bool
	HeartbeatTimeout time.Duration
}

func NewCmdAgents(f *Factory, runF func(context.Context, *AgentsOptions) error) *cobra.Command {
	opts := &AgentsOptions{LifecycleDeps: lifecycleDeps(f)}
	c := &cobra.Command{
		Use:   "agents [TEAM] [--reap]",
		Short: "Show each agent's state (running, idle, waiting, dead), activity, pending messages and requests",
		Long: `Agents joins the team's registry (agents started with agentmsg spawn, or that
send heartbeats) with the agent sessions on the tmux server, and shows for
each one:

  STATE     running  the session is there and the agent is working (or its
                     screen is not recognised)
            idle     its input box is empty and on screen
            waiting  a dialog is open, or someone's text is in its box
            dead     the session or its process is gone, or it has sent
                     heartbeats and the last is older than --heartbeat-timeout
  PENDING   messages in its inbox not yet typed (deferred or pending)
  REQS      requests it posted that nobody has claimed yet
  ACTIVITY  the latest of: output in its pane, heartbeat, status update, spawn

Without TEAM it shows every team, and team-less ralph agents.

--reap also cleans up: every dead agent's registry entry is removed, and the
dead agents are listed. It kills nothing: a session whose heartbeat stopped
stays (it may be in a long tool call); end it with agentmsg kill.

` + exitCodesHelp,
		Example: `  agentmsg agents
  agentmsg agents alpha
  agentmsg agents alpha --reap
  agentmsg --json agents alpha | jq -r '.agents[] | select(.state == "dead") | .agent'`,
		Args:              argsBetween(0, 1, "at most a TEAM"),
		ValidArgsFunction: completeTeam(f),
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 1 {
				if args[0] != target.RalphTeam {
					if err := target.ValidateTeam(args[0]); err != nil {
						return err
					}
				}
				opts.Team = args[0]
			}
			if opts.HeartbeatTimeout <= 0 {
				return usagef("--heartbeat-timeout %s: want a duration above 0", opts.HeartbeatTimeout)
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return agentsRun(c.Context(), opts)
		},
	}
	c.Flags().BoolVar(&opts.Reap, "reap", false, "remove the registry entries of dead agents (kills nothing)")
	c.Flags().DurationVar(&opts.HeartbeatTimeout, "heartbeat-timeout", lifecycle.DefaultHeartbeatTimeout, "an agent that sends heartbeats is dead after this long without one")
	return c
}

func agentsRun(ctx context.Context, opts *AgentsOptions) error {
	svc, err := opts.Service(ctx)
	if err != nil {
		return err
	}
	res, err := svc.Agents(ctx, service.AgentsRequest{Team: opts.Team, Reap: opts.Reap, HeartbeatTimeout: opts.HeartbeatTimeout})
	if err != nil {
		return err
	}
	list, reaped := res.Agents, res.Reaped
	if opts.JSON() {
		writeJSON(opts.jsonOut(), wire.NewAgentStates(res, opts.Reap))
		return nil
	}
	for _, s := range reaped {
		fmt.Fprintln(opts.IO.ErrOut, reapLine(s))
	}
	if len(list) == 0 {
		where := "on " + res.Socket + " or in the registry"
		if opts.Team != "" {
			where = "in team " + opts.Team + " " + where
		}
		fmt.Fprintf(opts.IO.ErrOut, "no agents %s\n", where)
		return nil
	}
	now := opts.Now()
	tw := tabwriter.NewWriter(opts.IO.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TEAM\tAGENT\tSTATE\tPENDING\tREQS\tACTIVITY\tPANE\tCOMMAND\tREASON")
	for _, s := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\n", orDash(s.Target.Team), s.Target.Agent(), show(s.State),
			s.Pending, s.OpenRequests, sinceText(now, s.LastActivity), show(orDash(s.Pane)), cell(orDash(s.Command), 24), cell(s.Reason, 60))
	}
	return tw.Flush()
}

// reapLine says what --reap did with a dead agent: it removes registry
// entries only, so one never registered is left as it was.
func reapLine(s lifecycle.AgentStatus) string {
	if s.Registered {
		return fmt.Sprintf("reaped %s (unregistered): %s", s.Target, show(s.Reason))
	}
	kill := "agentmsg kill"
	if s.Target.Team != "" {
		kill += " " + s.Target.Team + " " + s.Target.Agent()
	}
	return fmt.Sprintf("dead %s, nothing to reap: it was never registered, and its session stays (%s removes it): %s", s.Target, kill, show(s.Reason))
}
