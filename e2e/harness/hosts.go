package harness

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Agents on two hosts (issue 19): two test servers, each its own tmux
// server, mailbox and daemon, joined by one NATS server on loopback.

// NATSBus starts a NATS server with JetStream on a loopback port (0: any)
// with its store in dir.
func NATSBus(tb testing.TB, dir string, port int) *server.Server {
	tb.Helper()
	if port == 0 {
		port = -1
	}
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: port, JetStream: true, StoreDir: dir, NoSigs: true, NoLog: true})
	if err != nil {
		tb.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		tb.Fatal("the NATS server did not start")
	}
	return s
}

// HostServer is a test server whose daemon is host name on the bus at url.
func HostServer(tb testing.TB, name, url string) *TestServer {
	tb.Helper()
	s := NewTestServer(tb)
	f, err := os.OpenFile(s.ConfigPath(), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		tb.Fatal(err)
	}
	fmt.Fprintf(f, "\n[hosts]\nname = %q\nnats = %q\n", name, url)
	f.Close()
	if err := s.StopDaemon(); err != nil { // DaemonMode's, started before [hosts]
		tb.Fatal(err)
	}
	if err := s.StartDaemon(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := s.StopDaemon(); err != nil {
			tb.Error(err)
		}
		if tb.Failed() {
			b, _ := os.ReadFile(filepath.Join(s.Dir, "logs", "daemon.log"))
			tb.Logf("host %s's daemon log:\n%s", name, b)
		}
	})
	return s
}

// TwoHosts is hosts h1 and h2 on one bus, all stopped when tb ends.
func TwoHosts(tb testing.TB) (h1, h2 *TestServer) {
	tb.Helper()
	bus := NATSBus(tb, tb.TempDir(), 0)
	tb.Cleanup(bus.Shutdown) // after the hosts' daemons stop (cleanups run last first)
	return HostServer(tb, "h1", bus.ClientURL()), HostServer(tb, "h2", bus.ClientURL())
}

// HostsDoc is agentmsg --json hosts.
type HostsDoc struct {
	Hosts []struct {
		Name   string   `json:"name"`
		Up     bool     `json:"up"`
		Agents []string `json:"agents"`
	} `json:"hosts"`
}

// WaitHosts waits until s lists every host in names as up.
func WaitHosts(tb testing.TB, s *TestServer, names ...string) HostsDoc {
	tb.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		res := s.Run("--json", "hosts")
		var doc HostsDoc
		_ = json.Unmarshal([]byte(res.Stdout), &doc)
		up := map[string]bool{}
		for _, h := range doc.Hosts {
			up[h.Name] = h.Up
		}
		all := true
		for _, n := range names {
			all = all && up[n]
		}
		if all {
			return doc
		}
		if time.Now().After(deadline) {
			tb.Fatalf("hosts never listed %v up:\n%s", names, res)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
