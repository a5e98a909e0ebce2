// Package relay is the daemon's side of the link between hosts (package
// hosts carries the packets): what other hosts send to this host's agents
// is recorded through service.Receiver, typed by this host's own deliver
// passes and each state told back to its sender (receive.go); this host's
// sends to agents elsewhere wait for that host's verdict, asking after a
// host that says nothing (send.go); and the SSH tunnels of boxes that
// reach the bus only through this host run as children that end with the
// daemon (tunnel.go, mortal_*.go). The daemon (package serve) opens it
// with its wiring (Options) and closes it; nothing here serves HTTP.
package relay

import (
	"context"
	"path/filepath"
	"sync"
	"time"

	"github.com/agentmsg/agentmsg/config"
	"github.com/agentmsg/agentmsg/courier"
	"github.com/agentmsg/agentmsg/eventlog"
	"github.com/agentmsg/agentmsg/hosts"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
	"github.com/agentmsg/agentmsg/service"
)

// Relay is the daemon's side of package hosts: it records what other
// hosts send to this host's agents and has it delivered by this host's
// own engine, tells the senders what became of it, and carries this host's
// messages to agents elsewhere (service.Hosts). It keeps the SSH tunnels
// of boxes that reach the bus only through this host too (tunnel.go).
type Relay struct {
	opts Options
	ctx  context.Context // the daemon's life
	link *hosts.Link
	// Messages from other hosts whose state the sender has not yet heard
	// to the end, by id.
	mu      sync.Mutex
	origins map[originKey]*origin
	poke    chan struct{}
	soon    *time.Timer // pokeReportSoon's poke to come
	// The batch being received (the link hands packets over from one
	// goroutine): what it recorded, and the teams whose agents have new
	// messages to type once it is durable.
	batch   *service.Receiver
	deliver map[[2]string]bool // socket, team
	// read is where the report loop's last read of each inbox ended: the
	// next reads only what was appended since.
	read map[[2]string]mailbox.Position
	// seen: the agents' sessions a batch listed a moment ago.
	seen service.SessionsSeen
	// gone: the hosts last found not answering (see away), by name.
	gone map[string]presenceAnswer
	// asked: the last answer of the bus about each host's presence
	// (see ask), shared by the sends that wait for that host.
	asked map[string]presenceAnswer
	// nudged: when each team was last given a pass for a message from
	// another host that waited (see nudge).
	nudged map[string]time.Time
}

// Options are the relay's wiring, set once by the daemon.
type Options struct {
	// Config is [hosts]; ReadyTimeout the configured ready timeout, which
	// a send to another host waits by when its caller set none.
	Config       config.HostsSettings
	ReadyTimeout time.Duration
	// Root is the mailbox's: the outbox is kept in Root/nats, the
	// tunnels' control sockets in Root/ssh.
	Root string
	// Service is the daemon's own caller's service (this host's server
	// and mailbox), through which messages from other hosts are recorded
	// and read.
	Service func() (*service.Service, error)
	// Deliver starts a deliver pass over team on the server at socket
	// (the daemon runs one at a time per team; one asked for while one
	// runs runs after it).
	Deliver func(socket, team string, known courier.Listing)
	// Looked is an agent's state ("ready", ...) at the daemon's watcher's
	// last look at the server at socket.
	Looked func(socket, session string) string
	// Events is the event log, where what other hosts report of this
	// host's messages is written.
	Events *eventlog.Log
	// Logf reports what goes wrong in the background.
	Logf func(format string, args ...any)
}

// presenceAnswer is what the bus said of a host's presence (when it last
// announced itself, whether that counts as up, or why it could not say),
// and when it said it.
type presenceAnswer struct {
	at, seen time.Time
	up       bool
	err      error
}

// originKey names a message from another host in one inbox: a
// broadcast's copies to two agents here share its id.
type originKey struct {
	id          message.ID
	team, agent string
}

// origin is a message from another host, and what that host last heard.
type origin struct {
	host, team, agent string
	// latest is its delivery here as last read (at first, as it was
	// recorded: pending, or inbox); reported, the state its host heard.
	latest   mailbox.Delivery
	reported string
}

// told reports whether a message's state ends its story for its sender:
// nothing changes it but a person (retry, handled), who then sees it on
// this host. Not recorded (not_found) ends it too.
func told(state string) bool { return !mailbox.DeliveryState(state).Outstanding() }

// Open starts this host's link, as opts.Config configures it, the report
// loop and the tunnels, until ctx ends or Close.
func Open(ctx context.Context, opts Options) (*Relay, error) {
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	cfg := opts.Config
	name := cfg.Name
	if name == "" {
		name = hosts.DefaultName()
	}
	h := &Relay{opts: opts, ctx: ctx, origins: map[originKey]*origin{}, poke: make(chan struct{}, 1), read: map[[2]string]mailbox.Position{}, gone: map[string]presenceAnswer{}, asked: map[string]presenceAnswer{}, nudged: map[string]time.Time{}}
	url := cfg.NATS
	link, err := hosts.Open(ctx, hosts.Options{
		Name: name, Dir: filepath.Join(opts.Root, "nats"), URL: url,
		NkeyFile: cfg.NkeyFile, CAFile: cfg.CAFile, TLSServerName: cfg.TLSServerName, Replicas: cfg.Replicas,
		Handler: h, Agents: h.agents, Logf: opts.Logf,
	})
	if err != nil {
		return nil, err
	}
	h.link = link
	h.recover()
	link.Start()
	go h.report(ctx)
	go keepTunnels(ctx, opts.Root, cfg, opts.Logf)
	return h, nil
}

// Close ends the link.
func (h *Relay) Close() {
	if h != nil && h.link != nil {
		h.link.Close()
	}
}

// Name is this host's (service.Hosts).
func (h *Relay) Name() string { return h.link.Name() }

// List is every host on the bus (service.Hosts).
func (h *Relay) List(ctx context.Context) ([]hosts.HostInfo, error) {
	return h.link.Hosts(ctx)
}

// Sent is what this host keeps of the copies of message id it sent to
// other hosts, or of every message (service.Hosts).
func (h *Relay) Sent(ctx context.Context, id message.ID) ([]hosts.Sent, error) {
	if id == "" {
		return h.link.AllSent(ctx)
	}
	return h.link.LookupSent(ctx, string(id))
}

// LookupSent is what is kept of message id's copies sent from here to
// other hosts: what service.Service.Sent asks of the link, so that
// agentmsg log --id, run in the daemon, finds a message that went to
// another host (its send's hint names that command).
func (h *Relay) LookupSent(ctx context.Context, id string) ([]hosts.Sent, error) {
	return h.link.LookupSent(ctx, id)
}

// agents are this host's agents on its own server, for its presence.
func (h *Relay) agents(ctx context.Context) []string {
	svc, err := h.opts.Service()
	if err != nil {
		return nil
	}
	d, err := svc.Dispatcher()
	if err != nil {
		return nil
	}
	ts, err := d.Targets(ctx, "")
	if err != nil {
		return nil
	}
	out := make([]string, 0, len(ts))
	for _, t := range ts {
		out = append(out, t.String())
	}
	return out
}
