package hosts

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmsg/agentmsg/target"
)

// Handler is the daemon's side of a link: what it does with the packets
// that arrive, a batch at a time, in the order they were sent. An error
// leaves the packet, and those after it, on the bus, to be handed over
// again; a packet is acknowledged only after Flush.
type Handler interface {
	// Message records a message to one of this host's agents (once, by
	// id: it may be handed over twice).
	Message(ctx context.Context, p Packet) error
	// Event records a state change of a message this host sent.
	Event(ctx context.Context, p Packet) error
	// Flush makes what the batch recorded durable, and may then act on
	// it (deliver the messages).
	Flush(ctx context.Context) error
}

// Options configure a host's link.
type Options struct {
	// Name is this host's.
	Name string
	// Dir keeps the embedded server's streams (the outbox; alone, the bus).
	Dir string
	// URL is the bus: a NATS server or cluster ("nats://a:4222,nats://b:4222"
	// or tls://...). "" is the embedded server: one machine, no port.
	URL string
	// NkeyFile holds this host's user seed (agentmsg hosts add writes it);
	// CAFile the certificate authority of the bus's TLS certificates;
	// TLSServerName the name to check them against when URL's host is not
	// (an SSH tunnel's 127.0.0.1).
	NkeyFile, CAFile, TLSServerName string
	// Replicas of this host's stream on the bus (a cluster keeps it on
	// that many servers); 0 is 1.
	Replicas int
	Handler  Handler
	// Agents lists this host's agents for its presence; nil lists none.
	Agents func(ctx context.Context) []string
	// Logf hears what goes wrong on the link (a reconnect, a refused packet).
	Logf func(format string, args ...any)
}

// Link is a running host's connection to the bus: its outbox, forwarder,
// inbound consumer and presence.
type Link struct {
	opts  Options
	local *Embedded
	lnc   *nats.Conn
	ljs   jetstream.JetStream
	box   jetstream.Stream
	// On the embedded server: the hosts seen on the bus, and what is
	// known of each message sent to another host.
	seen, sent jetstream.KeyValue
	bus        *nats.Conn
	bjs        jetstream.JetStream
	alone      bool

	doorbell chan struct{}
	cancel   context.CancelFunc
	done     sync.WaitGroup

	// What waits in the outbox for each host (see Send), and one sender
	// at a time per host on the way around it.
	outMu   sync.Mutex
	waiting map[string]int
	sending map[string]*sync.Mutex
	stuck   map[string]bool // the bus refused the last packet for the host

	mu sync.Mutex
	// watchers hear the reports of a copy (Watch), by Copy.Key.
	watchers map[string][]*watcher
	ready    bool // this host's stream and consumer are on the bus
	lastErr  string
	// announced: the agents this host last announced (leave keeps them);
	// hasAnnounced: it has announced itself since it started.
	announced    []string
	hasAnnounced bool
	// kv is the presence bucket, once looked up (bucket).
	kv jetstream.KeyValue
	// busClock relates the bus's clock to this host's (presence ages).
	busClock busClock
	// beats are the heartbeats heard; listening, whether this host's
	// subscription to them is made.
	beats     beats
	listening bool
	// others are the agents other hosts' entries listed when last read.
	others map[string][]string
}

// AnnounceEvery is how often a host puts its presence on the bus.
const AnnounceEvery = 3 * time.Second

// Timings of the link.
const (
	publishTimeout = 5 * time.Second
	// busTimeout bounds one request to the bus on the way of a packet (a
	// publish, a look at this host's stream): a healthy bus answers in
	// milliseconds. A cluster coming back from a partition stored a packet
	// and lost its ack, and the forwarder waited out 5 s per try while the
	// bus was already back; with this, it tries again within a second.
	busTimeout = time.Second
	// A retry waits from retryMin, doubling up to retryMax: a bus back
	// from a partition takes packets again the moment its cluster has
	// re-elected its leaders, and a forwarder (or a reader) asleep for 2 s
	// more kept 1,000 queued messages waiting for it. A try that finds the
	// bus still away costs a request that waits busTimeout, so the tries
	// space themselves.
	retryMin       = 100 * time.Millisecond
	retryMax       = 250 * time.Millisecond
	presenceEvery  = AnnounceEvery
	presenceMaxAge = 4 * presenceEvery // a host silent longer is down
	outboxKeep     = 30 * 24 * time.Hour
	busDedupWindow = time.Hour
)

