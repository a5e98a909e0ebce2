package cmd

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentmsg/agentmsg/app"
	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/profile"
)

// profileError words a profile asked for by name that does not exist.
func profileError(err error) error {
	var np *app.ErrNoProfile
	if errors.As(err, &np) {
		return usagef("--agent %q: want one of %s", np.Name, strings.Join(np.Known, ", "))
	}
	return err
}

// builtinProfiles names the profiles agentmsg ships, for a flag's help.
func builtinProfiles() string {
	return strings.Join(app.ProfileNames(profile.Builtin()), ", ")
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
	c.Flags().StringVar(&a.kind, "agent", "", "the profile to read the agent's screen with ("+builtinProfiles()+", or one from the config file) instead of the kind spawn registered or detecting it")
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
	profiles, err := app.Profiles(cfg)
	if err != nil {
		return call, err
	}
	ap, err := app.Lookup(profiles, a.kind)
	if err != nil {
		return call, profileError(err)
	}
	call.Agent, call.AgentWhy = &ap, "--agent "+a.kind
	return call, nil
}

// noPromptHint tells a sender whose agent shows no input box or prompt its
// profile knows which profile that is and how to describe the program's
// prompt; doctor suggests the pattern from the screen.
func noPromptHint(w dispatch.Wait) string {
	doctor := "agentmsg doctor " + orDash(w.Target.Team) + " " + w.Target.Agent()
	lines := []string{
		fmt.Sprintf("%s is read as profile %s (%s), which finds no input box or prompt on its screen.", w.Target, show(orDash(w.Profile)), show(w.ProfileWhy)),
		fmt.Sprintf("If it reads lines after a prompt, describe the prompt in the config file (%s suggests one):", doctor),
	}
	lines = append(lines, promptProfile(w.Profile, w.Command, "", "PROMPT ")...)
	lines = append(lines, "or read it as another profile: --agent NAME (spawn --agent NAME records one for the agent)")
	return "  " + strings.Join(lines, "\n  ")
}

// promptProfile is a config file's profile for a program that reads lines
// after prompt, run as command in a pane read as profile name; program is
// what the pane's processes run ("" when not known): for a shell or an
// interpreter, the script's name, since the command would claim every
// pane that runs it (commands = ["python3"] read every python3 pane as
// that program).
func promptProfile(name, command, program, prompt string) []string {
	commands := fmt.Sprintf("%q", show(command))
	switch {
	case program != "" && program != command:
		commands = fmt.Sprintf("%q", show(program))
	case name == "shell" || profile.RunsScripts(command):
		commands = `"SCRIPT"` // the script's name: the shell or interpreter running it runs every one
	}
	return []string{
		"  [profiles.NAME]",
		`  base = "generic"`,
		"  commands = [" + commands + "]",
		"  prompt = '" + show(prompt) + "'",
	}
}
