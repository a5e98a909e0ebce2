package cmd

import (
	"context"
	"io"
	"os"
	"sync"

	"github.com/charmbracelet/log"
	"golang.org/x/term"

	"github.com/agentmsg/agentmsg/app"
	"github.com/agentmsg/agentmsg/config"
	"github.com/agentmsg/agentmsg/internal/buildinfo"
	"github.com/agentmsg/agentmsg/service"
	"github.com/agentmsg/agentmsg/tmux"
)

// IOStreams are the process's standard streams, replaceable in tests.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
	// InTTY, ErrTTY: whether stdin / stderr are terminals (for prompts and
	// progress; never for choosing output formats on stdout).
	InTTY, ErrTTY bool
}

// SystemIO is the real process's streams.
func SystemIO() *IOStreams {
	return &IOStreams{
		In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr,
		InTTY:  term.IsTerminal(int(os.Stdin.Fd())),
		ErrTTY: term.IsTerminal(int(os.Stderr.Fd())),
	}
}

// Factory carries what commands need, built lazily so that a flag-parsing
// test never touches tmux or the environment.
type Factory struct {
	// Wiring is the parts commands run on (app.Wiring: the mailbox, the
	// dispatcher, the courier, the lifecycle manager), each built on first
	// use; a test may set one before NewCmdRoot wires the rest over it.
	app.Wiring

	IO        *IOStreams
	LookupEnv func(string) (string, bool)
	Log       *log.Logger

	// Config is the effective configuration: defaults, file, environment,
	// then the flags given on this command line.
	Config func() (*config.Loaded, error)
	// Sender is who this process speaks for, and where that came from.
	Sender func(ctx context.Context) (name, source string, err error)
	// Identity is the caller's team and name, for mailbox commands.
	Identity func(ctx context.Context) (Identity, error)
	// JSON is set by --json.
	JSON bool
	// ServeMCP is the MCP server `agentmsg mcp` runs (main sets it).
	ServeMCP MCPServer
	// Serve is the daemon `agentmsg serve` runs (main sets it).
	Serve Daemon
	// Top is the terminal UI `agentmsg top` runs (main sets it).
	Top TopUI

	svcOnce sync.Once
	svc     *service.Service
	svcErr  error
	// Command is the command running ("agentmsg send"), set once the
	// command line is parsed; lock files name their holder with it.
	Command string
	// Tmux, when set, is the process's own client of a tmux server (the
	// daemon's): see app.Env.Tmux.
	Tmux func(server tmux.Server, bin string) (*tmux.Exec, error)
	// Hosts is the daemon's link to other hosts, when the daemon runs
	// this command (nil otherwise: a message to another host is refused).
	Hosts service.Hosts
	// Exit, when set, ends the process: a command that outstays its life
	// (a signal, its bound) by stopGrace is ended with it. Main sets it;
	// a run inside the daemon has none.
	Exit func(code int)

	// life is the running command's (see startLife).
	life *life
}

// Life is the running command's context: it ends at a signal or at the
// command's time bound, and every wait of the parts built for it ends
// with it. nil before the command line is parsed.
func (f *Factory) Life() context.Context {
	if f.life == nil {
		return nil
	}
	return f.life.ctx
}

// Env is what this process's parts are built from (package app, the one
// composition root every front end uses).
func (f *Factory) Env() (app.Env, error) {
	cfg, err := f.Config()
	if err != nil {
		return app.Env{}, err
	}
	return app.Env{LookupEnv: f.LookupEnv, Config: cfg, Command: f.Command, Log: f.Log, Tmux: f.Tmux, Life: f.Life()}, nil
}

// Service is the caller and the parts that serve it, built once per
// process: every command's operation is a call on it (see package
// service). The team may be empty; an operation that needs one says so.
func (f *Factory) Service(ctx context.Context) (*service.Service, error) {
	f.svcOnce.Do(func() {
		var id Identity
		if id, f.svcErr = f.Identity(ctx); f.svcErr != nil {
			return
		}
		f.svc, f.svcErr = f.Wiring.Service(id, buildinfo.Get().Version, f.Hosts)
	})
	return f.svc, f.svcErr
}
