package netlab

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// clusterTimeout bounds each wait on the cluster: a leader election after a
// node dies takes seconds.
const clusterTimeout = 30 * time.Second

// connect connects to node i only (never to one it learns of), as u.
func connect(t *testing.T, c *Cluster, i int, u User) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(c.ClientURL(i), nats.UserInfo(u.Name, u.Password), nats.RootCAs(c.CAFile()),
		nats.IgnoreDiscoveredServers(), nats.Timeout(5*time.Second))
	if err != nil {
		t.Fatalf("connecting to node %d: %v", i, err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// newStream makes stream LAB (subjects lab.>) with 3 replicas through js.
func newStream(t *testing.T, js jetstream.JetStream) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "LAB", Subjects: []string{"lab.>"}, Replicas: 3}); err != nil {
		t.Fatalf("creating stream LAB with 3 replicas: %v", err)
	}
}

// publish publishes data through js until the stream acks it (a leader may
// be in election), once: the message id makes a retry no second message.
func publish(t *testing.T, js jetstream.JetStream, data string) {
	t.Helper()
	deadline := time.Now().Add(clusterTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := js.Publish(ctx, "lab.msg", []byte(data), jetstream.WithMsgID(data))
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("publishing %q: %v", data, err)
		}
	}
}

// readAll reads stream LAB through js, message by message, and wants
// exactly want. It reads by sequence, a request bounded by its context; it
// makes no consumer.
func readAll(t *testing.T, js jetstream.JetStream, want []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	s, err := js.Stream(ctx, "LAB")
	if err != nil {
		t.Fatalf("reading stream LAB: %v", err)
	}
	var got []string
	for seq := uint64(1); seq <= s.CachedInfo().State.LastSeq; seq++ {
		msg, err := s.GetMsg(ctx, seq)
		if err != nil {
			t.Fatalf("reading message %d of stream LAB: %v", seq, err)
		}
		got = append(got, string(msg.Data))
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("stream LAB holds %q, want %q", got, want)
	}
}

// The cluster forms over TLS with auth: a stream of 3 replicas made through
// node 0 takes a message through node 1 that node 2 reads; a client that
// does not trust the lab's CA, or gives a wrong password, is refused; a user
// may publish only where its allow list says.
func TestNATSClusterWithTLSAndAuth(t *testing.T) {
	lab := New(t, 3)
	narrow := User{Name: "narrow", Password: "narrow-secret", Publish: []string{"lab.narrow"}}
	c := lab.StartNATS(NATSOptions{Users: []User{{Name: "lab", Password: "lab-secret"}, narrow}})
	u := c.Users[0]
	newStream(t, connect(t, c, 0, u))
	publish(t, connect(t, c, 1, u), "through node 1")
	js := connect(t, c, 2, u)
	readAll(t, js, []string{"through node 1"})
	wantReplicas(t, js, 3)

	_, err := nats.Connect(c.ClientURL(0), nats.UserInfo(u.Name, u.Password), nats.IgnoreDiscoveredServers())
	if !errors.As(err, new(x509.UnknownAuthorityError)) {
		t.Errorf("a client without the lab's CA: %v; want an unknown authority", err)
	}
	_, err = nats.Connect(c.ClientURL(0), nats.UserInfo(u.Name, "wrong"), nats.RootCAs(c.CAFile()), nats.IgnoreDiscoveredServers())
	if !errors.Is(err, nats.ErrAuthorization) {
		t.Errorf("a client with a wrong password: %v; want %v", err, nats.ErrAuthorization)
	}
	wantPublishDenied(t, c, narrow, "lab.wide")
}

// wantPublishDenied fails t unless the server refuses u's publish to
// subject, which it says asynchronously.
func wantPublishDenied(t *testing.T, c *Cluster, u User, subject string) {
	t.Helper()
	denied := make(chan error, 1)
	nc, err := nats.Connect(c.ClientURL(0), nats.UserInfo(u.Name, u.Password), nats.RootCAs(c.CAFile()),
		nats.IgnoreDiscoveredServers(), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			select {
			case denied <- err:
			default:
			}
		}))
	if err != nil {
		t.Fatalf("connecting as %s: %v", u.Name, err)
	}
	defer nc.Close()
	if err := nc.Publish(subject, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-denied:
		if !errors.Is(err, nats.ErrPermissionViolation) {
			t.Errorf("publishing to %s as %s: %v; want %v", subject, u.Name, err, nats.ErrPermissionViolation)
		}
	case <-time.After(clusterTimeout):
		t.Errorf("publishing to %s as %s: no refusal", subject, u.Name)
	}
}

