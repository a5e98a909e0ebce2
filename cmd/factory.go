package cmd

import (
	"context"
	"io"
	"os"
	"sync"
	"time"

	"github.com/charmbracelet/log"
	"golang.org/x/term"

	"github.com/agentmsg/agentmsg/config"
	"github.com/agentmsg/agentmsg/courier"
	"github.com/agentmsg/agentmsg/delivery"
	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/lock"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
	"github.com/agentmsg/agentmsg/profile"
	"github.com/agentmsg/agentmsg/receipt"
	"github.com/agentmsg/agentmsg/service"
	"github.com/agentmsg/agentmsg/target"
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
	IO        *IOStreams
	LookupEnv func(string) (string, bool)
	Log       *log.Logger

	// Config is the effective configuration: defaults, file, environment,
	// then the flags given on this command line.
	Config func() (*config.Loaded, error)
	// Dispatcher talks to the configured tmux server.
	Dispatcher func() (*dispatch.Dispatcher, error)
	// Sender is who this process speaks for, and where that came from.
	Sender func(ctx context.Context) (name, source string, err error)
	// Identity is the caller's team and name, for mailbox commands.
	Identity func(ctx context.Context) (Identity, error)
	// Mailbox is the durable store of messages.
	Mailbox func() (*mailbox.Store, error)
	// JSON is set by --json.
	JSON bool
	// ServeMCP is the MCP server `agentmsg mcp` runs (main sets it).
	ServeMCP service.MCPServer
	// Top is the terminal UI `agentmsg top` runs (main sets it).
	Top service.Top

	svcOnce sync.Once
	svc     *service.Service
	svcErr  error
	// Command is the command running ("agentmsg send"), set once the
	// command line is parsed; lock files name their holder with it.
	Command string
}

// locks is the runtime lock directory, with this process named as the
// holder of the locks it takes: the pane locks of a server whose socket
// sits in a shared directory (see lock.ForServer).
func (f *Factory) locks() lock.Dir {
	d := lock.DefaultDir(f.LookupEnv)
	d.Owner = f.Command
	return d
}

// realClock is wall time.
type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }
func (realClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// newDispatcher builds a dispatcher for the configured server.
func newDispatcher(f *Factory) (*dispatch.Dispatcher, error) {
	cfg, err := f.Config()
	if err != nil {
		return nil, err
	}
	s := cfg.Settings
	server, err := tmux.ResolveServer(s.Socket, s.SocketName, f.LookupEnv)
	if err != nil {
		return nil, usageError{err}
	}
	bin, _, err := tmux.Binary(s.Tmux, server, f.LookupEnv)
	if err != nil {
		return nil, err
	}
	client, err := tmux.NewExec(server, bin)
	if err != nil {
		return nil, err
	}
	opts := delivery.DefaultOptions()
	opts.ReadyTimeout, opts.ConfirmTimeout, opts.Retries = s.ReadyTimeout, s.ConfirmTimeout, s.Retries
	opts.Settle, opts.Repress, opts.Poll = s.Settle, s.Repress, s.Poll
	// One pace for every delivery of the process: a deliver pass waits for
	// hundreds of agents at once.
	opts.Pace = &delivery.Pace{}
	// Receipts from the agent's own prompt-submit hook (agentmsg hooks
	// install), each naming the pane that received the message.
	receipts := &receipt.Log{Path: receipt.DefaultPath(mailbox.DefaultRoot(f.LookupEnv))}
	received := func(id message.ID, pane tmux.Pane) bool {
		return receipts.Has(id, receipt.Recipient{Pane: pane.ID, ServerPID: pane.Server.PID, Socket: server.Socket})
	}
	f.Log.Debug("tmux server", "socket", server.Socket)
	if f.Log.GetLevel() <= log.DebugLevel {
		client.Trace = func(command string, took time.Duration, err error) {
			f.Log.Debug("tmux", "cmd", command, "took", took, "err", err)
		}
	}
	profiles, err := agentProfiles(cfg)
	if err != nil {
		return nil, err
	}
	pick, err := profilePicker(profiles, "")
	if err != nil {
		return nil, err
	}
	// The caller's own pane, when it runs on the server we talk to.
	var self string
	if c := tmux.CallerFrom(f.LookupEnv); c.In(server) {
		self = c.Pane
	}
	return &dispatch.Dispatcher{
		Self:        self,
		Profile:     pick,
		Known:       knownAgent(profiles),
		Received:    received,
		Registered:  registeredPane(f, server),
		PaneFor:     func(t target.Target) string { return cfg.Panes[t.String()] },
		Tmux:        client,
		Locks:       lock.ForServer(server.Socket, f.locks()),
		Clock:       realClock{},
		Opts:        opts,
		Concurrency: s.Concurrency,
	}, nil
}

// knownAgent says whether a pane runs an agent CLI that profiles know, by
// its foreground command and processes: what tells the agent's pane from a
// shell or a dev server beside it.
func knownAgent(profiles []profile.Profile) func(tmux.Pane) (string, bool) {
	return func(pane tmux.Pane) (string, bool) {
		procs := func() [][]string { return profile.Procs{}.Foreground(pane.PID) }
		p, _ := profile.DetectPane(profiles, profile.Pane{Command: pane.Command, Procs: procs}, nil)
		return p.Name, p.Name != "generic" && p.Name != "shell"
	}
}

// registeredPane is the pane spawn recorded for an agent on server, read
// from the mailbox's registry.
func registeredPane(f *Factory, server tmux.Server) func(target.Target) (dispatch.Registration, bool) {
	return func(t target.Target) (dispatch.Registration, bool) {
		store, err := f.Mailbox()
		if err != nil {
			return dispatch.Registration{}, false
		}
		team, agent := courier.Inbox(t)
		rec, err := store.RegisteredAgent(team, agent)
		if err != nil || rec.Pane == "" {
			return dispatch.Registration{}, false
		}
		if sock, err := tmux.CanonicalSocket(rec.Socket); err != nil || sock != server.Socket {
			return dispatch.Registration{}, false
		}
		return dispatch.Registration{Pane: rec.Pane, PID: rec.PID}, true
	}
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
		var store *mailbox.Store
		if store, f.svcErr = f.Mailbox(); f.svcErr != nil {
			return
		}
		f.svc = &service.Service{
			Team: id.Team, Name: id.Name, Sender: id.Sender,
			Dispatcher: f.Dispatcher,
			Courier:    f.courier,
			Store:      store,
			Lifecycle:  onceLifecycle(f),
			Version:    version,
		}
	})
	return f.svc, f.svcErr
}