// Open opens this host's link: the embedded server and its outbox at
// once, the bus in the background (a bus that cannot be reached now is
// reached when it can; sends wait in the outbox meanwhile). Start starts
// moving packets.
func Open(ctx context.Context, opts Options) (*Link, error) {
	if err := target.CheckHost(opts.Name); err != nil {
		return nil, err
	}
	if opts.Handler == nil {
		return nil, errors.New("hosts: a link needs a handler")
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	local, err := StartEmbedded(opts.Dir)
	if err != nil {
		return nil, err
	}
	l := &Link{opts: opts, local: local, doorbell: make(chan struct{}, 1), watchers: map[string][]*watcher{},
		waiting: map[string]int{}, sending: map[string]*sync.Mutex{}, stuck: map[string]bool{}}
	fail := func(err error) (*Link, error) {
		l.closeConns()
		return nil, err
	}
	if l.lnc, err = local.Connect("agentmsg-" + opts.Name); err != nil {
		return fail(err)
	}
	if l.ljs, err = jetstream.New(l.lnc); err != nil {
		return fail(err)
	}
	if l.box, err = l.ljs.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name: outboxStream, Subjects: []string{"outbox.>"}, Storage: jetstream.FileStorage,
		MaxAge: outboxKeep, Duplicates: busDedupWindow,
	}); err != nil {
		return fail(fmt.Errorf("the outbox under %s: %w", opts.Dir, err))
	}
	waiting, err := l.countWaiting(ctx)
	if err != nil {
		return fail(fmt.Errorf("the outbox under %s: %w", opts.Dir, err))
	}
	if l.seen, err = keyValue(ctx, l.ljs, jetstream.KeyValueConfig{Bucket: seenBucket, History: 1, Storage: jetstream.FileStorage}); err != nil {
		return fail(err)
	}
	if l.sent, err = keyValue(ctx, l.ljs, jetstream.KeyValueConfig{Bucket: sentBucket, History: 1, Storage: jetstream.FileStorage, TTL: sentKeep}); err != nil {
		return fail(err)
	}
	if err := l.sendCutOff(ctx, waiting); err != nil {
		// The link opens all the same: what is not sent again is where
		// it was (its record says outbox), and the log says why.
		opts.Logf("hosts: sending again what an earlier run recorded but may not have handed over: %v", err)
	}
	if opts.URL == "" {
		l.bus, l.bjs, l.alone = l.lnc, l.ljs, true
	} else if l.bus, err = l.dialBus(); err != nil {
		return fail(err)
	} else if l.bjs, err = jetstream.New(l.bus); err != nil {
		return fail(err)
	}
	return l, nil
}

// Start runs the link in the background until Close: the forwarder, the
// inbound consumer and the presence. The handler may be handed packets
// from then on, so it is started once the handler is ready for them.
func (l *Link) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	for _, run := range []func(context.Context){l.forward, l.inbound, l.announce} {
		l.done.Add(1)
		go func() {
			defer l.done.Done()
			run(ctx)
		}()
	}
}

// dialBus connects to the configured bus, retrying for as long as the
// link lives: a host starts while its network is down, too.
func (l *Link) dialBus() (*nats.Conn, error) {
	o := l.opts
	return dial(dialOptions{
		URL: o.URL, NkeyFile: o.NkeyFile, CAFile: o.CAFile, TLSServerName: o.TLSServerName,
		Name: "agentmsg-" + o.Name, Inbox: inboxPrefix(o.Name),
		Extra: []nats.Option{
			nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
				l.beats.stop()
				if err != nil {
					o.Logf("hosts: link to the bus down: %v", err)
				}
			}),
			nats.ReconnectHandler(func(*nats.Conn) {
				l.beats.restart()
				l.ring()
			}),
			// What the bus refuses without an answer (a subscription its
			// permissions deny, a slow consumer) is said, not lost.
			nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
				if sub != nil {
					err = fmt.Errorf("%w (subscription %s)", err, sub.Subject)
				}
				l.setErr(fmt.Errorf("the bus: %w", err))
			}),
		},
	})
}