// wantReplicas waits until stream LAB has n replicas, all current.
func wantReplicas(t *testing.T, js jetstream.JetStream, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	var last string
	for ctx.Err() == nil {
		s, err := js.Stream(ctx, "LAB")
		if err == nil && s.CachedInfo().Cluster != nil {
			ci := s.CachedInfo().Cluster
			current := 1 // the leader
			for _, r := range ci.Replicas {
				if r.Current && !r.Offline {
					current++
				}
			}
			if ci.Leader != "" && current == n {
				return
			}
			last = fmt.Sprintf("leader %q, %d current", ci.Leader, current)
		} else {
			last = fmt.Sprint(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("stream LAB never had %d current replicas: %s", n, last)
}

// With node 0 killed, the other two keep a quorum and take messages; node 0
// started again rejoins on its store and catches up; node 1 restarted
// cleanly does too.
func TestNATSSurvivesKilledNode(t *testing.T) {
	lab := New(t, 3)
	c := lab.StartNATS(NATSOptions{})
	u := c.Users[0]
	js1 := connect(t, c, 1, u)
	newStream(t, js1)
	publish(t, js1, "before")
	if err := c.KillNode(0); err != nil {
		t.Fatal(err)
	}
	publish(t, js1, "after")
	readAll(t, connect(t, c, 2, u), []string{"before", "after"})
	if err := c.StartNode(0); err != nil {
		t.Fatal(err)
	}
	js0 := connect(t, c, 0, u)
	wantReplicas(t, js0, 3)
	readAll(t, js0, []string{"before", "after"})
	if err := c.Restart(1); err != nil {
		t.Fatal(err)
	}
	publish(t, js0, "restarted")
	readAll(t, connect(t, c, 1, u), []string{"before", "after", "restarted"})
}

// A host whose link is down is unreachable, yet reaches itself (its node
// runs on), and is back when its link is up. (Its cluster's auth is a
// block of the caller's, which the last connection passes.)
func TestLinkDownCutsHostOff(t *testing.T) {
	lab := New(t, 3)
	c := lab.StartNATS(NATSOptions{
		Auth:  `authorization { users: [ { user: "block", password: "block-secret" } ] }`,
		Users: []User{{Name: "block", Password: "block-secret"}},
	})
	h := lab.Hosts[2]
	addr := net.JoinHostPort(h.Addr, strconv.Itoa(ClientPort))
	waitReachable(t, addr)
	if err := h.LinkDown(); err != nil {
		t.Fatal(err)
	}
	wantUnreachable(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if out, err := h.Command(ctx, nil, "bash", "-c", "exec 3<>/dev/tcp/$0/$1", h.Addr, strconv.Itoa(ClientPort)).CombinedOutput(); err != nil {
		t.Errorf("cut off, the host does not reach its own node: %v %s", err, out)
	}
	if err := h.LinkUp(); err != nil {
		t.Fatal(err)
	}
	waitReachable(t, addr)
	connect(t, c, 2, c.Users[0])
}

// dialsRoot reports whether a TCP connection to addr from the root
// namespace succeeds within 300 ms.
func dialsRoot(addr string) bool {
	conn, err := net.DialTimeout("tcp", addr, 300*time.Millisecond)
	if err == nil {
		conn.Close()
	}
	return err == nil
}

// wantUnreachable fails t unless three connections to addr in a row fail: a
// cut link drops every packet at once.
func wantUnreachable(t *testing.T, addr string) {
	t.Helper()
	for range 3 {
		if dialsRoot(addr) {
			t.Fatalf("%s is reachable from the root namespace", addr)
		}
	}
}

// waitReachable waits until a TCP connection to addr from the root
// namespace succeeds: a link brought up takes a moment to carry.
func waitReachable(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !dialsRoot(addr) {
		if time.Now().After(deadline) {
			t.Fatalf("%s still unreachable from the root namespace after 10 s", addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
