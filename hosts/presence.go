package hosts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// HostInfo is one host as its presence says.
type HostInfo struct {
	Name   string   `json:"name"`
	Agents []string `json:"agents"`
	// Seen is when the host last announced itself; Up, whether that was
	// recent enough to count it linked.
	Seen time.Time `json:"seen"`
	Up   bool      `json:"up"`
	// Self marks this host.
	Self bool `json:"self,omitempty"`
	// Waiting counts the packets in this host's outbox, and Problem says
	// what last went wrong on the link (Self only).
	Waiting uint64 `json:"waiting,omitempty"`
	Problem string `json:"problem,omitempty"`
}

// presence is what a host puts in the bucket.
type presence struct {
	Agents []string `json:"agents"`
	// At is the host's own clock when it announced: read by agentmsg
	// before presences were aged on the bus's clock (busClock), so still
	// written.
	At time.Time `json:"at"`
	// Left: the host's daemon stopped (cleanly) at At; it is down at
	// once, not only once its presence is old.
	Left bool `json:"left,omitempty"`
}

// up reports whether a host whose presence is p, put on the bus age ago,
// counts as linked now.
func (p presence) up(age time.Duration) bool { return !p.Left && age < presenceMaxAge }

// busClock is the bus's time of this host's last presence (the server's
// timestamp of its entry) and this host's monotonic time then: the age of
// another host's entry is taken on the bus's clock alone (the bus's time
// now, carried forward from then, minus its timestamp), so that neither
// host's clock matters. A host whose clock ran
// 12 s behind looked away to every other host for ever.
type busClock struct {
	mu   sync.Mutex
	bus  time.Time // zero until this host's first presence is read back
	mono time.Time // time.Now() when its put was answered (monotonic)
}

// note relates the bus's timestamp of this host's entry to local time at
// the answer to its put.
func (c *busClock) note(bus, answered time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.bus, c.mono = bus, answered
}

// age is how long ago, on the bus's clock, an entry was put at stamp (the
// server's timestamp); this host's clock stands in until this host's own
// entry has been read back once.
func (c *busClock) age(stamp time.Time) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bus.IsZero() {
		return time.Since(stamp)
	}
	return c.bus.Add(time.Since(c.mono)).Sub(stamp)
}

// leave tells the bus that this host's daemon stops: senders on other
// hosts then keep what they send for it without waiting for a verdict.
// Best effort, within busTimeout: a daemon that dies says nothing, and
// its presence ages instead.
func (l *Link) leave() {
	if l.bus == nil || !l.bus.IsConnected() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), busTimeout)
	defer cancel()
	kv, err := l.bucket(ctx)
	if err != nil {
		return
	}
	l.beat(true)
	l.mu.Lock()
	agents := l.announced
	l.mu.Unlock()
	// Its agents stay listed: what is sent to them waits on the bus.
	if data, err := json.Marshal(presence{Agents: agents, At: time.Now().UTC(), Left: true}); err == nil {
		_, _ = kv.Put(ctx, l.opts.Name, data)
	}
}