// dialOptions say how to reach the bus, and as whom.
type dialOptions struct {
	URL, NkeyFile, CAFile, TLSServerName string
	// Name is the connection's; Inbox the prefix of its answers, the one
	// its user may subscribe to.
	Name, Inbox string
	// Once: fail when the bus cannot be reached now (a command), instead
	// of trying for as long as the connection lives (a daemon's link).
	Once  bool
	Extra []nats.Option
}

func dial(o dialOptions) (*nats.Conn, error) {
	opts := []nats.Option{
		nats.Name(o.Name),
		nats.RetryOnFailedConnect(!o.Once),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		// A connection that died without a word (a cut cable) is found
		// within seconds, not the default two minutes: the reconnect
		// then comes as soon as the network does, not after TCP's
		// retransmission timer has grown.
		nats.PingInterval(2 * time.Second),
		nats.MaxPingsOutstanding(2),
		nats.ReconnectBufSize(-1), // a publish while down fails at once; the outbox keeps it
		// The servers in the order given: a host's own (or nearest) first,
		// never a random one across a link that can be cut.
		nats.DontRandomize(),
		nats.CustomInboxPrefix(o.Inbox),
	}
	if o.NkeyFile != "" {
		opt, err := nats.NkeyOptionFromSeed(o.NkeyFile)
		if err != nil {
			return nil, fmt.Errorf("the key %s: %w", o.NkeyFile, err)
		}
		opts = append(opts, opt)
	}
	if o.CAFile != "" || o.TLSServerName != "" {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: o.TLSServerName}
		if o.CAFile != "" {
			pem, err := os.ReadFile(o.CAFile)
			if err != nil {
				return nil, fmt.Errorf("the bus's certificate authority: %w", err)
			}
			cfg.RootCAs = x509.NewCertPool()
			if !cfg.RootCAs.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("the bus's certificate authority %s holds no PEM certificate", o.CAFile)
			}
		}
		opts = append(opts, nats.Secure(cfg))
	}
	nc, err := nats.Connect(o.URL, append(opts, o.Extra...)...)
	if err != nil {
		return nil, fmt.Errorf("the bus at %s: %w", o.URL, err)
	}
	return nc, nil
}

// Name is this host's.
func (l *Link) Name() string { return l.opts.Name }

// Alone reports whether this host is on no bus but its own.
func (l *Link) Alone() bool { return l.alone }

// Up reports whether the bus is reachable and this host's stream is on it.
func (l *Link) Up() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ready && l.bus.IsConnected()
}

// Close stops the link: what waits in the outbox stays there.
func (l *Link) Close() {
	if l.cancel != nil {
		l.cancel()
	}
	l.done.Wait()
	l.leave() // after the announcer stopped: nothing announces it up again
	l.closeConns()
}

func (l *Link) closeConns() {
	if l.bus != nil && l.bus != l.lnc {
		l.bus.Close()
	}
	if l.lnc != nil {
		l.lnc.Close()
	}
	l.local.Close()
}

// ring wakes the forwarder.
func (l *Link) ring() {
	select {
	case l.doorbell <- struct{}{}:
	default:
	}
}

// Send carries p to host p.To, and returns once a stream has it on disk:
// the bus's stream of that host when nothing waits for it in the outbox
// (one trip, no wait for the forwarder), else, or when the bus does not
// take it at once, this host's outbox, for the forwarder to carry behind
// what waits there (the order per host is kept). p.From is this host.
func (l *Link) Send(ctx context.Context, p Packet) error {
	p.From = l.opts.Name
	if err := p.check(); err != nil {
		return err
	}
	data, err := encode(p)
	if err != nil {
		return err
	}
	one := l.sender(p.To)
	one.Lock()
	defer one.Unlock()
	if p.nonce == "" {
		p.nonce = nonce()
	}
	dedup := p.dedupID(p.nonce)
	if l.waitingFor(p.To) == 0 && l.Up() {
		err := l.publish(ctx, p.Kind, p.To, data, dedup)
		if err == nil {
			return nil
		}
		l.setStuck(p.To, true)
		// Into the outbox after all: if the bus stored it but its ack
		// was lost, the forwarder's copy has the same id, and the bus
		// drops it.
	}
	msg := &nats.Msg{Subject: outboxSubject(p.Kind, p.To), Data: data, Header: nats.Header{}}
	msg.Header.Set(jetstream.MsgIDHeader, dedup)
	l.addWaiting(p.To, 1)
	if _, err := l.ljs.PublishMsg(ctx, msg); err != nil {
		l.addWaiting(p.To, -1)
		return fmt.Errorf("the outbox: %w", err)
	}
	l.ring()
	return nil
}

