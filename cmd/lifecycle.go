package cmd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentmsg/agentmsg/lifecycle"
	"github.com/agentmsg/agentmsg/service"
	"github.com/agentmsg/agentmsg/target"
	"github.com/agentmsg/agentmsg/wire"
)

// lifecycleCommands start, stop and watch agents.
func lifecycleCommands(f *Factory) []*cobra.Command {
	return []*cobra.Command{
		NewCmdSpawn(f, nil),
		NewCmdShutdown(f, nil),
		NewCmdKill(f, nil),
		NewCmdAgents(f, nil),
		NewCmdHeartbeat(f, nil),
	}
}

// LifecycleDeps are what every lifecycle command needs.
type LifecycleDeps struct {
	IO *IOStreams
	// Service is the caller's service (Factory.Service): the operations.
	Service func(ctx context.Context) (*service.Service, error)
	JSON    func() bool
	Now     func() time.Time
}

func lifecycleDeps(f *Factory) LifecycleDeps {
	return LifecycleDeps{
		IO:      f.IO,
		Service: f.Service,
		JSON:    func() bool { return f.JSON },
		Now:     time.Now,
	}
}

// jsonOut is a Factory that writeJSON can print through.
func (d LifecycleDeps) jsonOut() *Factory { return &Factory{IO: d.IO} }

// teamName parses TEAM NAME into a target.
func teamName(args []string) (target.Target, error) {
	return target.New(args[0], args[1])
}

// HeartbeatOptions are heartbeat's inputs.
type HeartbeatOptions struct {
	LifecycleDeps
	Quiet bool
}

func NewCmdHeartbeat(f *Factory, runF func(context.Context, *HeartbeatOptions) error) *cobra.Command {
	opts := &HeartbeatOptions{LifecycleDeps: lifecycleDeps(f)}
	c := &cobra.Command{
		Use:   "heartbeat",
		Short: "Tell your team you are alive (for an agent to call now and then)",
		Long: `Heartbeat records in your team's registry that you are alive now. Your team
and name come from --team/--from, AGENTMSG_TEAM/AGENTMSG_FROM (a spawned agent
has both), or the agent session you run in.

Once an agent has sent one heartbeat, agentmsg agents reports it dead when
the last one is older than --heartbeat-timeout (30s by default). An agent
that never sends one is judged by its session and process only. Call it
more often than the timeout, e.g. from a hook on every prompt or a loop:

  while sleep 10; do agentmsg heartbeat -q; done &

` + exitCodesHelp,
		Example: `  agentmsg heartbeat
  agentmsg --team alpha --from ana heartbeat -q`,
		Args: argsBetween(0, 0, "no arguments"),
		RunE: func(c *cobra.Command, args []string) error {
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return heartbeatRun(c.Context(), opts)
		},
	}
	c.Flags().BoolVarP(&opts.Quiet, "quiet", "q", false, "print nothing on success")
	return c
}

func heartbeatRun(ctx context.Context, opts *HeartbeatOptions) error {
	svc, err := opts.Service(ctx)
	if err != nil {
		return err
	}
	// Only the mailbox: a heartbeat never needs the tmux server.
	r, err := svc.Heartbeat(ctx)
	if errors.Is(err, lifecycle.ErrNoTeam) {
		err = teamError(service.ErrTeamNeeded) // the same fact, worded for the command line
	}
	if err != nil {
		return err
	}
	switch {
	case opts.JSON():
		writeJSON(opts.jsonOut(), wire.NewHeartbeat(r))
	case !opts.Quiet:
		fmt.Fprintf(opts.IO.Out, "heartbeat of %s recorded at %s\n", displayName(r.Team, r.Agent), r.At.Local().Format("15:04:05"))
	}
	return nil
}

// displayName is team/name, or name alone for a team-less agent.
func displayName(team, name string) string {
	if team == "" {
		return name
	}
	return team + "/" + name
}
