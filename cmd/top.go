package cmd

import (
	"context"
	"errors"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/agentmsg/agentmsg/alerts"
	"github.com/agentmsg/agentmsg/lock"
)

// TopOptions are top's inputs.
type TopOptions struct {
	F     *Factory
	Plain bool
}

func NewCmdTop(f *Factory, runF func(context.Context, *TopOptions) error) *cobra.Command {
	opts := &TopOptions{F: f}
	c := &cobra.Command{
		Use:   "top",
		Short: "Watch every agent and message live, act on them, and be told when something is stuck",
		Long: `Top shows every agent of every team on the tmux server, with its live state read
the way delivery reads it (ready, busy, dialog, draft, unknown, exited), its CLI
and profile, the messages waiting for it and the oldest one's age, and the last
message in and out; and every message kept, the open ones first (waiting, or
left typed or unknown by their delivery), with state, reason and age, and the
newest verdicts after them. A message opens to its text and its history.

Keys: d delivers now (a pass over the selected team), o opens the agent's pane
(tmux switch-client inside its server, else it shows the attach command), r
retries a typed or failed message once you have looked at the pane, h marks one
handled (never typed), / filters (team:T agent:A state:S, or T/A), ? helps.

It redraws as the mailbox's events come and reads each agent's screen at most
once a second. The [alerts] of the config file fire here (see agentmsg alerts).
--plain writes what changes as sentences, one a line, for a screen reader or a
log, and takes commands as lines (help lists them). NO_COLOR draws no colour.`,
		Example: `  agentmsg top
  agentmsg -S /tmp/agents/sock top
  agentmsg top --plain`,
		Args: argsBetween(0, 0, "no arguments"),
		RunE: func(c *cobra.Command, args []string) error {
			if opts.F.JSON {
				return usagef("top draws a screen; for a program, use agentmsg --json log or list")
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return topRun(c.Context(), opts)
		},
	}
	c.Flags().BoolVar(&opts.Plain, "plain", false, "write changes as lines of text and read commands as lines (screen readers, logs)")
	return c
}

// errNoTop: main gave the CLI no terminal UI to run.
var errNoTop = errors.New("this agentmsg was built without its terminal UI")

func topRun(ctx context.Context, opts *TopOptions) error {
	f := opts.F
	if f.Top == nil {
		return errNoTop
	}
	svc, err := f.Service(ctx)
	if err != nil {
		return err
	}
	cfg, err := f.Config()
	if err != nil {
		return err
	}
	noColor, _ := f.LookupEnv("NO_COLOR")
	// Every top watching the same mailbox tells each condition once.
	root := svc.Store.Root
	once := alerts.Once{Teller: alertNotifier(cfg.Alerts), Dir: filepath.Join(root, "alerts"),
		Lock: lock.ForMailbox(root, svc.Store.Base, "agentmsg top").Named}
	return f.Top(ctx, svc, TopUIOptions{In: f.IO.In, Out: f.IO.Out, Plain: opts.Plain, NoColor: noColor != "",
		Rules: alertRules(cfg.Alerts), Notifier: once})
}
