package serve

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/agentmsg/agentmsg/app"
	"github.com/agentmsg/agentmsg/config"
	"github.com/agentmsg/agentmsg/lock"
	"github.com/agentmsg/agentmsg/service"
	"github.com/agentmsg/agentmsg/tmux"
)

// backend is what the daemon builds once per tmux server and shares
// between every caller: the server's client (fast through one control
// client), its mailbox, dispatcher, courier and lifecycle manager. Each
// request gets a service.Service for its caller over them.
type backend struct {
	env     app.Env // the daemon's own environment and configuration
	version string
	// control: keep one control client per server (the fast path); off,
	// every command is an ordinary tmux process.
	control bool

	// hosts is the daemon's link to other hosts (nil until it is open).
	hosts service.Hosts

	mu      sync.Mutex
	clients map[string]*tmux.Exec // by canonical socket
	ctls    []*tmux.Control
	places  map[string]*app.Wiring
}

func newBackend(env app.Env, version string, control bool) *backend {
	b := &backend{env: env, version: version, control: control,
		clients: map[string]*tmux.Exec{}, places: map[string]*app.Wiring{}}
	b.env.Tmux = b.client
	return b
}

// client is the daemon's one client of server: an Exec whose command lists
// go through a control client while it is attached (tmux.Control keeps one,
// and only one, under its flock), through ordinary processes otherwise.
func (b *backend) client(server tmux.Server, bin string) (*tmux.Exec, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if c, ok := b.clients[server.Socket]; ok {
		return c, nil
	}
	c, err := tmux.NewExec(server, bin)
	if err != nil {
		return nil, err
	}
	if b.control {
		ctl, err := tmux.StartControl(server, c.Bin(), lock.ForServer(server.Socket, b.env.Locks()))
		if err != nil {
			return nil, err
		}
		if err := c.UseControl(ctl); err != nil {
			ctl.Close()
			return nil, err
		}
		b.ctls = append(b.ctls, ctl)
	}
	b.clients[server.Socket] = c
	return c, nil
}

// close detaches every control client, cleanly.
func (b *backend) close() {
	b.mu.Lock()
	ctls := b.ctls
	b.ctls = nil
	b.mu.Unlock()
	var wg sync.WaitGroup
	for _, ctl := range ctls {
		wg.Go(func() { _ = ctl.Close() })
	}
	wg.Wait()
}

// Caller is who a request speaks for, and on which tmux server.
type Caller struct {
	// From is the sender's name ("lead", "ana-2"); "" is the daemon's
	// configured one, else "app".
	From string `json:"from,omitempty"`
	// Team is the caller's team, for what needs one (reply, inbox, ...).
	Team string `json:"team_of_caller,omitempty"`
	// Socket and SocketName choose the tmux server as -S and -L do; ""
	// is the daemon's (its configuration, else tmux's default).
	Socket     string `json:"socket,omitempty"`
	SocketName string `json:"socket_name,omitempty"`
}

// errCaller is a caller the daemon cannot serve as asked.
var errCaller = errors.New("invalid caller")

// envFor is the daemon's environment with the caller's server chosen.
func (b *backend) envFor(c Caller) (app.Env, error) {
	if c.Socket == "" && c.SocketName == "" {
		return b.env, nil
	}
	cfg := b.env.Config.Clone() // never the daemon's own: others read it meanwhile
	src := config.Source("request")
	if c.Socket != "" {
		if err := cfg.Set("socket", c.Socket, src); err != nil {
			return app.Env{}, err
		}
	}
	if c.SocketName != "" {
		if err := cfg.Set("socket_name", c.SocketName, src); err != nil {
			return app.Env{}, err
		}
	}
	env := b.env
	env.Config = cfg
	return env, nil
}

// parts builds, or finds, the shared wiring of env's server: all of it
// at once (app.Wiring would build each part on first use), so that a
// server the daemon cannot serve is refused at the first request and
// tried again at the next.
func (b *backend) parts(env app.Env) (*app.Wiring, error) {
	server, err := env.Server()
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	p, ok := b.places[server.Socket]
	b.mu.Unlock()
	if ok {
		return p, nil
	}
	p = app.Wire(&app.Wiring{}, func() (app.Env, error) { return env, nil })
	if _, err := p.Mailbox(); err != nil {
		return nil, err
	}
	if _, err := p.Dispatcher(); err != nil {
		return nil, err
	}
	if _, err := p.Lifecycle(); err != nil {
		return nil, err
	}
	b.mu.Lock()
	if q, ok := b.places[server.Socket]; ok {
		p = q // another request built it meanwhile
	} else {
		b.places[server.Socket] = p
	}
	b.mu.Unlock()
	return p, nil
}

// service is the service for caller c over its server's shared parts.
func (b *backend) service(c Caller) (*service.Service, error) {
	env, err := b.envFor(c)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errCaller, err)
	}
	// The daemon's own AGENTMSG_FROM and AGENTMSG_TEAM are no caller's
	// (app.Ask.Daemon); no tmux is asked, so no context is needed.
	id, err := env.Identity(context.Background(), app.Ask{From: c.From, Team: c.Team, Daemon: true})
	if ie := (*app.IdentityError)(nil); errors.As(err, &ie) {
		field := ie.Field
		if field == "sender" {
			field = "from"
		}
		return nil, fmt.Errorf("%w: %s: %w", errCaller, field, ie.Err)
	}
	if err != nil {
		return nil, err
	}
	p, err := b.parts(env)
	if err != nil {
		return nil, err
	}
	return p.Service(id, b.version, b.remote())
}

// snapshot is the servers the daemon has served so far (its own, and
// every server a request or a forwarded command reached), each with its
// shared parts, by socket.
func (b *backend) snapshot() map[string]*app.Wiring {
	b.mu.Lock()
	sockets := make([]string, 0, len(b.clients))
	for sock := range b.clients {
		sockets = append(sockets, sock)
	}
	b.mu.Unlock()
	out := make(map[string]*app.Wiring, len(sockets))
	for _, sock := range sockets {
		env, err := b.envFor(Caller{Socket: sock})
		if err != nil {
			continue
		}
		if p, err := b.parts(env); err == nil {
			out[sock] = p
		}
	}
	return out
}

// remote is the link to other hosts, as a service sees it (nil: none).
func (b *backend) remote() service.Hosts {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.hosts
}
