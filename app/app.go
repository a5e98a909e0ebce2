// Package app is agentmsg's composition root: it builds the parts one
// caller needs from its environment and configuration, the same way for
// every front end (the CLI, the MCP server, the daemon, the terminal UI):
// which tmux server and binary, that server's mailbox, the dispatcher with
// its profiles, locks and receipts, the courier and the lifecycle manager
// (Wiring, in that order, each on first use), who the caller is
// (Env.Identity) and the service.Service over them. Front ends translate
// their input into calls on package service; what they share is built
// here, once, so that they cannot differ.
package app

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/charmbracelet/log"

	"github.com/agentmsg/agentmsg/config"
	"github.com/agentmsg/agentmsg/courier"
	"github.com/agentmsg/agentmsg/delivery"
	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/eventlog"
	"github.com/agentmsg/agentmsg/identity"
	"github.com/agentmsg/agentmsg/lifecycle"
	"github.com/agentmsg/agentmsg/lock"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
	"github.com/agentmsg/agentmsg/profile"
	"github.com/agentmsg/agentmsg/receipt"
	"github.com/agentmsg/agentmsg/service"
	"github.com/agentmsg/agentmsg/target"
	"github.com/agentmsg/agentmsg/tmux"
)

// Env is what a caller's parts are built from.
type Env struct {
	// LookupEnv reads the caller's environment ($TMUX, $AGENTMSG_HOME,
	// XDG dirs, ...): os.LookupEnv for a process, the forwarded
	// environment of a client for the daemon.
	LookupEnv func(string) (string, bool)
	// Config is the effective configuration (file, environment, flags).
	Config *config.Loaded
	// Command names the holder in the lock files it takes ("agentmsg send").
	Command string
	Log     *log.Logger
	// Tmux, when set, is the process's own client of a server (the
	// daemon's, shared by every caller and fast through its control
	// client); nil: a new client of ordinary tmux processes.
	Tmux func(server tmux.Server, bin string) (*tmux.Exec, error)
	// Life is the life of the command (or daemon) the parts work for:
	// when it ends (a signal, the command's time bound), their waits for
	// the mailbox's locks end too (mailbox.Store.Life). nil never ends.
	Life context.Context
}

// Server is the tmux server the caller talks to: -S/-L (socket,
// socket_name), else the one it runs in ($TMUX), else tmux's default.
func (e Env) Server() (tmux.Server, error) {
	s := e.Config.Settings
	server, err := tmux.ResolveServer(s.Socket, s.SocketName, e.LookupEnv)
	if err != nil {
		return tmux.Server{}, fmt.Errorf("%w: %w", config.ErrInvalid, err)
	}
	return server, nil
}

// Mailbox opens the mailbox of the caller's tmux server: its agents' teams
// live apart from every other server's (mailbox.Place), and every change
// is an event in <root>/events. A root others control is refused; the
// layout before places moves to the places it belongs to on first use.
func (e Env) Mailbox() (*mailbox.Store, error) {
	s := mailbox.Default(e.LookupEnv)
	s.Life = e.Life
	// The test suites check every change of a message's state against the
	// documented state machine (mailbox.Transitions); never set in use.
	if v, _ := e.LookupEnv("AGENTMSG_CHECK_TRANSITIONS"); v == "1" {
		s.CheckTransitions = true
	}
	if err := s.Open(); err != nil {
		return nil, err
	}
	server, err := e.Server()
	if err != nil {
		return nil, err
	}
	s.Place = mailbox.Place{Host: HostName(), Socket: server.Socket}
	s.Events = e.Events(s.Root)
	if err := s.MigrateLegacy(); err != nil {
		return nil, fmt.Errorf("moving the mailbox to its per-server layout: %w", err)
	}
	return s, nil
}

// Events is the event log of the mailbox at root, never made again once
// root has gone. Events it cannot write are told in the log once it can
// (eventlog.TypeLost) and warned of in the caller's log: on a command's
// stderr, in the daemon's log. Its lock waits end with the caller's life.
func (e Env) Events(root string) *eventlog.Log {
	l := &eventlog.Log{Dir: filepath.Join(root, "events"), Within: root, Life: e.Life}
	if e.Log != nil {
		l.Warn = e.Log.Warn
	}
	return l
}

