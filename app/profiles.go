package app

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/agentmsg/agentmsg/config"
	"github.com/agentmsg/agentmsg/profile"
	"github.com/agentmsg/agentmsg/tmux"
)

// Profiles are the built-in profiles changed, or added to, by the config
// file's [profiles.NAME] tables.
func Profiles(cfg *config.Loaded) ([]profile.Profile, error) {
	if len(cfg.Profiles) == 0 {
		return profile.Builtin(), nil
	}
	overrides := make(map[string]profile.Override, len(cfg.Profiles))
	for name, p := range cfg.Profiles {
		o := profile.Override{Base: p.Base, Commands: p.Commands, Queues: p.Queues, BracketedPaste: p.BracketedPaste, FoldBytes: p.FoldBytes, FoldLines: p.FoldLines,
			PromptPattern: p.Prompt, ReadyPattern: p.Ready, BusyPattern: p.Busy, DialogPattern: p.Dialog, PlaceholderPattern: p.Placeholder}
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
		return nil, fmt.Errorf("%w: agent profiles in the config file: %v", config.ErrInvalid, err)
	}
	return ps, nil
}

// ErrNoProfile is a profile asked for by name that does not exist.
type ErrNoProfile struct {
	Name  string
	Known []string
}

func (e *ErrNoProfile) Error() string {
	return fmt.Sprintf("no agent profile %q: want one of %s", e.Name, strings.Join(e.Known, ", "))
}

// ProfilePicker chooses the profile of each pane: kind when given, else
// detected from the foreground command, the foreground processes (read
// from /proc) and the screen.
func ProfilePicker(profiles []profile.Profile, kind string) (func(tmux.Pane, []string) (profile.Profile, string), error) {
	if kind != "" {
		p, err := Lookup(profiles, kind)
		if err != nil {
			return nil, err
		}
		return func(tmux.Pane, []string) (profile.Profile, string) {
			return p, "--agent " + kind
		}, nil
	}
	return func(pane tmux.Pane, screen []string) (profile.Profile, string) {
		procs := func() [][]string { return profile.Procs{}.Foreground(pane.PID) }
		p, why := profile.DetectPane(profiles, profile.Pane{Command: pane.Command, Procs: procs}, screen)
		return p, why
	}, nil
}

// Lookup is the profile named kind, as a delivery needs it.
func Lookup(profiles []profile.Profile, kind string) (profile.Profile, error) {
	p, ok := profile.LookupIn(profiles, kind)
	if !ok {
		return profile.Profile{}, &ErrNoProfile{Name: kind, Known: ProfileNames(profiles)}
	}
	return p, nil
}

// ProfileNames lists the profiles' names, sorted.
func ProfileNames(ps []profile.Profile) []string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.Name
	}
	sort.Strings(names)
	return names
}
