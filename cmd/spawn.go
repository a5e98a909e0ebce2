package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/agentmsg/agentmsg/app"
	"github.com/agentmsg/agentmsg/lifecycle"
	"github.com/agentmsg/agentmsg/target"
	"github.com/agentmsg/agentmsg/tmux"
	"github.com/agentmsg/agentmsg/wire"
)

// SpawnOptions are spawn's inputs.
type SpawnOptions struct {
	LifecycleDeps
	Factory *Factory
	Request lifecycle.SpawnRequest
}

func NewCmdSpawn(f *Factory, runF func(context.Context, *SpawnOptions) error) *cobra.Command {
	opts := &SpawnOptions{LifecycleDeps: lifecycleDeps(f), Factory: f}
	c := &cobra.Command{
		Use:   "spawn TEAM NAME [--instance I] [--cwd DIR] [--agent KIND] -- COMMAND...",
		Short: "Start an agent in its own tmux session and register it with its team",
		Long: `Spawn creates the detached tmux session agent-TEAM-NAME (agent-TEAM-NAME-I with
--instance I; NAME ralph-<id> makes a team-less agent-ralph-<id>) on the server
agentmsg talks to (-S/-L; tmux starts one if none runs), running COMMAND in it,
and records the agent in the team's registry (see agentmsg agents).

Everything after -- is the command, word for word: tmux runs it itself, no
shell re-reads it, so quotes, $ and ; in it arrive unchanged. For a shell line
give sh -c 'LINE'.

The agent's environment holds AGENTMSG_FROM (its name), AGENTMSG_TEAM,
AGENTMSG_SOCKET (this server; tmux sets TMUX too) and AGENTMSG_HOME (this
mailbox), so agentmsg run inside it needs no flags. --env adds more.

It fails when a session of exactly that name exists (exit 1): stop it with
agentmsg kill first, or pick another --instance.

` + spawnExitHelp,
		Example: `  agentmsg spawn alpha ana -- claude
  agentmsg spawn alpha ana --instance 2 --cwd ~/src/app --agent claude -- claude --model sonnet
  agentmsg spawn alpha bob -- sh -c 'cd /srv && exec codex'
  agentmsg --json spawn alpha ralph-7 -- ./ralph.sh`,
		Args: func(c *cobra.Command, args []string) error {
			dash := c.ArgsLenAtDash()
			if dash < 0 {
				return usagef("spawn: give the agent's command after --\nUsage: %s", c.UseLine())
			}
			if dash != 2 {
				return usagef("spawn: want TEAM NAME before --, got %d argument(s)\nUsage: %s", dash, c.UseLine())
			}
			if len(args) == 2 {
				return usagef("spawn: no command after --\nUsage: %s", c.UseLine())
			}
			return nil
		},
		ValidArgsFunction: completeTeam(f),
		RunE: func(c *cobra.Command, args []string) error {
			r := &opts.Request
			r.Team, r.Name, r.Command = args[0], args[1], args[2:]
			if r.Instance != "" {
				if _, err := target.New(r.Team, r.Name+"-"+r.Instance); err != nil {
					return err
				}
			} else if _, err := target.New(r.Team, r.Name); err != nil {
				return err
			}
			if r.Dir == "" {
				wd, err := os.Getwd()
				if err != nil {
					return err
				}
				r.Dir = wd
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return spawnRun(c.Context(), opts)
		},
	}
	fl := c.Flags()
	fl.StringVar(&opts.Request.Instance, "instance", "", "instance of NAME: session agent-TEAM-NAME-I (letters and digits)")
	fl.StringVar(&opts.Request.Dir, "cwd", "", "working directory of the agent (default: the current one)")
	fl.StringVar(&opts.Request.Agent, "agent", "", "the profile of the agent CLI or program it runs ("+builtinProfiles()+", or one from the config file): recorded in the registry, and every send, deliver, list and doctor reads its pane with it")
	fl.StringArrayVar(&opts.Request.Env, "env", nil, "extra environment KEY=VALUE for the agent (repeatable)")
	return c
}

func spawnRun(ctx context.Context, opts *SpawnOptions) error {
	if kind := opts.Request.Agent; kind != "" && opts.Factory != nil {
		cfg, err := opts.Factory.Config()
		if err != nil {
			return err
		}
		profiles, err := app.Profiles(cfg)
		if err != nil {
			return err
		}
		if _, err := app.Lookup(profiles, kind); err != nil {
			return profileError(err)
		}
	}
	svc, err := opts.Service(ctx)
	if err != nil {
		return err
	}
	res, err := svc.Spawn(ctx, opts.Request)
	switch {
	case errors.Is(err, lifecycle.ErrNoCommand):
		return usageError{fmt.Errorf("%w: give the agent's command after --", err)}
	case errors.Is(err, lifecycle.ErrExists):
		return fmt.Errorf("%w (stop it with agentmsg kill, or pick another --instance)", err)
	case err != nil:
		return err
	}
	if opts.JSON() {
		writeJSON(opts.jsonOut(), wire.NewSpawn(res, opts.Request))
		return nil
	}
	t := res.Target
	fmt.Fprintf(opts.IO.Out, "spawned %s in session %s (pane %s, pid %d) on %s\n", t, t.Session, res.Pane, res.PID, res.Socket)
	fmt.Fprintf(opts.IO.ErrOut, "  watch it: %s\n", tmux.WatchCommand(tmux.Server{Socket: res.Socket}, t.Session))
	return nil
}