// HostName names this machine in a mailbox place.
func HostName() string {
	h, err := os.Hostname()
	if err != nil {
		return ""
	}
	return h
}

// Client is a client of the caller's tmux server: the process's own when
// it has one (Env.Tmux), else a new one.
func (e Env) Client(server tmux.Server) (*tmux.Exec, error) {
	bin, _, err := tmux.Binary(e.Config.Settings.Tmux, server, e.LookupEnv)
	if err != nil {
		return nil, err
	}
	if e.Tmux != nil {
		return e.Tmux(server, bin)
	}
	client, err := tmux.NewExec(server, bin)
	if err != nil {
		return nil, err
	}
	if e.Log != nil && e.Log.GetLevel() <= log.DebugLevel {
		client.Trace = func(command string, took time.Duration, err error) {
			e.Log.Debug("tmux", "cmd", command, "took", took, "err", err)
		}
	}
	return client, nil
}

// Locks is the runtime lock directory, naming this caller as the holder
// of the locks it takes.
func (e Env) Locks() lock.Dir {
	d := lock.DefaultDir(e.LookupEnv)
	d.Owner = e.Command
	return d
}

// dispatcher builds the dispatcher of the caller's server: its profiles
// (what spawn --agent registered reads that agent's pane), its pane
// choices, the mailbox's registry (store may be nil), the hooks' receipts,
// the locks beside the socket.
func (e Env) dispatcher(store *mailbox.Store) (*dispatch.Dispatcher, error) {
	s := e.Config.Settings
	server, err := e.Server()
	if err != nil {
		return nil, err
	}
	client, err := e.Client(server)
	if err != nil {
		return nil, err
	}
	opts := delivery.DefaultOptions()
	opts.ReadyTimeout, opts.ConfirmTimeout, opts.Retries = s.ReadyTimeout, s.ConfirmTimeout, s.Retries
	opts.Settle, opts.Repress, opts.Poll = s.Settle, s.Repress, s.Poll
	// One pace for every delivery of the process: a deliver pass waits for
	// hundreds of agents at once.
	opts.Pace = &delivery.Pace{}
	profiles, err := Profiles(e.Config)
	if err != nil {
		return nil, err
	}
	pick, err := ProfilePicker(profiles, "")
	if err != nil {
		return nil, err
	}
	// The caller's own pane, when it runs on the server we talk to.
	var self string
	if c := tmux.CallerFrom(e.LookupEnv); c.In(server) {
		self = c.Pane
	}
	if e.Log != nil {
		e.Log.Debug("tmux server", "socket", server.Socket)
	}
	return &dispatch.Dispatcher{
		Self:        self,
		Profile:     pick,
		Named:       func(name string) (profile.Profile, error) { return Lookup(profiles, name) },
		Known:       knownAgent(profiles),
		Received:    received(mailbox.DefaultRoot(e.LookupEnv), server),
		Registered:  registeredPane(store, server, profiles),
		PaneFor:     func(t target.Target) string { return e.Config.Panes[t.String()] },
		Tmux:        client,
		Locks:       lock.ForServer(server.Socket, e.Locks()),
		Clock:       Clock{},
		Opts:        opts,
		Concurrency: s.Concurrency,
	}, nil
}

// received is the receipts of the agents' prompt-submit hooks (agentmsg
// hooks install) under the mailbox root, each naming the pane it came from.
func received(root string, server tmux.Server) func(message.ID, tmux.Pane) bool {
	receipts := &receipt.Log{Path: receipt.DefaultPath(root)}
	return func(id message.ID, pane tmux.Pane) bool {
		return receipts.Has(id, receipt.Recipient{Pane: pane.ID, ServerPID: pane.Server.PID, Socket: server.Socket})
	}
}

