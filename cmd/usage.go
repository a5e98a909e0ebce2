package cmd

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/agentmsg/agentmsg/config"
)

// jsonRequested reports whether args hold --json (before any "--").
func jsonRequested(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if a == "--json" {
			return true
		}
		if v, ok := strings.CutPrefix(a, "--json="); ok {
			b, err := strconv.ParseBool(v)
			return err == nil && b
		}
	}
	return false
}

// strictGroups makes every command that only groups others (the root,
// hooks, status, team) refuse an unknown subcommand as bad usage (exit 2),
// where cobra would print help and exit 0, or exit 1 for the root; given
// nothing, they print their help.
func strictGroups(c *cobra.Command) {
	if c.HasSubCommands() && !c.Runnable() {
		c.Args = unknownCommand
		c.RunE = func(c *cobra.Command, args []string) error { return c.Help() }
	}
	for _, sub := range c.Commands() {
		strictGroups(sub)
	}
}

// strictHelp makes --help after an unknown subcommand of a group bad
// usage too: cobra shows the group's help and exits 0, as if the command
// existed. It returns what the help found wrong, to be checked once the
// command line has run.
func strictHelp(root *cobra.Command) (refused func() error) {
	var err error
	show := root.HelpFunc()
	root.SetHelpFunc(func(c *cobra.Command, args []string) {
		if c.HasSubCommands() {
			if err = unknownCommand(c, c.Flags().Args()); err != nil {
				return
			}
		}
		defer hideDeliveryFlags(c)()
		show(c, args)
	})
	return func() error { return err }
}

// deliveringCommands type into agents' panes (or serve front ends that
// do): they read every delivery setting, and their help lists them.
var deliveringCommands = []string{"send", "broadcast", "reply", "deliver", "shutdown",
	"task assign", "workflow run", "mcp", "serve", "top"}

// readsDeliverySettings are the delivery settings that a command which
// delivers nothing still reads: doctor words what a send would do.
var readsDeliverySettings = map[string][]string{"doctor": {"ready_timeout", "settle"}}

// everyCommandsKeys are the config keys every command takes: which tmux
// server, and who is asking. The others are delivery settings.
var everyCommandsKeys = map[string]bool{"socket": true, "socket_name": true, "tmux": true, "from": true, "team": true}

// commandPath is a command's path without the root's name: "status set".
func commandPath(c *cobra.Command) string {
	return strings.TrimPrefix(c.CommandPath(), c.Root().Name()+" ")
}

// takesSetting reports whether the command at path reads config key.
// config shows every setting and where it came from, a flag too.
func takesSetting(path, key string) bool {
	return everyCommandsKeys[key] || path == "config" || slices.Contains(deliveringCommands, path) ||
		slices.Contains(readsDeliverySettings[path], key)
}

// hideDeliveryFlags hides the delivery settings from the help of a command
// that does not read them, where they were 9 lines of noise, and returns
// what shows them again. The root's help lists them all, once.
func hideDeliveryFlags(c *cobra.Command) (restore func()) {
	if !c.HasParent() {
		return func() {}
	}
	var hidden []*pflag.Flag
	for _, k := range config.Keys() {
		fl := c.Root().PersistentFlags().Lookup(k.Flag)
		if fl == nil || fl.Hidden || takesSetting(commandPath(c), k.Key) {
			continue
		}
		fl.Hidden = true
		hidden = append(hidden, fl)
	}
	return func() {
		for _, fl := range hidden {
			fl.Hidden = false
		}
	}
}