// announce puts this host's presence in the bucket every few seconds.
func (l *Link) announce(ctx context.Context) {
	t := time.NewTicker(presenceEvery)
	defer t.Stop()
	for {
		if err := l.announceOnce(ctx); err != nil && l.Up() {
			l.setErr(fmt.Errorf("announcing this host: %w", err))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// bucket is the bus's presence bucket, made when missing; looked up once
// (a request to the bus), and again after an announcement failed.
func (l *Link) bucket(ctx context.Context) (jetstream.KeyValue, error) {
	l.mu.Lock()
	kv := l.kv
	l.mu.Unlock()
	if kv != nil {
		return kv, nil
	}
	ctx, cancel := context.WithTimeout(ctx, publishTimeout)
	defer cancel()
	kv, err := l.presence(ctx)
	if err == nil {
		l.mu.Lock()
		l.kv = kv
		l.mu.Unlock()
	}
	return kv, err
}

// presence opens the presence bucket on the bus, made where it is missing
// and this host's user may make it (else the operator does), and checked
// otherwise: one that lets a packet roll it up (remove every other host's
// entry) is not used.
func (l *Link) presence(ctx context.Context) (jetstream.KeyValue, error) {
	if _, _, err := ensure(ctx, l.bjs, presenceStream(l.opts.Replicas), false); err != nil {
		return nil, fmt.Errorf("the presence bucket: %w", err)
	}
	return l.bjs.KeyValue(ctx, presenceBucket)
}

// keyValue opens the bucket cfg names, making it when missing (and taking
// the one another host made meanwhile).
func keyValue(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	kv, err := js.KeyValue(ctx, cfg.Bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = js.CreateKeyValue(ctx, cfg)
		if errors.Is(err, jetstream.ErrBucketExists) {
			kv, err = js.KeyValue(ctx, cfg.Bucket)
		}
	}
	return kv, err
}

func (l *Link) announceOnce(ctx context.Context) error {
	if !l.bus.IsConnected() {
		return errors.New("the bus is not reachable")
	}
	if !l.listening {
		if err := l.listen(); err != nil {
			return fmt.Errorf("hearing the other hosts: %w", err)
		}
		l.listening = true
	}
	// First, and whatever becomes of the entry: a cluster that cannot
	// store it now (electing its leader) still carries the heartbeat.
	l.beat(false)
	kv, err := l.bucket(ctx)
	if err != nil {
		return err
	}
	l.mu.Lock()
	agents, first := l.announced, !l.hasAnnounced
	l.mu.Unlock()
	// On time, with the agents found last time: listing them waits for
	// tmux, which a host typing a thousand messages keeps busy for
	// seconds, and a host late to announce looks away to a send that
	// waits for it (missed announcements). The agents are listed after,
	// and announced again when they changed; before the first
	// announcement, first.
	if first && l.opts.Agents != nil {
		agents = l.opts.Agents(ctx)
	}
	if err := l.put(ctx, kv, agents); err != nil {
		if gone(err) {
			l.mu.Lock()
			l.kv = nil // looked up (or made) again next time
			l.mu.Unlock()
		}
		return err
	}
	if !first && l.opts.Agents != nil {
		if now := l.opts.Agents(ctx); !slices.Equal(now, agents) {
			if err := l.put(ctx, kv, now); err != nil {
				return err
			}
		}
	}
	ctx, cancel := context.WithTimeout(ctx, publishTimeout)
	defer cancel()
	names, err := l.presenceNames(ctx)
	if err != nil {
		return err
	}
	return l.remember(ctx, names)
}

// put puts this host's presence with agents in the bucket, and relates
// the bus's clock to this host's by reading the entry back.
func (l *Link) put(ctx context.Context, kv jetstream.KeyValue, agents []string) error {
	data, err := json.Marshal(presence{Agents: agents, At: time.Now().UTC()})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, publishTimeout)
	defer cancel()
	rev, err := kv.Put(ctx, l.opts.Name, data)
	if err != nil {
		return err
	}
	// After the put, not before: the server stamped the entry before its
	// answer came, so the bus's time is taken a little late, and other
	// hosts' entries look a little younger, never older, than they are.
	answered := time.Now()
	l.mu.Lock()
	l.announced, l.hasAnnounced = agents, true
	l.mu.Unlock()
	// Only this very entry: a read answered by a server behind (a direct
	// get from a replica) would carry an older stamp.
	if e, err := kv.Get(ctx, l.opts.Name); err == nil && e.Revision() == rev {
		l.busClock.note(e.Created(), answered)
	}
	return nil
}

// gone reports whether err says the presence bucket is not on the bus (it
// is looked up, or made, again), not that the bus did not answer in time:
// a cluster electing the bucket's leader (its server cut off) does not
// answer a lookup for seconds, and each listing of the hosts waited for
// one (issue 30, finding 5).
func gone(err error) bool {
	return errors.Is(err, jetstream.ErrStreamNotFound) || errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders)
}

// seenBucket, on the embedded server, keeps the names of the hosts this
// one has seen on the bus: a send to one of them is accepted into the
// outbox while the bus cannot be asked.
const seenBucket = "agentmsg_seen_hosts"

// remember keeps names in the seen bucket.
func (l *Link) remember(ctx context.Context, names []string) error {
	for _, name := range names {
		if _, err := l.seen.Get(ctx, name); errors.Is(err, jetstream.ErrKeyNotFound) {
			if _, err := l.seen.Put(ctx, name, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// presenceNames are the hosts with an entry in the presence bucket, read
// from its stream's subjects: listing a bucket's keys makes an ordered
// consumer, which can hang for a long while after a server of the
// cluster died (seen in e2e/netlab).
func (l *Link) presenceNames(ctx context.Context) ([]string, error) {
	s, err := l.bjs.Stream(ctx, "KV_"+presenceBucket)
	if err != nil {
		return nil, err
	}
	prefix := "$KV." + presenceBucket + "."
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(prefix+">"))
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(info.State.Subjects))
	for subj := range info.State.Subjects {
		names = append(names, strings.TrimPrefix(subj, prefix))
	}
	slices.Sort(names)
	return names, nil
}

// agentsTimeout bounds the read of a host's entry when its heartbeats say
// whether it is up: the entry gives only its agents, and a read can go to
// a server cut off a moment ago and wait for nothing.
const agentsTimeout = 300 * time.Millisecond

// seenNames are the hosts this one has seen on the bus.
func (l *Link) seenNames(ctx context.Context) ([]string, error) {
	keys, err := l.seen.ListKeys(ctx)
	if err != nil {
		return nil, err
	}
	var names []string
	for k := range keys.Keys() {
		names = append(names, k)
	}
	slices.Sort(names)
	return names, nil
}

// Hosts lists the hosts on the bus, this one first. When the bus cannot
// be read, it lists this host alone and says why.
func (l *Link) Hosts(ctx context.Context) ([]HostInfo, error) {
	self := HostInfo{Name: l.opts.Name, Self: true, Up: l.Up(), Seen: time.Now().UTC(), Problem: l.LastError()}
	if l.opts.Agents != nil {
		self.Agents = l.opts.Agents(ctx)
	}
	if info, err := l.box.Info(ctx); err == nil {
		self.Waiting = info.State.Msgs
	}
	out := []HostInfo{self}
	if !l.bus.IsConnected() {
		return out, errors.New("the bus is not reachable")
	}
	kv, err := l.bucket(ctx)
	if err != nil {
		return out, err
	}
	// The names from the bucket's stream, which its leader answers; while
	// the cluster elects one (its server cut off), those this host has
	// seen: each entry is read from any server that has the bucket.
	nctx, cancel := context.WithTimeout(ctx, busTimeout)
	names, err := l.presenceNames(nctx)
	cancel()
	if err == nil {
		_ = l.remember(ctx, names) // a send to one is taken while the bus is down
	} else if names, err = l.seenNames(ctx); err != nil {
		return out, err
	}
	ctx, cancel = context.WithTimeout(ctx, publishTimeout)
	defer cancel()
	for _, name := range names {
		if name == l.opts.Name {
			continue
		}
		at, up, sure := l.beats.of(l.opts.Name, name)
		wait := busTimeout
		if sure {
			wait = agentsTimeout // only its agents hang on the entry
		}
		gctx, cancel := context.WithTimeout(ctx, wait)
		p, age, err := l.presenceOf(gctx, kv, name)
		cancel()
		if err == nil {
			l.noteAgents(name, p.Agents)
		}
		switch {
		case err == nil && sure:
			out = append(out, HostInfo{Name: name, Agents: p.Agents, Seen: at.UTC(), Up: up})
		case err == nil:
			out = append(out, HostInfo{Name: name, Agents: p.Agents, Seen: time.Now().UTC().Add(-age), Up: p.up(age)})
		case sure:
			// Its heartbeat, though not its entry (the bucket cannot be
			// read now): its agents as this host last saw them.
			out = append(out, HostInfo{Name: name, Agents: l.lastAgents(name), Seen: at.UTC(), Up: up})
		}
	}
	return out, nil
}

// Heard reports when host last announced itself on the bus, and whether
// that makes it up (as Hosts says); an error when the bus cannot be asked
// within busTimeout (a link cut, the bucket's server away).
func (l *Link) Heard(ctx context.Context, host string) (seen time.Time, up bool, err error) {
	if !l.bus.IsConnected() {
		return seen, false, errors.New("the bus is not reachable")
	}
	if at, up, sure := l.beats.of(l.opts.Name, host); sure {
		return at.UTC(), up, nil
	}
	ctx, cancel := context.WithTimeout(ctx, busTimeout)
	defer cancel()
	kv, err := l.bucket(ctx)
	if err != nil {
		return seen, false, err
	}
	p, age, err := l.presenceOf(ctx, kv, host)
	if err != nil {
		return seen, false, err
	}
	return time.Now().UTC().Add(-age), p.up(age), nil
}

// presenceOf is host's entry in the presence bucket kv, and how long ago
// it was put there (on the bus's clock).
func (l *Link) presenceOf(ctx context.Context, kv jetstream.KeyValue, host string) (presence, time.Duration, error) {
	var p presence
	e, err := kv.Get(ctx, host)
	if err != nil {
		return p, 0, err
	}
	return p, l.busClock.age(e.Created()), json.Unmarshal(e.Value(), &p)
}

// knownTimeout bounds asking the bus about a host this one has not seen:
// a server cut off from its cluster answers nothing for a long time.
const knownTimeout = 2 * time.Second

// Known reports whether host has ever joined the bus (this host counts):
// what this host saw there before, at once, else what the bus says now.
func (l *Link) Known(ctx context.Context, host string) (bool, error) {
	if host == l.opts.Name {
		return true, nil
	}
	if _, err := l.seen.Get(ctx, host); err == nil {
		return true, nil
	} else if !errors.Is(err, jetstream.ErrKeyNotFound) {
		return false, err
	}
	if !l.bus.IsConnected() {
		return false, errors.New("the bus is not reachable")
	}
	ctx, cancel := context.WithTimeout(ctx, knownTimeout)
	defer cancel()
	kv, err := l.bucket(ctx)
	if err != nil {
		return false, err
	}
	if _, err := kv.Get(ctx, host); errors.Is(err, jetstream.ErrKeyNotFound) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	_, _ = l.seen.Put(ctx, host, nil)
	return true, nil
}

// noteAgents keeps the agents host's entry listed, for a listing that
// cannot read it (lastAgents).
func (l *Link) noteAgents(host string, agents []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.others == nil {
		l.others = map[string][]string{}
	}
	l.others[host] = agents
}

func (l *Link) lastAgents(host string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.others[host]
}
