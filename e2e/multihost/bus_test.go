package multihost

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmsg/agentmsg/e2e/harness"
	"github.com/agentmsg/agentmsg/e2e/netlab"
	"github.com/agentmsg/agentmsg/hosts"
)

// bus is a lab's NATS cluster set up as docs/hosts.md says: the operator's
// user (hosts init) and one user per host, whose stream the operator makes
// (hosts add, which calls hosts.Provision).
type bus struct {
	t       *testing.T
	lab     *netlab.Lab
	cluster *netlab.Cluster
	keys    string
	// operator is the operator's seed file; users the NATS config entry of
	// every user, by name ("" for the operator); seeds each host's seed.
	operator string
	users    map[string]string
	seeds    map[string]string
	urls     []string
	// replicas of each host's stream (hosts add --replicas): 3, or the
	// cluster's size when smaller.
	replicas int
}

// newBus starts a NATS node on every host of lab, with the operator as
// its one user.
func newBus(t *testing.T, lab *netlab.Lab) *bus {
	t.Helper()
	b := &bus{t: t, lab: lab, keys: t.TempDir(), users: map[string]string{}, seeds: map[string]string{}, replicas: min(3, len(lab.Hosts))}
	seed, public, err := hosts.NewUser()
	if err != nil {
		t.Fatal(err)
	}
	b.operator = filepath.Join(b.keys, "operator.nk")
	if err := os.WriteFile(b.operator, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	b.users[""] = hosts.AdminConfig(public)
	b.cluster = lab.StartNATS(b.auth())
	for i := range lab.Hosts {
		b.urls = append(b.urls, b.cluster.ClientURL(i))
	}
	return b
}

// auth is every node's authorization block: the users so far.
func (b *bus) auth() netlab.NATSOptions {
	return netlab.NATSOptions{Auth: "authorization {\n users = [\n" + strings.Join(slices.Sorted(maps.Values(b.users)), "\n") + " ]\n}\n"}
}

// add makes host name's key, gives the nodes its user and makes its
// stream, as hosts add does; it returns the key's file.
func (b *bus) add(name string) string {
	b.t.Helper()
	seed, public, err := hosts.NewUser()
	if err != nil {
		b.t.Fatal(err)
	}
	b.seeds[name] = filepath.Join(b.keys, name+".nk")
	if err := os.WriteFile(b.seeds[name], seed, 0o600); err != nil {
		b.t.Fatal(err)
	}
	b.users[name] = hosts.UserConfig(name, public)
	b.reload()
	b.provision(name)
	return b.seeds[name]
}

// provision makes names' streams as the operator.
func (b *bus) provision(names ...string) {
	b.t.Helper()
	done, err := hosts.Provision(context.Background(), hosts.Operator{URL: strings.Join(b.urls, ","), NkeyFile: b.operator, CAFile: b.cluster.CAFile()}, names, b.replicas)
	if err != nil {
		b.t.Fatalf("provisioning %v: %v", names, err)
	}
	b.t.Logf("as the operator: %s", strings.Join(done, "; "))
}

// reload gives every node the users so far, and waits until it has them
// (a reload is a signal: the node reads its config when it gets to it).
func (b *bus) reload() {
	b.t.Helper()
	if err := b.cluster.Reload(b.auth()); err != nil {
		b.t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
}

// hostsTable is host name's [hosts] table on this bus, its own node first.
func (b *bus) hostsTable(name string, first int) string {
	urls := slices.Clone(b.urls)
	if first > 0 {
		urls[0], urls[first] = urls[first], urls[0]
	}
	return fmt.Sprintf("\n[hosts]\nname = %q\nnats = %q\nnkey_file = %q\nca_file = %q\nreplicas = %d\n",
		name, strings.Join(urls, ","), b.seeds[name], b.cluster.CAFile(), b.replicas)
}

// operatorTable is what the operator's machine adds to its [hosts].
func (b *bus) operatorTable() string {
	return fmt.Sprintf("admin_nkey_file = %q\n", b.operator)
}

// as connects to the bus as host name's user, by hand (a compromised
// host): every refusal the bus sends without an answer goes to refused.
func (b *bus) as(name string, refused func(error)) (*nats.Conn, jetstream.JetStream) {
	b.t.Helper()
	opt, err := nats.NkeyOptionFromSeed(b.seeds[name])
	if err != nil {
		b.t.Fatal(err)
	}
	nc, err := nats.Connect(strings.Join(b.urls, ","), opt, nats.RootCAs(b.cluster.CAFile()), nats.CustomInboxPrefix("_INBOX_"+name),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { refused(err) }))
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		b.t.Fatal(err)
	}
	return nc, js
}

// startHost makes host i of the lab a host of the bus named name, with an
// agent per session in sessions, and starts its daemon in its namespace.
func (b *bus) startHost(i int, name string, sessions []string, opts ...harness.AgentOption) *host {
	b.t.Helper()
	h := &host{name: name, net: b.lab.Hosts[i], srv: harness.NewTestServer(b.t)}
	if err := h.srv.StopDaemon(); err != nil { // the suite's daemon mode: this test runs its own
		b.t.Fatal(err)
	}
	appendConfig(b.t, h.srv, b.hostsTable(name, i))
	for _, s := range sessions {
		h.agents = append(h.agents, h.srv.StartAgent(s, opts...))
	}
	h.api = apiClient(h.srv.DaemonSocket())
	if err := h.startDaemon(); err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(h.stopDaemon) // before the lab's cleanup, which kills what runs in its namespaces
	b.t.Cleanup(func() {
		if b.t.Failed() {
			log, _ := os.ReadFile(filepath.Join(h.srv.Dir, "logs", "daemon.log"))
			b.t.Logf("%s's daemon log:\n%s", h.name, log)
		}
	})
	return h
}

// asOperator connects to the bus as the operator.
func (b *bus) asOperator() (*nats.Conn, jetstream.JetStream) {
	b.t.Helper()
	opt, err := nats.NkeyOptionFromSeed(b.operator)
	if err != nil {
		b.t.Fatal(err)
	}
	nc, err := nats.Connect(strings.Join(b.urls, ","), opt, nats.RootCAs(b.cluster.CAFile()), nats.CustomInboxPrefix("_INBOX__agentmsg_admin"))
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		b.t.Fatal(err)
	}
	return nc, js
}
