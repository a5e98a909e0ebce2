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

// KillOptions are kill's inputs.
type KillOptions struct {
	LifecycleDeps
	Target target.Target
	Grace  time.Duration
}

func NewCmdKill(f *Factory, runF func(context.Context, *KillOptions) error) *cobra.Command {
	opts := &KillOptions{LifecycleDeps: lifecycleDeps(f)}
	c := &cobra.Command{
		Use:   "kill TEAM NAME [--grace D]",
		Short: "Stop an agent now: SIGTERM, SIGKILL after a grace, then its session goes",
		Long: `Kill ends the agent in session agent-TEAM-NAME and every process it started.

Before any signal it collects, from the process table, the pane's first process, all its
descendants, every process still in the pane's session (a daemon that
double-forked away from the tree) and the members of their process groups.
It sends SIGTERM to those process groups and processes, waits up to --grace,
sends SIGKILL to whatever is left, removes the session, and checks that every
collected process is gone: when one is not, it names it and exits 1. The
agent's registry entry goes; its inbox stays.

To ask an agent to stop on its own first, use agentmsg shutdown.

` + killExitHelp,
		Example: `  agentmsg kill alpha ana
  agentmsg kill alpha ana-2 --grace 30s
  agentmsg --json kill alpha ralph-7`,
		Args:              argsBetween(2, 2, "TEAM NAME"),
		ValidArgsFunction: completeTeamAgent(f),
		RunE: func(c *cobra.Command, args []string) error {
			t, err := teamName(args)
			if err != nil {
				return err
			}
			opts.Target = t
			if opts.Grace <= 0 {
				return usagef("--grace %s: want a duration above 0", opts.Grace)
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return killRun(c.Context(), opts)
		},
	}
	c.Flags().DurationVar(&opts.Grace, "grace", lifecycle.DefaultGrace, "time between SIGTERM and SIGKILL")
	return c
}

func killRun(ctx context.Context, opts *KillOptions) error {
	svc, err := opts.Service(ctx)
	if err != nil {
		return err
	}
	res, err := svc.Kill(ctx, service.KillRequest{Target: opts.Target, Grace: opts.Grace})
	if err != nil && !errors.Is(err, lifecycle.ErrSurvived) {
		return err
	}
	if opts.JSON() {
		writeJSON(opts.jsonOut(), wire.NewKill(opts.Target, res, err))
		if err != nil {
			fmt.Fprintf(opts.IO.ErrOut, "agentmsg: %s\n", showText(err.Error()))
			return exitError{exitCode(err)}
		}
		return nil
	}
	if err != nil {
		return err
	}
	how := "SIGTERM"
	if res.Forced {
		how = "SIGKILL after " + opts.Grace.String()
	}
	fmt.Fprintf(opts.IO.Out, "killed %s: %d process(es) ended (%s), session %s removed, in %s\n",
		opts.Target, len(res.PIDs), how, opts.Target.Session, res.Took.Round(time.Millisecond))
	return nil
}