// Moving reports whether packets for host go out now: the link is up and
// the bus took the last packet for it (or none was refused yet). A send
// whose packet waits in the outbox while they do not has no verdict to
// wait for.
func (l *Link) Moving(host string) bool {
	if !l.Up() {
		return false
	}
	l.outMu.Lock()
	defer l.outMu.Unlock()
	return !l.stuck[host]
}

func (l *Link) setStuck(host string, stuck bool) {
	l.outMu.Lock()
	defer l.outMu.Unlock()
	if stuck {
		l.stuck[host] = true
	} else {
		delete(l.stuck, host)
	}
}

// sender is the lock of sends to host.
func (l *Link) sender(host string) *sync.Mutex {
	l.outMu.Lock()
	defer l.outMu.Unlock()
	m := l.sending[host]
	if m == nil {
		m = &sync.Mutex{}
		l.sending[host] = m
	}
	return m
}

// waitingFor is how many packets for host wait in the outbox.
func (l *Link) waitingFor(host string) int {
	l.outMu.Lock()
	defer l.outMu.Unlock()
	return l.waiting[host]
}

func (l *Link) addWaiting(host string, n int) {
	l.outMu.Lock()
	defer l.outMu.Unlock()
	l.waiting[host] += n
	if l.waiting[host] <= 0 {
		delete(l.waiting, host)
	}
}

// countWaiting counts what an earlier run left in the outbox, per host,
// and returns the Nats-Msg-Ids of those packets.
func (l *Link) countWaiting(ctx context.Context) (map[string]bool, error) {
	info, err := l.box.Info(ctx)
	if err != nil {
		return nil, err
	}
	ids := map[string]bool{}
	for seq := info.State.FirstSeq; info.State.Msgs > 0 && seq <= info.State.LastSeq; seq++ {
		raw, err := l.box.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if p, err := decode(raw.Data); err == nil {
			l.addWaiting(p.To, 1)
			ids[raw.Header.Get(jetstream.MsgIDHeader)] = true
		}
	}
	return ids, nil
}

// Watch hears the reports that arrive of copy c (only from c's host, and
// only once c is recorded as sent: RecordSent) until stop is called. The
// channel holds the latest report (by Seq): one a newer one replaced is
// not needed, and none is lost for want of room.
func (l *Link) Watch(c Copy) (reports <-chan Packet, stop func()) {
	w := &watcher{ch: make(chan Packet, 1)}
	key := c.Key()
	l.mu.Lock()
	l.watchers[key] = append(l.watchers[key], w)
	l.mu.Unlock()
	return w.ch, func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		list := l.watchers[key]
		for i, x := range list {
			if x == w {
				l.watchers[key] = append(list[:i], list[i+1:]...)
				break
			}
		}
		if len(l.watchers[key]) == 0 {
			delete(l.watchers, key)
		}
	}
}

// watcher is one Watch: its channel, and the newest report it was told
// (a report comes twice, by the doorbell and from the stream).
type watcher struct {
	ch   chan Packet
	seq  int
	told bool
}

// tell hands a report to those watching its copy that were told none as
// new: in place of the one waiting in the channel, which is older.
func (l *Link) tell(p Packet) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, w := range l.watchers[p.Copy().Key()] {
		if w.told && p.Event.Seq <= w.seq {
			continue
		}
		w.seq, w.told = p.Event.Seq, true
		select {
		case <-w.ch:
		default:
		}
		w.ch <- p // room for one: only tell sends, under l.mu
	}
}

// backoff waits before a retry, longer each time up to retryMax; false
// when ctx ended.
func backoff(ctx context.Context, wait *time.Duration) bool {
	if *wait == 0 {
		*wait = retryMin
	}
	d := *wait
	*wait = min(*wait*2, retryMax)
	return sleep(ctx, d)
}

func (l *Link) setErr(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	if msg != "" && msg != l.lastErr {
		l.opts.Logf("hosts: %s", msg)
	}
	l.lastErr = msg
}

// LastError is what last went wrong on the link, "" when nothing has.
func (l *Link) LastError() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastErr
}
