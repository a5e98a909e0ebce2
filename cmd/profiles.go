package cmd

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentmsg/agentmsg/config"
	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/profile"
	"github.com/agentmsg/agentmsg/tmux"
)

// agentProfiles are the built-in profiles changed, or added to, by the
// config file's [profiles.NAME] tables.
func agentProfiles(cfg *config.Loaded) ([]profile.Profile, error) {
	if len(cfg.Profiles) == 0 {
		return profile.Builtin(), nil
	}
	overrides := make(map[string]profile.Override, len(cfg.Profiles))
	for name, p := range cfg.Profiles {
		o := profile.Override{Base: p.Base, Commands: p.Commands, Queues: p.Queues, BracketedPaste: p.BracketedPaste, FoldBytes: p.FoldBytes, FoldLines: p.FoldLines,
			ReadyPattern: p.Ready, BusyPattern: p.Busy, DialogPattern: p.Dialog, PlaceholderPattern: p.Placeholder}
		if p.Settle != "" {
			d, err := time.ParseDuration(p.Settle) // checked by config already
			if err != nil {
				return nil, err
			}
			o.Settle = &d
		}
		overrides[name] = o
	}
	ps, err := profile.Apply(profile.Builtin(), overrides)
	if err != nil {
		return nil, usageError{fmt.Errorf("%w: agent profiles in the config file: %v", config.ErrInvalid, err)}
	}
	return ps, nil
}

// profilePicker chooses the profile of each pane: kind when --agent gave
// one, else detected from the foreground command, the foreground processes
// (read from /proc) and the screen.
func profilePicker(profiles []profile.Profile, kind string) (func(tmux.Pane, []string) (dispatch.AgentProfile, string), error) {
	if kind != "" {
		p, ok := profile.LookupIn(profiles, kind)
		if !ok {
			return nil, usagef("--agent %q: want one of %s", kind, strings.Join(profileNames(profiles), ", "))
		}
		return func(tmux.Pane, []string) (dispatch.AgentProfile, string) {
			return toAgentProfile(p), "--agent " + kind
		}, nil
	}
	return func(pane tmux.Pane, screen []string) (dispatch.AgentProfile, string) {
		procs := func() [][]string { return profile.Procs{}.Foreground(pane.PID) }
		p, why := profile.DetectPane(profiles, profile.Pane{Command: pane.Command, Procs: procs}, screen)
		return toAgentProfile(p), why
	}, nil
}

func toAgentProfile(p profile.Profile) dispatch.AgentProfile {
	return dispatch.AgentProfile{Name: p.Name, Reader: p.Reader, Settle: p.Settle, Queues: p.Queues,
		BracketedPaste: p.BracketedPaste, FoldBytes: p.FoldBytes, FoldLines: p.FoldLines}
}

func profileNames(ps []profile.Profile) []string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.Name
	}
	sort.Strings(names)
	return names
}

// agentFlags are the per-command flags about how the target agent behaves.
type agentFlags struct {
	kind      string
	pane      string // --pane, for commands that name one agent
	waitIdle  bool   // the default now; kept so that scripts that pass it still run
	whileBusy bool
	force     bool
}

func (a *agentFlags) register(c *cobra.Command, delivers bool) {
	c.Flags().StringVar(&a.kind, "agent", "", "the agent CLI's profile (claude, codex, gemini, qwen, aider, shell, generic, or one from the config file) instead of detecting it")
	if delivers {
		c.Flags().BoolVar(&a.whileBusy, "while-busy", false, "type into a busy agent that queues messages (Claude Code, Codex, Gemini, Qwen) instead of waiting for its turn to end: sooner, but a permission dialog that opens between agentmsg's last look and its keys would take them")
		c.Flags().BoolVar(&a.waitIdle, "wait-idle", false, "wait for a busy agent's turn to end (the default; overrides --while-busy)")
		c.Flags().BoolVar(&a.force, "force", false, "type even into a pane that shows a shell prompt (the text runs as a command there)")
	}
}

// registerPane adds --pane, for commands that name one agent.
func (a *agentFlags) registerPane(c *cobra.Command) {
	c.Flags().StringVar(&a.pane, "pane", "", "the agent's pane, when its session has several and agentmsg cannot tell: WINDOW.PANE (\"1.0\"), a window name, or a pane id (%3); default: the only pane, the one spawn started, or the one running a known agent CLI (config: [panes] \"team/agent\" = \"1.0\")")
}

// call turns them into the per-call choices of a send or a look.
func (a *agentFlags) call(f *Factory) (dispatch.Call, error) {
	call := dispatch.Call{WhileBusy: a.whileBusy && !a.waitIdle, Force: a.force, Pane: a.pane}
	if a.kind == "" {
		return call, nil
	}
	cfg, err := f.Config()
	if err != nil {
		return call, err
	}
	profiles, err := agentProfiles(cfg)
	if err != nil {
		return call, err
	}
	p, ok := profile.LookupIn(profiles, a.kind)
	if !ok {
		return call, usagef("--agent %q: want one of %s", a.kind, strings.Join(profileNames(profiles), ", "))
	}
	ap := toAgentProfile(p)
	call.Agent, call.AgentWhy = &ap, "--agent "+a.kind
	return call, nil
}