// knownAgent says whether a pane runs an agent CLI that profiles know, by
// its foreground command and processes: what tells the agent's pane from a
// shell, a dev server or a python3 REPL beside it (the builtin python
// profile reads any python3, an agent or not).
func knownAgent(profiles []profile.Profile) func(tmux.Pane) (string, bool) {
	return func(pane tmux.Pane) (string, bool) {
		procs := func() [][]string { return profile.Procs{}.Foreground(pane.PID) }
		p, _ := profile.DetectPane(profiles, profile.Pane{Command: pane.Command, Procs: procs}, nil)
		return p.Name, !p.PromptOnly
	}
}

// registeredPane is the pane spawn recorded for an agent on server, and
// the kind it was told (spawn --agent) with its profile, read from the
// mailbox's registry.
func registeredPane(store *mailbox.Store, server tmux.Server, profiles []profile.Profile) func(target.Target) (dispatch.Registration, bool) {
	return func(t target.Target) (dispatch.Registration, bool) {
		if store == nil {
			return dispatch.Registration{}, false
		}
		team, agent := target.Inbox(t)
		rec, err := store.RegisteredAgent(team, agent)
		if err != nil || rec.Pane == "" {
			return dispatch.Registration{}, false
		}
		if sock, err := tmux.CanonicalSocket(rec.Socket); err != nil || sock != server.Socket {
			return dispatch.Registration{}, false
		}
		reg := dispatch.Registration{Pane: rec.Pane, PID: rec.PID, Kind: rec.Kind}
		if p, ok := profile.LookupIn(profiles, rec.Kind); ok && rec.Kind != "" {
			reg.Profile = &p
		}
		return reg, true
	}
}

// courier joins the mailbox to the dispatchers it is used over, with the
// configured retention.
func (e Env) courier(store *mailbox.Store) *courier.Courier {
	s := e.Config.Settings
	return &courier.Courier{Store: store, Locks: lock.ForMailbox(store.Root, store.Base, e.Command),
		Keep: mailbox.Retention{MaxCount: s.KeepCount, MaxAge: s.KeepAge}, Hint: service.AnswerHint}
}

// lifecycle builds the manager that starts, stops and watches agents.
func (e Env) lifecycle(store *mailbox.Store, d *dispatch.Dispatcher, cr *courier.Courier) (*lifecycle.Manager, error) {
	sessions, ok := d.Tmux.(tmux.Sessions)
	if !ok {
		var err error
		if sessions, err = e.Client(d.Tmux.Server()); err != nil {
			return nil, err
		}
	}
	m := &lifecycle.Manager{Tmux: sessions, Dispatch: d, Courier: cr, Store: store, Now: time.Now,
		Revoked: &identity.Tokens{Path: identity.DefaultPath(store.Root)}}
	if e.Config.Serve.TCP != "" {
		// Agent CLIs reach the daemon's MCP endpoint there: each agent
		// spawned gets its own token, for an entry agents share.
		m.Tokens = &identity.Tokens{Path: identity.DefaultPath(store.Root)}
	}
	return m, nil
}

// Clock is wall time.
type Clock struct{}

func (Clock) Now() time.Time { return time.Now() }
func (Clock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Run is one command line to run in a process that is not the caller's
// (the daemon runs a client's agentmsg command in itself, over its shared
// tmux clients): the caller's arguments, environment and streams.
type Run struct {
	Args      []string
	LookupEnv func(string) (string, bool)
	Stdin     io.Reader
	Stdout    io.Writer
	Stderr    io.Writer
	// InTTY, ErrTTY: whether the caller's stdin and stderr are terminals.
	InTTY, ErrTTY bool
	// Tmux is the running process's own client of a server (Env.Tmux).
	Tmux func(server tmux.Server, bin string) (*tmux.Exec, error)
	// Hosts is the running process's link to other hosts (nil: none).
	Hosts service.Hosts
}

// Runner runs a command line as the CLI would, and returns its exit code.
type Runner func(ctx context.Context, r Run) int

// DaemonSocket is where the daemon of the mailbox at root listens (agentmsg
// serve), and where the CLI looks for it.
func DaemonSocket(root string) string { return filepath.Join(root, "serve.sock") }
