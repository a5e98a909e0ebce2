// Package cmd is agentmsg's command line: it parses flags, calls the
// packages that decide, and prints what they report.
package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/charmbracelet/log"
	"github.com/spf13/cobra"

	"github.com/agentmsg/agentmsg/alerts"
	"github.com/agentmsg/agentmsg/app"
	"github.com/agentmsg/agentmsg/config"
	"github.com/agentmsg/agentmsg/internal/buildinfo"
	"github.com/agentmsg/agentmsg/service"
)

// FrontEnds are the other front ends the CLI starts: main hands them in,
// since no front end imports another.
type FrontEnds struct {
	MCP   MCPServer // agentmsg mcp
	Serve Daemon    // agentmsg serve
	Top   TopUI     // agentmsg top
}

// MCPServer serves the MCP tools to one caller over in and out until in
// ends or ctx does; orchestrator adds the lead's tools. mcpserver.Serve is
// one; main hands it to the CLI.
type MCPServer func(ctx context.Context, svc *service.Service, orchestrator bool, in io.Reader, out io.Writer) error

// TopUI runs the terminal UI (agentmsg top) for svc until the person
// quits or ctx ends. tui.Run is one; main hands it to the CLI.
type TopUI func(ctx context.Context, svc *service.Service, opts TopUIOptions) error

// TopUIOptions are what the terminal UI is run with (tui.RunOptions, field
// for field).
type TopUIOptions struct {
	In  io.Reader
	Out io.Writer
	// Plain writes what changes as lines of text, for a screen reader,
	// and reads commands as lines; no screen is drawn.
	Plain bool
	// NoColor draws without colour (NO_COLOR).
	NoColor bool
	// Rules say when an alert fires; Notifier tells the world of it.
	Rules    alerts.Rules
	Notifier alerts.Teller
}

// Main runs agentmsg with the process's arguments and returns its exit
// code. A command that a running daemon can serve is forwarded to it
// (unless --direct or AGENTMSG_DIRECT=1): the same command, run there.
func Main(fe FrontEnds) int {
	ctx, stop := signalContext(context.Background())
	defer stop()
	io := SystemIO()
	args := os.Args[1:]
	if code, ok := forwardBounded(ctx, io, args); ok {
		return code
	}
	f := NewFactory(io, os.LookupEnv)
	f.ServeMCP, f.Serve, f.Top = fe.MCP, fe.Serve, fe.Top
	f.Exit = os.Exit
	return Run(ctx, f, args)
}

// forwardBounded is forward, ended by the backstop stopGrace after a
// signal if the daemon has not answered by then (the daemon ends the
// command it runs as this process would have, and says so).
func forwardBounded(ctx context.Context, io *IOStreams, args []string) (int, bool) {
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-done:
			return
		case <-ctx.Done():
		}
		select {
		case <-done:
		case <-time.After(stopGrace + 5*time.Second):
			fmt.Fprintf(io.ErrOut, "agentmsg: the daemon did not end the command within %s of %v; exiting now: what became of a message: agentmsg --direct log --id ID\n",
				stopGrace+5*time.Second, context.Cause(ctx))
			os.Exit(ExitError)
		}
	}()
	return forward(ctx, io, os.LookupEnv, os.Environ(), args)
}

// RunIn runs a command line in this process for another (the daemon, for
// a client that forwarded it): with the caller's environment and streams,
// over this process's own tmux clients.
func RunIn(ctx context.Context, r app.Run) int {
	io := &IOStreams{In: r.Stdin, Out: r.Stdout, ErrOut: r.Stderr, InTTY: r.InTTY, ErrTTY: r.ErrTTY}
	f := NewFactory(io, r.LookupEnv)
	f.Tmux = r.Tmux
	f.Hosts = r.Hosts
	return Run(ctx, f, r.Args)
}

// Run executes one command line and returns the exit code.
func Run(ctx context.Context, f *Factory, args []string) int {
	root := NewCmdRoot(f)
	root.SetArgs(args)
	helpRefused := strictHelp(root)
	err := root.ExecuteContext(ctx)
	f.life.end()
	if err == nil {
		err = helpRefused()
	}
	// A bad flag stops parsing before --json may have been read; the
	// caller still asked for a JSON document.
	if fe := (flagError{}); errors.As(err, &fe) && !f.JSON {
		f.JSON = jsonRequested(args)
	}
	return reportError(f, err)
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
Codex, Gemini CLI, Qwen Code, Factory's Droid, aider, or any program with a
prompt) running in a tmux session named agent-<team>-<name>, submits it, and
confirms that the agent really received it. It never types into a dialog,
never touches a person's half-typed text, and never merges two senders'
messages.

Each message is tagged MSG_<SENDER>_<8 hex> so the receiver can answer it.

` + exitCodesHelp,
		Example: `  agentmsg list
  agentmsg send alpha ana "please review PR 12"
  echo "long text" | agentmsg send alpha ana
  agentmsg broadcast alpha "stand-up in 5 minutes"
  agentmsg broadcast --all "wrap up: the build is green"
  agentmsg -S /tmp/demo/sock --json send alpha ana "hi"`,
		Version:       buildinfo.Get().String(),
		SilenceErrors: true,
		SilenceUsage:  true,
		PersistentPreRunE: func(c *cobra.Command, args []string) error {
			f.Command = c.CommandPath()
			if g.verbose {
				f.Log.SetLevel(log.DebugLevel)
			}
			// A bad configuration is each command's to report; its bound
			// is then the defaults'.
			settings := config.Defaults()
			if cfg, err := f.Config(); err == nil {
				settings = cfg.Settings
			}
			f.life = startLife(c, settings, f.IO.ErrOut, f.Exit)
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
	pf.Bool("direct", false, "run here even when a daemon (agentmsg serve) runs, which would run the command otherwise")
	pf.BoolVarP(&g.verbose, "verbose", "v", false, "log what happens on stderr")

	// Read once per process, after the flags are parsed: every command and
	// the service it builds see one configuration.
	var (
		cfgOnce sync.Once
		cfg     *config.Loaded
		cfgErr  error
	)
	f.Config = func() (*config.Loaded, error) {
		cfgOnce.Do(func() { cfg, cfgErr = loadConfig(f, root, g) })
		return cfg, cfgErr
	}
	// The parts, in dependency order, each on first use; what a test set
	// stays.
	app.Wire(&f.Wiring, f.Env)
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
		NewCmdAlerts(f, nil),
		NewCmdTop(f, nil),
	)
	root.AddCommand(mailboxCommands(f)...)
	root.AddCommand(NewCmdMCP(f))
	root.AddCommand(NewCmdServe(f, nil))
	root.AddCommand(NewCmdEvents(f, nil))
	root.AddCommand(lifecycleCommands(f)...)
	root.AddCommand(NewCmdTask(f), NewCmdWorkflow(f), NewCmdWhoami(f, nil), NewCmdPrime(f, nil), NewCmdHosts(f, nil))
	root.SetHelpCommand(newCmdHelp())
	strictGroups(root)
	refuseDeliveryFlags(root)
	return root
}
