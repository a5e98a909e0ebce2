package hosts

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// guardedBus is a NATS server whose only users are hosts a, b and c, each
// with Permissions, and the operator, with AdminPermissions, who has made
// their streams and the presence bucket (Provision); it returns the URL
// and each user's seed file (the operator's as "operator").
func guardedBus(t *testing.T) (url string, seeds map[string]string) {
	t.Helper()
	dir := t.TempDir()
	seeds = map[string]string{}
	var users []*server.NkeyUser
	for _, name := range []string{"a", "b", "c", "operator"} {
		seed, public, err := NewUser()
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name+".nk")
		if err := os.WriteFile(path, seed, 0o600); err != nil {
			t.Fatal(err)
		}
		seeds[name] = path
		pub, sub := Permissions(name)
		if name == "operator" {
			pub, sub = AdminPermissions()
		}
		users = append(users, &server.NkeyUser{Nkey: public, Permissions: &server.Permissions{
			Publish: &server.SubjectPermission{Allow: pub}, Subscribe: &server.SubjectPermission{Allow: sub}}})
	}
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: filepath.Join(dir, "js"),
		Nkeys: users, NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("bus not ready")
	}
	t.Cleanup(s.Shutdown)
	done, err := Provision(context.Background(), Operator{URL: s.ClientURL(), NkeyFile: seeds["operator"]}, []string{"a", "b", "c"}, 1)
	if err != nil {
		t.Fatalf("provisioning: %v (%v)", err, done)
	}
	return s.ClientURL(), seeds
}

// Hosts whose users have only Permissions exchange messages and events
// and list each other; a host can neither send as another nor read
// another's stream.
func TestPermissionsAllowTheLinkAndNothingElse(t *testing.T) {
	url, seeds := guardedBus(t)
	var ra, rb recorder
	open := func(name string, h Handler) *Link {
		l := startLink(t, Options{Name: name, URL: url, NkeyFile: seeds[name], Handler: h})
		t.Cleanup(l.Close)
		return l
	}
	a, b := open("a", &ra), open("b", &rb)
	waitFor(t, "both links up", func() bool { return a.Up() && b.Up() })
	ctx := context.Background()
	if err := a.Send(ctx, message("b", 1)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the message at b", func() bool { return len(rb.ids()) == 1 })
	sent := Copy{ID: message("b", 1).ID, Host: "b", Team: "t", Agent: "ana"}
	if err := a.RecordSent(ctx, Sent{ID: sent.ID, Host: "b", Team: "t", Agent: "ana", State: StateOutbox}, nil); err != nil {
		t.Fatal(err)
	}
	events, stop := a.Watch(sent)
	defer stop()
	if err := b.Send(ctx, Packet{Kind: KindEvent, To: "a", ID: sent.ID, Event: &RemoteEvent{Team: "t", Agent: "ana", State: "submitted", Seq: 1}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-events:
	case <-time.After(20 * time.Second):
		t.Fatal("the event never came back to a")
	}
	waitFor(t, "a lists b", func() bool {
		list, err := a.Hosts(ctx)
		return err == nil && len(list) == 2
	})

	// Host c's own user, used by hand as an attacker would.
	opt, err := nats.NkeyOptionFromSeed(seeds["c"])
	if err != nil {
		t.Fatal(err)
	}
	denied := make(chan error, 8)
	nc, err := nats.Connect(url, opt, nats.CustomInboxPrefix(inboxPrefix("c")),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { denied <- err }))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	tctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	forged := message("b", 2)
	forged.From = "a"
	data, _ := encode(forged)
	if _, err := js.Publish(tctx, subject(KindMessage, "b", "a"), data); err == nil {
		t.Error("c published a packet on a's subject")
	}
	if _, err := js.Stream(tctx, streamName("b")); err == nil {
		t.Error("c looked at b's stream")
	}
	// Asked by hand: the stream's own calls need its info first, which
	// is refused above.
	for api, req := range map[string]string{"MSG.GET": `{"seq":1}`, "PURGE": `{}`} {
		if reply, err := nc.Request("$JS.API.STREAM."+api+"."+streamName("b"), []byte(req), time.Second); err == nil {
			t.Errorf("c's STREAM.%s on b's stream was answered: %s", api, reply.Data)
		}
	}
	// The refusals above come here too: the subscription's own is the one
	// that names a subscription.
	if _, err := nc.SubscribeSync(subject(KindMessage, "b", "*")); err == nil {
		nc.Flush()
		refused := false
		for wait := time.After(3 * time.Second); !refused; {
			select {
			case err := <-denied:
				refused = strings.Contains(err.Error(), "Subscription")
			case <-wait:
				t.Fatal("c subscribed to b's subjects")
			}
		}
	}
	time.Sleep(500 * time.Millisecond)
	if got := rb.ids(); len(got) != 1 {
		t.Fatalf("b recorded %v; the forged packet got through", got)
	}
}
