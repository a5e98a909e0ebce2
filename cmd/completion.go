package cmd

import (
	"context"
	"slices"
	"time"

	"github.com/spf13/cobra"
)

// CompletionOptions are completion's inputs.
type CompletionOptions struct {
	IO    *IOStreams
	Shell string
	Root  *cobra.Command // the command tree to complete
}

func NewCmdCompletion(f *Factory) *cobra.Command { return newCmdCompletion(f, nil) }

func newCmdCompletion(f *Factory, runF func(context.Context, *CompletionOptions) error) *cobra.Command {
	opts := &CompletionOptions{IO: f.IO}
	return &cobra.Command{
		Use:   "completion bash|zsh|fish",
		Short: "Print a shell completion script (teams and agents complete from the live server)",
		Long: `Completion prints a script that makes your shell complete agentmsg's commands,
flags, and the team and agent names of the agents running now.

  bash:  source <(agentmsg completion bash)
  zsh:   agentmsg completion zsh > "${fpath[1]}/_agentmsg"
  fish:  agentmsg completion fish > ~/.config/fish/completions/agentmsg.fish`,
		ValidArgs: []string{"bash", "zsh", "fish"},
		Args:      argsBetween(1, 1, "one of bash, zsh, fish"),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Shell, opts.Root = args[0], c.Root()
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return completionRun(c.Context(), opts)
		},
	}
}

func completionRun(_ context.Context, opts *CompletionOptions) error {
	switch opts.Shell {
	case "bash":
		return opts.Root.GenBashCompletionV2(opts.IO.Out, true)
	case "zsh":
		return opts.Root.GenZshCompletion(opts.IO.Out)
	case "fish":
		return opts.Root.GenFishCompletion(opts.IO.Out, true)
	}
	return usagef("completion: unknown shell %q: want bash, zsh or fish", opts.Shell)
}

// completionTimeout keeps a tab press snappy even when tmux is slow.
const completionTimeout = 2 * time.Second

func completeTeam(f *Factory) cobra.CompletionFunc {
	return func(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return liveNames(f, "", func(team, _ string) string { return team }), cobra.ShellCompDirectiveNoFileComp
	}
}

func completeTeamAgent(f *Factory) cobra.CompletionFunc {
	return func(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		switch len(args) {
		case 0:
			return liveNames(f, "", func(team, _ string) string { return team }), cobra.ShellCompDirectiveNoFileComp
		case 1:
			return liveNames(f, args[0], func(_, agent string) string { return agent }), cobra.ShellCompDirectiveNoFileComp
		}
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
}

// liveNames lists, without duplicates, pick(team, agent) for the agents on
// the configured server (of team, when given).
func liveNames(f *Factory, team string, pick func(team, agent string) string) []string {
	d, err := f.Dispatcher()
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), completionTimeout)
	defer cancel()
	targets, err := d.Targets(ctx, team)
	if err != nil {
		return nil
	}
	var names []string
	for _, t := range targets {
		if t.IsRalph() && team == "" {
			continue // ralph agents are reached through any team
		}
		if n := pick(t.Team, t.Agent()); !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names
}
