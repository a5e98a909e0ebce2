package hosts

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// recorder is a daemon's side that records what arrives, once by sending
// host and id.
type recorder struct {
	mu       sync.Mutex
	messages []Packet
	events   []Packet
	byID     map[string]bool
	arrivals map[string]int // every message packet handed over, by id
}

func (r *recorder) Message(_ context.Context, p Packet) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byID == nil {
		r.byID, r.arrivals = map[string]bool{}, map[string]int{}
	}
	r.arrivals[p.ID]++
	if key := p.From + " " + p.ID; !r.byID[key] {
		r.byID[key] = true
		r.messages = append(r.messages, p)
	}
	return nil
}

func (r *recorder) Event(_ context.Context, p Packet) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, p)
	return nil
}

func (r *recorder) Flush(context.Context) error { return nil }

func (r *recorder) ids() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, p := range r.messages {
		out = append(out, p.ID)
	}
	return out
}

// busServer is a NATS server with JetStream on a loopback port: the bus
// of the hosts in a test. port 0 picks one.
func busServer(t *testing.T, dir string, port int) *server.Server {
	t.Helper()
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: port, JetStream: true, StoreDir: dir, NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("bus server not ready")
	}
	return s
}

// openLink opens and starts host name's link to the bus at url, closed
// when the test ends.
func openLink(t *testing.T, name, url string, h Handler) *Link {
	t.Helper()
	l := startLink(t, Options{Name: name, URL: url, Handler: h})
	t.Cleanup(l.Close)
	return l
}

