package hosts

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// attacker is host c's own NATS user, used by hand as a compromised host
// would: every refusal the bus sends without an answer is kept.
type attacker struct {
	t       *testing.T
	nc      *nats.Conn
	js      jetstream.JetStream
	mu      sync.Mutex
	refusal []string
}

func newAttacker(t *testing.T, url, seed string) *attacker {
	t.Helper()
	a := &attacker{t: t}
	opt, err := nats.NkeyOptionFromSeed(seed)
	if err != nil {
		t.Fatal(err)
	}
	a.nc, err = nats.Connect(url, opt, nats.CustomInboxPrefix(inboxPrefix("c")),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			a.mu.Lock()
			a.refusal = append(a.refusal, err.Error())
			a.mu.Unlock()
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.nc.Close)
	a.js, _ = jetstream.New(a.nc)
	return a
}

// refused fails the test unless err says the attempt came to nothing.
func (a *attacker) refused(what string, err error) {
	a.t.Helper()
	if err == nil {
		a.t.Errorf("%s: done", what)
	} else {
		a.t.Logf("%s: refused (%v)", what, err)
	}
}

func (a *attacker) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	a.t.Cleanup(cancel)
	return ctx
}

// A compromised host's user cannot give itself another host's mail, speak
// for another host, keep one out, or touch another's presence: it may
// make and change no stream, consumer or bucket (issue 30, finding 1).
// On 26de3cb its user could update its own stream to source a's, or to
// republish on a subject of another host's, and make a stream holding a
// host's subjects before that host joined.
func TestAHostsUserCanMakeAndChangeNothing(t *testing.T) {
	url, seeds := guardedBus(t)
	var ra, rb recorder
	a := startLink(t, Options{Name: "a", URL: url, NkeyFile: seeds["a"], Handler: &ra})
	t.Cleanup(a.Close)
	b := startLink(t, Options{Name: "b", URL: url, NkeyFile: seeds["b"], Handler: &rb})
	t.Cleanup(b.Close)
	waitFor(t, "both links up", func() bool { return a.Up() && b.Up() })
	waitFor(t, "a's presence", func() bool { ok, _ := b.Known(context.Background(), "a"); return ok })
	c := newAttacker(t, url, seeds["c"])

	own := hostStream("c", 1)
	withSources := own
	withSources.Sources = []*jetstream.StreamSource{{Name: streamName("a")}}
	_, err := c.js.UpdateStream(c.ctx(), withSources)
	c.refused("update its own stream to source a's", err)
	withRepublish := own
	withRepublish.RePublish = &jetstream.RePublish{Source: subjectRoot + ".*.c.*", Destination: subject(KindMessage, "a", "b")}
	_, err = c.js.UpdateStream(c.ctx(), withRepublish)
	c.refused("update its own stream to republish as b to a", err)
	wider := own
	wider.Subjects = append(wider.Subjects, subjectRoot+".*.d.*")
	_, err = c.js.UpdateStream(c.ctx(), wider)
	c.refused("take host d's subjects into its own stream", err)
	_, err = c.js.CreateStream(c.ctx(), hostStream("d", 1))
	c.refused("make the stream of host d, which has not joined", err)
	_, err = c.js.CreateStream(c.ctx(), jetstream.StreamConfig{Name: "COPY", Mirror: &jetstream.StreamSource{Name: streamName("a")}})
	c.refused("make a mirror of a's stream", err)
	kv := presenceStream(1)
	kv.Sources = []*jetstream.StreamSource{{Name: streamName("a")}}
	_, err = c.js.UpdateStream(c.ctx(), kv)
	c.refused("update the presence bucket to source a's stream", err)
	_, err = c.js.CreateConsumer(c.ctx(), streamName("a"), jetstream.ConsumerConfig{Durable: "c"})
	c.refused("make a consumer on a's stream", err)
	_, err = c.js.OrderedConsumer(c.ctx(), streamName("a"), jetstream.OrderedConsumerConfig{})
	c.refused("make an ordered consumer on a's stream", err)
	for api, req := range map[string]string{"$JS.API.STREAM.MSG.GET." + streamName("a"): `{"seq":1}`, "$JS.API.DIRECT.GET." + streamName("a"): `{"seq":1}`,
		"$JS.API.STREAM.PURGE." + streamName("a"): `{}`, "$JS.API.STREAM.DELETE." + streamName("a"): ``, "$JS.API.STREAM.MSG.DELETE." + streamName("a"): `{"seq":1}`,
		"$JS.API.STREAM.NAMES": `{}`, "$JS.API.INFO": ``} {
		_, err := c.nc.Request(api, []byte(req), 700*time.Millisecond)
		c.refused(api, err)
	}
	_, err = c.js.Publish(c.ctx(), "$KV."+presenceBucket+".a", []byte(`{"agents":["t/evil"]}`))
	c.refused("put a's presence", err)
	rollup := nats.NewMsg("$KV." + presenceBucket + ".c")
	rollup.Header.Set("Nats-Rollup", "all")
	rollup.Data = []byte(`{}`)
	_, err = c.js.PublishMsg(c.ctx(), rollup)
	c.refused("roll the presence bucket up through its own entry (removing every other)", err)
	if ok, err := b.Known(context.Background(), "a"); !ok {
		t.Errorf("a's presence is gone: %v", err)
	}
	for _, subj := range []string{subject("*", "a", "*"), inboxPrefix("a") + ".>", ">", "$JS.EVENT.>"} {
		sub, err := c.nc.SubscribeSync(subj)
		if err == nil {
			_ = c.nc.Flush()
			time.Sleep(100 * time.Millisecond)
			if m, err := sub.NextMsg(10 * time.Millisecond); err == nil {
				t.Errorf("c read %s on %s", m.Data, m.Subject)
			}
		}
	}
	// The streams are as the operator made them, and mail still goes.
	if err := b.Send(context.Background(), message("a", 1)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "b's message at a", func() bool { return len(ra.ids()) == 1 })
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := strings.Count(strings.Join(c.refusal, "\n"), "Permissions Violation"); n < 10 {
		t.Errorf("only %d permission violations:\n%s", n, strings.Join(c.refusal, "\n"))
	}
}

