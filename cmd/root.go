// Package cmd is agentmsg's command line: it parses flags, calls the
// packages that decide, and prints what they report.
package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/charmbracelet/log"
	"github.com/spf13/cobra"

	"github.com/agentmsg/agentmsg/config"
	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/mailbox"
)

// version is set at build time with -ldflags "-X github.com/agentmsg/agentmsg/cmd.version=...".
var version = "dev"

// Main runs agentmsg with the process's arguments and returns its exit code.
func Main() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	f := NewFactory(SystemIO(), os.LookupEnv)
	return Run(ctx, f, os.Args[1:])
}

// Run executes one command line and returns the exit code.
func Run(ctx context.Context, f *Factory, args []string) int {
	root := NewCmdRoot(f)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	// A bad flag stops parsing before --json may have been read; the
	// caller still asked for a JSON document.
	if fe := (flagError{}); errors.As(err, &fe) && !f.JSON {
		f.JSON = jsonRequested(args)
	}
	return reportError(f, err)
}

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

// NewFactory wires the real dependencies, read lazily.
func NewFactory(io *IOStreams, lookupEnv func(string) (string, bool)) *Factory {
	f := &Factory{IO: io, LookupEnv: lookupEnv}
	// Hide that stderr is a terminal: on one, the logger's colour support
	// asks the terminal for its colours at start-up and waits up to 5 s for
	// each answer (10 s per run where none comes, and the answers can eat a
	// person's keystrokes). Plain text logs are worth neither.
	f.Log = log.NewWithOptions(plainWriter{io.ErrOut}, log.Options{Prefix: "agentmsg", Level: log.WarnLevel})
	return f
}

// typedString is a string flag that reports a type name in --help.
type typedString struct {
	v        *string
	typeName string
}

func (t *typedString) String() string     { return *t.v }
func (t *typedString) Set(s string) error { *t.v = s; return nil }
func (t *typedString) Type() string       { return t.typeName }

// plainWriter is an io.Writer and nothing more: no Fd, so no terminal.
type plainWriter struct{ w io.Writer }

func (p plainWriter) Write(b []byte) (int, error) { return p.w.Write(b) }

// globalFlags are the flags every command takes; each config key is one.
type globalFlags struct {
	values  map[string]*string // config key -> flag value
	verbose bool
}

func NewCmdRoot(f *Factory) *cobra.Command {
	g := &globalFlags{values: map[string]*string{}}
	root := &cobra.Command{
		Use:   "agentmsg",
		Short: "Deliver messages to AI coding agents running in tmux, and prove they arrived",
		Long: `agentmsg types a message into an AI coding agent's input box (Claude Code,
Codex, Gemini CLI, aider, or any program with a prompt) running in a tmux
session named agent-<team>-<name>, submits it, and confirms that the agent
really received it. It never types into a dialog, never touches a person's
half-typed text, and never merges two senders' messages.

Each message is tagged MSG_<SENDER>_<8 hex> so the receiver can answer it.

` + exitCodesHelp,
		Example: `  agentmsg list
  agentmsg send alpha ana "please review PR 12"
  echo "long text" | agentmsg send alpha ana
  agentmsg broadcast alpha "stand-up in 5 minutes"
  agentmsg broadcast --all "wrap up: the build is green"
  agentmsg -S /tmp/demo/sock --json send alpha ana "hi"`,
		Version:       version,
		SilenceErrors: true,
		SilenceUsage:  true,
		PersistentPreRunE: func(c *cobra.Command, args []string) error {
			f.Command = c.CommandPath()
			if g.verbose {
				f.Log.SetLevel(log.DebugLevel)
			}
			return nil
		},
	}
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.ErrOut)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		if strings.Contains(err.Error(), "unknown shorthand flag") || strings.Contains(err.Error(), "unknown flag") {
			// Most often a message that starts with "-".
			err = fmt.Errorf("%w (a message that starts with - goes after --: agentmsg send TEAM NAME -- -n ...; or on stdin)", err)
		}
		return flagError{err}
	})

	pf := root.PersistentFlags()
	for _, k := range config.Keys() {
		v := new(string)
		g.values[k.Key] = v
		usage := k.Help + " (env " + k.Env + ")"
		switch k.Key {
		case "socket":
			pf.StringVarP(v, k.Flag, "S", "", "tmux server socket path, as tmux -S (default: the server you run in, else tmux's default)")
		case "socket_name":
			pf.StringVarP(v, k.Flag, "L", "", "tmux server socket name, as tmux -L")
		case "from":
			pf.StringVar(v, k.Flag, "", "sender name, an agent name such as ana, ana-2 or lead, in any case (default: $AGENTMSG_FROM, else the agent whose tmux session you run in, else $USER)")
		case "team":
			pf.StringVar(v, k.Flag, "", "your team, for mailbox commands (default: $AGENTMSG_TEAM, else the team of the agent session you run in)")
		default:
			// Validated by config.Set, which names the key and the rule;
			// typed here only so that --help says what a value looks like.
			*v = k.Default
			pf.Var(&typedString{v, k.Type}, k.Flag, usage)
		}
	}
	pf.BoolVar(&f.JSON, "json", false, "print one JSON document on stdout")
	pf.BoolVarP(&g.verbose, "verbose", "v", false, "log what happens on stderr")

	f.Config = func() (*config.Loaded, error) { return loadConfig(f, root, g) }
	if f.Dispatcher == nil {
		f.Dispatcher = func() (*dispatch.Dispatcher, error) { return newDispatcher(f) }
	}
	if f.Mailbox == nil {
		f.Mailbox = func() (*mailbox.Store, error) {
			s := mailbox.Default(f.LookupEnv)
			if err := s.Check(); err != nil { // a root others control is refused
				return nil, err
			}
			return s, nil
		}
	}
	if f.Identity == nil {
		f.Identity = onceIdentity(f)
	}
	if f.Sender == nil {
		f.Sender = func(ctx context.Context) (string, string, error) { return detectSender(ctx, f) }
	}

	root.AddCommand(
		NewCmdSend(f, nil),
		NewCmdBroadcast(f, nil),
		NewCmdList(f, nil),
		NewCmdDeliver(f, nil),
		NewCmdReply(f),
		NewCmdHooks(f),
		NewCmdHook(f),
		NewCmdRead(f),
		NewCmdDoctor(f),
		NewCmdConfig(f),
		NewCmdCompletion(f),
	)
	root.AddCommand(mailboxCommands(f)...)
	root.AddCommand(NewCmdMCP(f))
	root.AddCommand(lifecycleCommands(f)...)
	root.SetHelpCommand(newCmdHelp())
	strictGroups(root)
	return root
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
func loadConfig(f *Factory, root *cobra.Command, g *globalFlags) (*config.Loaded, error) {
	cfg, err := config.Load(f.LookupEnv, "")
	if err != nil {
		return nil, err
	}
	// Socket flags first: setting one clears the other layer's opposite.
	for _, k := range config.Keys() {
		fl := root.PersistentFlags().Lookup(k.Flag)
		if fl == nil || !fl.Changed {
			continue
		}
		if err := cfg.Set(k.Key, *g.values[k.Key], config.FlagSource(k.Key)); err != nil {
			return nil, err
		}
	}
	return cfg, nil
}

// detectSender is the upper-cased name in message ids: MSG_<SENDER>_<hex>.
func detectSender(ctx context.Context, f *Factory) (string, string, error) {
	id, err := f.Identity(ctx)
	if err != nil {
		return "", "", err
	}
	return id.Sender, id.Source, nil
}

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