// startLink opens and starts a link as o says, in a directory of the
// test's unless o names one, logging to the test; the caller closes it.
func startLink(t *testing.T, o Options) *Link {
	t.Helper()
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	o.Logf = func(f string, a ...any) { t.Logf(o.Name+": "+f, a...) }
	l, err := Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	l.Start()
	return l
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func message(to string, i int) Packet {
	return Packet{Kind: KindMessage, To: to, ID: fmt.Sprintf("MSG_LEAD_%08x", i),
		Message: &RemoteMessage{Team: "t", Agent: "ana", Sender: "lead", Tag: "LEAD", Text: fmt.Sprint("hello ", i)}}
}

// A message crosses from one host to another in order, and the event the
// receiver sends back reaches the sender's watcher.
func TestMessagesCrossInOrderAndEventsComeBack(t *testing.T) {
	bus := busServer(t, t.TempDir(), -1)
	defer bus.Shutdown()
	var ra, rb recorder
	a := openLink(t, "a", bus.ClientURL(), &ra)
	b := openLink(t, "b", bus.ClientURL(), &rb)
	waitFor(t, "both links up", func() bool { return a.Up() && b.Up() })
	ctx := context.Background()
	const n = 50
	for i := range n {
		if err := a.Send(ctx, message("b", i)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "every message at b", func() bool { return len(rb.ids()) == n })
	for i, id := range rb.ids() {
		if want := message("b", i).ID; id != want {
			t.Fatalf("message %d at b is %s, want %s (order)", i, id, want)
		}
	}
	sent := Copy{ID: message("b", 7).ID, Host: "b", Team: "t", Agent: "ana"}
	if err := a.RecordSent(ctx, Sent{ID: sent.ID, Host: sent.Host, Team: sent.Team, Agent: sent.Agent, State: StateOutbox}, nil); err != nil {
		t.Fatal(err)
	}
	events, stop := a.Watch(sent)
	defer stop()
	ev := Packet{Kind: KindEvent, To: "a", ID: message("b", 7).ID, Event: &RemoteEvent{Team: "t", Agent: "ana", State: "submitted", Seq: 1}}
	if err := b.Send(ctx, ev); err != nil {
		t.Fatal(err)
	}
	select {
	case p := <-events:
		if p.Event.State != "submitted" || p.From != "b" {
			t.Fatalf("event %+v", p.Event)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no event came back")
	}
	hosts, err := a.Hosts(ctx)
	if err != nil || len(hosts) != 2 || hosts[1].Name != "b" || !hosts[1].Up {
		t.Fatalf("hosts: %+v %v", hosts, err)
	}
}

// A host whose bus is down accepts sends into its outbox; they go out,
// once each and in order, when the bus comes back.
func TestSendsWaitForTheBus(t *testing.T) {
	storeDir := t.TempDir()
	bus := busServer(t, storeDir, -1)
	url := bus.ClientURL()
	_, port, _ := net.SplitHostPort(bus.Addr().String())
	var ra, rb recorder
	aDir := t.TempDir()
	open := func() *Link { return startLink(t, Options{Name: "a", Dir: aDir, URL: url, Handler: &ra}) }
	a := open()
	b := openLink(t, "b", url, &rb)
	waitFor(t, "both links up", func() bool { return a.Up() && b.Up() })
	waitFor(t, "a knows b", func() bool { ok, _ := a.Known(context.Background(), "b"); return ok })
	ctx := context.Background()
	if err := a.Send(ctx, message("b", 0)); err != nil { // straight to the bus
		t.Fatal(err)
	}
	bus.Shutdown()
	bus.WaitForShutdown()
	waitFor(t, "a sees the bus down", func() bool { return !a.Up() })
	if ok, err := a.Known(ctx, "b"); !ok {
		t.Fatalf("a forgot host b while the bus is down: %v", err)
	}
	const n = 20
	for i := 1; i < n/2; i++ {
		if err := a.Send(ctx, message("b", i)); err != nil {
			t.Fatalf("send while the bus is down: %v", err)
		}
	}
	// Restarted with packets in its outbox: a's next sends go behind
	// them, not around them to the bus.
	a.Close()
	a = open()
	defer func() { a.Close() }()
	if w := a.waitingFor("b"); w != n/2-1 {
		t.Fatalf("restarted, a counts %d packets for b in its outbox, want %d", w, n/2-1)
	}
	for i := n / 2; i < n; i++ {
		if err := a.Send(ctx, message("b", i)); err != nil {
			t.Fatalf("send while the bus is down: %v", err)
		}
	}
	var p int
	fmt.Sscan(port, &p)
	bus = busServer(t, storeDir, p)
	defer bus.Shutdown()
	// Sent the moment the link is up, while the outbox still holds the
	// others: behind them.
	waitFor(t, "a up again", a.Up)
	for i := n; i < n+5; i++ {
		if err := a.Send(ctx, message("b", i)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "every message at b after the bus came back", func() bool { return len(rb.ids()) == n+5 })
	for i, id := range rb.ids() {
		if want := message("b", i).ID; id != want {
			t.Fatalf("message %d at b is %s, want %s (order): %v", i, id, want, rb.ids())
		}
	}
	if w := a.waitingFor("b"); w != 0 {
		t.Errorf("a counts %d packets for b in its outbox, which is empty", w)
	}
}

// A packet whose body names another sending host than its subject is
// refused: the subject is what the bus's permissions prove.
func TestAPacketClaimingAnotherHostIsRefused(t *testing.T) {
	bus := busServer(t, t.TempDir(), -1)
	defer bus.Shutdown()
	var rb recorder
	b := openLink(t, "b", bus.ClientURL(), &rb)
	waitFor(t, "b up", b.Up)
	nc, err := nats.Connect(bus.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	forged := message("b", 1)
	forged.From = "c" // sent on a's subject
	data, _ := encode(forged)
	if err := nc.Publish(subject(KindMessage, "b", "a"), data); err != nil {
		t.Fatal(err)
	}
	honest := message("b", 2)
	honest.From = "a"
	data, _ = encode(honest)
	if err := nc.Publish(subject(KindMessage, "b", "a"), data); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the honest packet", func() bool { return len(rb.ids()) == 1 })
	if got := rb.ids()[0]; got != honest.ID {
		t.Fatalf("recorded %s, want only %s", got, honest.ID)
	}
}

// An event sent to a host while its daemon is down reaches it once it is
// back on the same store.
func TestEventsWaitForTheirHost(t *testing.T) {
	bus := busServer(t, t.TempDir(), -1)
	defer bus.Shutdown()
	var ra, rb recorder
	dirA := t.TempDir()
	a := startLink(t, Options{Name: "a", Dir: dirA, URL: bus.ClientURL(), Handler: &ra})
	b := openLink(t, "b", bus.ClientURL(), &rb)
	waitFor(t, "both links up", func() bool { return a.Up() && b.Up() })
	ctx := context.Background()
	if err := a.RecordSent(ctx, Sent{ID: message("b", 1).ID, Host: "b", Team: "t", Agent: "ana", State: StateOutbox}, nil); err != nil {
		t.Fatal(err)
	}
	if err := a.Send(ctx, message("b", 1)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the message at b", func() bool { return len(rb.ids()) == 1 })
	a.Close()
	if err := b.Send(ctx, Packet{Kind: KindEvent, To: "a", ID: message("b", 1).ID, Event: &RemoteEvent{Team: "t", Agent: "ana", State: "submitted", Seq: 1}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // on the bus, for a host that is away
	a = startLink(t, Options{Name: "a", Dir: dirA, URL: bus.ClientURL(), Handler: &ra})
	defer a.Close()
	waitFor(t, "the event at a after its restart", func() bool {
		ra.mu.Lock()
		defer ra.mu.Unlock()
		return len(ra.events) == 1
	})
}

// A host takes the servers in the order its configuration lists them,
// never a random one of them: its own (or nearest) first, so that a cut
// elsewhere leaves it linked. nats.go shuffles them unless told not to.
func TestTheServersAreTriedInTheirOrder(t *testing.T) {
	first := busServer(t, t.TempDir(), -1)
	defer first.Shutdown()
	second := busServer(t, t.TempDir(), -1)
	defer second.Shutdown()
	for range 12 { // shuffled, all twelve on the first: 1 in 4,096
		l := &Link{opts: Options{Name: "h1", URL: second.ClientURL() + "," + first.ClientURL()}}
		nc, err := l.dialBus()
		if err != nil {
			t.Fatal(err)
		}
		got := nc.ConnectedUrl()
		nc.Close()
		if got != second.ClientURL() {
			t.Fatalf("connected to %s, want the first listed, %s", got, second.ClientURL())
		}
	}
}

// A host's presence is aged on the bus's clock, not on the clocks of the
// hosts: one whose clock runs an hour behind is linked to the others, and
// the time it was last heard is this host's time of its last presence.
func TestPresenceIsAgedOnTheBusClock(t *testing.T) {
	bus := busServer(t, t.TempDir(), -1)
	defer bus.Shutdown()
	a := openLink(t, "a", bus.ClientURL(), &recorder{})
	waitFor(t, "a's presence read back", func() bool {
		a.busClock.mu.Lock()
		defer a.busClock.mu.Unlock()
		return !a.busClock.bus.IsZero()
	})
	ctx := context.Background()
	kv, err := a.bucket(ctx)
	if err != nil {
		t.Fatal(err)
	}
	behind, err := json.Marshal(presence{At: time.Now().Add(-time.Hour).UTC()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, "late", behind); err != nil {
		t.Fatal(err)
	}
	seen, up, err := a.Heard(ctx, "late")
	if err != nil || !up || time.Since(seen) > 2*time.Second || time.Since(seen) < -2*time.Second {
		t.Fatalf("a host an hour behind, just heard: seen %s ago, up %v, %v; want up, seen now", time.Since(seen), up, err)
	}
	left, err := json.Marshal(presence{At: time.Now().Add(time.Hour).UTC(), Left: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, "late", left); err != nil {
		t.Fatal(err)
	}
	if _, up, err := a.Heard(ctx, "late"); err != nil || up {
		t.Fatalf("a host that left, its clock an hour ahead: up %v, %v; want down", up, err)
	}
}

func (r *recorder) arrived(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.arrivals[id]
}

// cutOffHosts is host a, which the test opens (and opens again) over one
// directory, and host b, which records what arrives, on one bus.
func cutOffHosts(t *testing.T) (open func() *Link, opts Options, rb *recorder) {
	t.Helper()
	bus := busServer(t, t.TempDir(), -1)
	t.Cleanup(bus.Shutdown)
	rb = &recorder{}
	opts = Options{Name: "a", Dir: t.TempDir(), URL: bus.ClientURL(), Handler: &recorder{}}
	open = func() *Link { return startLink(t, opts) }
	b := openLink(t, "b", bus.ClientURL(), rb)
	waitFor(t, "b up", b.Up)
	return open, opts, rb
}

// recordSentAt records, as the relay does before a send, message i to b
// sent at at, and returns its packet (with the nonce the record keeps).
func recordSentAt(t *testing.T, l *Link, i int, at time.Time) Packet {
	t.Helper()
	p := message("b", i)
	p.Message.Sent = at
	s := Sent{ID: p.ID, Host: "b", Team: "t", Agent: "ana", State: StateOutbox, At: at, SentAt: at}
	if err := l.RecordSent(context.Background(), s, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

// A daemon killed between recording a copy (RecordSent) and handing its
// packet over sends it when its link opens again, ahead of the sends after
// it; a packet that did go, recorded the same way, is not taken twice.
func TestASendCutOffBeforeItsPacketWentGoesWhenTheLinkOpens(t *testing.T) {
	open, opts, rb := cutOffHosts(t)
	a := open()
	waitFor(t, "a up", a.Up)
	ctx := context.Background()
	went := recordSentAt(t, a, 0, time.Now().UTC())
	if err := a.Send(ctx, went); err != nil { // straight to the bus
		t.Fatal(err)
	}
	waitFor(t, "the sent message at b", func() bool { return rb.arrived(went.ID) == 1 })
	cut := recordSentAt(t, a, 1, time.Now().UTC()) // the daemon is killed here
	a.Close()
	a = open()
	after := message("b", 2)
	if err := a.Send(ctx, after); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the cut-off message and the next at b", func() bool { return len(rb.ids()) == 3 })
	if got := rb.ids(); got[1] != cut.ID || got[2] != after.ID {
		t.Fatalf("b got %v: the cut-off message goes ahead of the sends after it", got)
	}
	time.Sleep(500 * time.Millisecond)
	for _, id := range []string{went.ID, cut.ID, after.ID} {
		if n := rb.arrived(id); n != 1 {
			t.Errorf("%s was handed to b %d times, want once (the bus drops a packet it has)", id, n)
		}
	}
	// Reported (as the daemon records what b reports), a copy's packet is
	// no longer kept: opened again (and not started, so that what it
	// would send again stays in its outbox), it has nothing for b.
	for _, p := range []Packet{went, cut} {
		ev := Packet{Kind: KindEvent, From: "b", To: "a", ID: p.ID, Event: &RemoteEvent{Team: "t", Agent: "ana", State: "submitted", Seq: 1, At: time.Now().UTC()}}
		if err := a.RecordReport(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	a.Close()
	opts.Logf = func(f string, args ...any) { t.Logf("a: "+f, args...) }
	a, err := Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if n := a.waitingFor("b"); n != 0 {
		t.Errorf("reported, the copies were put in the outbox again: %d waiting for b", n)
	}
}

// A record older than the bus's memory of ids (busDedupWindow) is not sent
// again: a host that never answers again costs the starts of the hour after
// a send, not every start for a month.
func TestAnOldUnansweredRecordIsNotSentAgain(t *testing.T) {
	open, _, rb := cutOffHosts(t)
	a := open()
	recordSentAt(t, a, 1, time.Now().UTC().Add(-2*busDedupWindow))
	a.Close()
	a = open()
	defer a.Close()
	next := message("b", 2)
	if err := a.Send(context.Background(), next); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the next message at b", func() bool { return rb.arrived(next.ID) == 1 })
	if n := rb.arrived(message("b", 1).ID); n != 0 {
		t.Errorf("a record from %s ago was sent again: handed to b %d times", 2*busDedupWindow, n)
	}
}