// A report counts only from the host that holds the copy, and only of a
// copy that host was sent (issue 30, finding 2): a broadcast's copies on
// two hosts share an id and team/agent, and one host's report ended the
// other's wait; a host's user could report on a message sent elsewhere.
func TestAReportCountsOnlyFromItsCopysHost(t *testing.T) {
	url, seeds := guardedBus(t)
	var ra, rb recorder
	a := startLink(t, Options{Name: "a", URL: url, NkeyFile: seeds["a"], Handler: &ra})
	t.Cleanup(a.Close)
	b := startLink(t, Options{Name: "b", URL: url, NkeyFile: seeds["b"], Handler: &rb})
	t.Cleanup(b.Close)
	waitFor(t, "both links up", func() bool { return a.Up() && b.Up() })
	ctx := context.Background()
	id := message("b", 1).ID
	toB, toC := Copy{ID: id, Host: "b", Team: "t", Agent: "bob"}, Copy{ID: id, Host: "c", Team: "t", Agent: "bob"}
	for _, cp := range []Copy{toB, toC} {
		if err := a.RecordSent(ctx, Sent{ID: id, Host: cp.Host, Team: "t", Agent: "bob", State: StateOutbox, From: "lead", Text: "hi"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	fromB, stopB := a.Watch(toB)
	defer stopB()
	fromC, stopC := a.Watch(toC)
	defer stopC()
	report := func(state string, seq int) Packet {
		return Packet{Kind: KindEvent, To: "a", ID: id, Event: &RemoteEvent{Team: "t", Agent: "bob", State: state, Seq: seq, At: time.Now().UTC()}}
	}
	// b reports its copy submitted: c's copy hears nothing of it.
	if err := b.Send(ctx, report("submitted", 1)); err != nil {
		t.Fatal(err)
	}
	select {
	case p := <-fromB:
		if p.Event.State != "submitted" {
			t.Fatalf("b's copy: %+v", p.Event)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("b's report never came")
	}
	// b reports on a copy it was never sent (to its agent ana).
	if err := b.Send(ctx, Packet{Kind: KindEvent, To: "a", ID: id, Event: &RemoteEvent{Team: "t", Agent: "ana", State: "submitted", Seq: 2}}); err != nil {
		t.Fatal(err)
	}
	// c's user reports by hand, on its own subject, for b's copy and
	// (its daemon stopped) for its own: only its own counts.
	c := newAttacker(t, url, seeds["c"])
	for _, forged := range []Packet{
		{Kind: KindEvent, From: "c", To: "a", ID: id, Event: &RemoteEvent{Team: "t", Agent: "bob", State: "failed", Seq: 9}},
	} {
		data, _ := encode(forged)
		if _, err := c.js.Publish(c.ctx(), subject(KindEvent, "a", "c"), data); err != nil {
			t.Fatal(err)
		}
	}
	forgedAsB := Packet{Kind: KindEvent, From: "b", To: "a", ID: id, Event: &RemoteEvent{Team: "t", Agent: "bob", State: "failed", Seq: 10}}
	data, _ := encode(forgedAsB)
	_, err := c.js.Publish(c.ctx(), subject(KindEvent, "a", "b"), data)
	c.refused("report as b", err)
	select {
	case p := <-fromC:
		if p.From != "c" || p.Event.State != "failed" {
			t.Fatalf("c's copy heard %+v from %s", p.Event, p.From)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("c's report of its own copy never came")
	}
	select {
	case p := <-fromB:
		t.Fatalf("b's copy heard %s from %s", p.Event.State, p.From)
	case <-time.After(time.Second):
	}
	waitFor(t, "the reports recorded", func() bool {
		ra.mu.Lock()
		defer ra.mu.Unlock()
		return len(ra.events) >= 2
	})
	time.Sleep(300 * time.Millisecond)
	ra.mu.Lock()
	defer ra.mu.Unlock()
	for _, p := range ra.events {
		if p.Copy() != toB && p.Copy() != toC {
			t.Errorf("a took a report of %s, a copy it never sent to %s", p.Copy().Key(), p.From)
		}
	}
	if len(ra.events) != 2 {
		t.Errorf("a took %d reports, want 2 (b's of its copy, c's of its own)", len(ra.events))
	}
}

// A host cannot have another host's packet dropped by the stream's
// de-duplication by publishing first with the id it will carry: a
// packet's Nats-Msg-Id has 64 random bits (on 26de3cb it was the message
// id and copy, known to every host a broadcast reached).
func TestAnotherHostsPacketCannotBeDroppedAsACopy(t *testing.T) {
	url, seeds := guardedBus(t)
	var ra recorder
	a := startLink(t, Options{Name: "a", URL: url, NkeyFile: seeds["a"], Handler: &ra})
	t.Cleanup(a.Close)
	b := startLink(t, Options{Name: "b", URL: url, NkeyFile: seeds["b"], Handler: &recorder{}})
	t.Cleanup(b.Close)
	waitFor(t, "both links up", func() bool { return a.Up() && b.Up() })
	c := newAttacker(t, url, seeds["c"])
	honest := message("a", 7)
	ahead := honest
	ahead.From = "c"
	data, _ := encode(ahead)
	for _, guess := range []string{honest.ID, honest.ID + ".t.ana", Copy{ID: honest.ID, Host: "a", Team: "t", Agent: "ana"}.Key() + ".msg"} {
		m := nats.NewMsg(subject(KindMessage, "a", "c"))
		m.Data = data
		m.Header.Set(jetstream.MsgIDHeader, guess)
		if _, err := c.js.PublishMsg(c.ctx(), m); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Send(context.Background(), honest); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "b's message at a", func() bool {
		ra.mu.Lock()
		defer ra.mu.Unlock()
		for _, p := range ra.messages {
			if p.From == "b" {
				return true
			}
		}
		return false
	})
}

// The link reads no stream of its own whose configuration gives its mail
// away or lets a packet act as more than a packet (an operator's mistake:
// no host may change one), and the operator's provisioning puts such a
// stream right. On a bus without users a link puts it right itself.
func TestAnUnsafeStreamIsRefusedAndPutRight(t *testing.T) {
	url, seeds := guardedBus(t)
	op, err := dial(dialOptions{URL: url, NkeyFile: seeds["operator"], Inbox: adminInbox, Once: true})
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	ops, _ := jetstream.New(op)
	ctx := context.Background()
	bad := hostStream("a", 1)
	bad.Sources = []*jetstream.StreamSource{{Name: streamName("b")}}
	bad.AllowRollup = true
	if _, err := ops.UpdateStream(ctx, bad); err != nil {
		t.Fatal(err)
	}
	host, err := dial(dialOptions{URL: url, NkeyFile: seeds["a"], Inbox: inboxPrefix("a"), Once: true})
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	hjs, _ := jetstream.New(host)
	tctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, _, err := ensure(tctx, hjs, hostStream("a", 1), false); !errors.Is(err, ErrUnsafeStream) {
		t.Fatalf("a's link took a stream with a source and roll-ups: %v", err)
	} else {
		t.Log(err)
	}
	done, err := Provision(ctx, Operator{URL: url, NkeyFile: seeds["operator"]}, []string{"a"}, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("provision: %v", done)
	s, err := ops.Stream(ctx, streamName("a"))
	if err != nil {
		t.Fatal(err)
	}
	if got := unsafe(s.CachedInfo().Config, hostStream("a", 1)); got != "" {
		t.Fatalf("after provisioning, stream a has %s", got)
	}

	open := busServer(t, t.TempDir(), -1)
	defer open.Shutdown()
	nc, err := nats.Connect(open.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	if _, err := js.CreateStream(ctx, bad); err != nil {
		t.Fatal(err)
	}
	if _, what, err := ensure(ctx, js, hostStream("a", 1), false); err != nil || !strings.Contains(what, "put") {
		t.Fatalf("on a bus without users: %q, %v", what, err)
	}
}