// refuseDeliveryFlags makes every command below c refuse, as bad usage, a
// delivery setting given as a flag that it does not read: status
// --ready-timeout 3s ran, the flag ignored without a word. The same
// setting from the environment or the config file is everyone's default,
// and no refusal. It checks before the arguments, so that a command line
// with both wrong names the flag.
func refuseDeliveryFlags(c *cobra.Command) {
	for _, sub := range c.Commands() {
		args := sub.Args
		sub.Args = func(run *cobra.Command, a []string) error {
			if err := deliveryFlagsUnread(run); err != nil {
				return err
			}
			if args == nil {
				return nil // cobra's default for a subcommand: any arguments
			}
			return args(run, a)
		}
		refuseDeliveryFlags(sub)
	}
}

// deliveryFlagsUnread names the delivery flags set on this command line
// that command c does not read.
func deliveryFlagsUnread(c *cobra.Command) error {
	var set []string
	for _, k := range config.Keys() {
		fl := c.Root().PersistentFlags().Lookup(k.Flag)
		if fl != nil && fl.Changed && !takesSetting(commandPath(c), k.Key) {
			set = append(set, "--"+k.Flag)
		}
	}
	if len(set) == 0 {
		return nil
	}
	verb := "applies"
	if len(set) > 1 {
		verb = "apply"
	}
	msg := fmt.Sprintf("%s %s only to commands that deliver (%s), not to %s", strings.Join(set, ", "), verb,
		strings.Join(deliveringCommands, ", "), commandPath(c))
	if reads := readsDeliverySettings[commandPath(c)]; len(reads) > 0 {
		msg += fmt.Sprintf(", which reads only --%s", strings.ReplaceAll(strings.Join(reads, ", --"), "_", "-"))
	}
	return usagef("%s", msg)
}

// unknownCommand refuses any argument to a group command.
func unknownCommand(c *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], c.CommandPath())
	if c.SuggestionsMinimumDistance <= 0 {
		c.SuggestionsMinimumDistance = 2 // cobra's own default
	}
	if s := c.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t")
	}
	return usagef("%s\nsee: %s --help", msg, c.CommandPath())
}

// newCmdHelp is cobra's help command, except that an unknown topic is bad
// usage (exit 2) rather than a message and exit 0.
func newCmdHelp() *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		Long:  "Help shows the help of any command: agentmsg help COMMAND (or agentmsg COMMAND --help).",
		RunE: func(c *cobra.Command, args []string) error {
			cmd, rest, err := c.Root().Find(args)
			if cmd == nil || err != nil || len(rest) > 0 {
				return usagef("unknown help topic %q; see: %s --help", strings.Join(args, " "), c.Root().Name())
			}
			return cmd.Help()
		},
		ValidArgsFunction: func(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			var names []string
			for _, sub := range c.Root().Commands() {
				if sub.IsAvailableCommand() && strings.HasPrefix(sub.Name(), toComplete) {
					names = append(names, sub.Name())
				}
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
	}
}

// loadConfig layers the flags given on this command line over file and env.
// usageError marks bad input: exit code 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

// flagError is a flag that could not be parsed: bad usage, and a sign that
// the flags after it (--json among them) were not read.
type flagError struct{ err error }

func (e flagError) Error() string { return e.err.Error() }
func (e flagError) Unwrap() error { return usageError{e.err} }

// exactArgs and rangeArgs are cobra's validators, as usage errors.
func argsBetween(lo, hi int, what string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) < lo || (hi >= 0 && len(args) > hi) {
			return usagef("%s: want %s, got %d argument(s)\nUsage: %s", c.Name(), what, len(args), c.UseLine())
		}
		return nil
	}
}

var errSilent = errors.New("already reported")

// exitError ends the process with code after the command printed its own report.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }
func (e exitError) Unwrap() error { return errSilent }

func joinWords(args []string) string { return strings.Join(args, " ") }

// textArgs is a message's text from the words after its target, or
// fromStdin when there are none or the one word "-": the text is read from
// standard input then (a long or many-line message, a pipe).
func textArgs(rest []string) (text string, fromStdin bool) {
	if len(rest) == 0 || len(rest) == 1 && rest[0] == "-" {
		return "", true
	}
	return joinWords(rest), false
}
