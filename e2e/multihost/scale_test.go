package multihost

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/e2e/netlab"
	"github.com/agentmsg/agentmsg/hosts"
)

// What each host costs one cluster, measured with simulated hosts
// (AGENTMSG_MEASURE_SCALE=1; never a pass or fail on figures): a real
// three-node cluster with TLS in network namespaces, one real host (h1,
// its daemon in its namespace) and, in this process, up to
// AGENTMSG_SCALE_HOSTS (default 25,50,100) simulated hosts: each a real
// hosts.Link (its own embedded server and outbox, its user, its stream
// made by the operator, its presence and heartbeats, one agent s/x) whose
// handler answers every message at once with a report, as a receiving
// daemon whose agent took it would. At each size: the servers' memory,
// streams and consumers, the bus's traffic while idle (presence), how
// long h1's `hosts` takes, and how long h1's broadcast --all-hosts to
// every simulated host's agent takes from process start to its verdict.
// docs/hosts.md holds the figures.
func TestHostsAtScale(t *testing.T) {
	if os.Getenv("AGENTMSG_MEASURE_SCALE") != "1" {
		t.Skip("a measurement: set AGENTMSG_MEASURE_SCALE=1")
	}
	var steps []int
	for _, f := range strings.Split(envString("AGENTMSG_SCALE_HOSTS", "25,50,100"), ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			t.Fatalf("AGENTMSG_SCALE_HOSTS: %q", f)
		}
		steps = append(steps, n)
	}
	lab := netlab.New(t, 3)
	b := newBus(t, lab)
	b.add("h1")
	h1 := b.startHost(0, "h1", []string{"agent-t-a11"})
	waitAllHostsUp(t, []*host{h1}, 1)
	rows := []string{scaleHeader}
	rows = append(rows, measureScale(t, b, h1, 0, nil))

	var sims []*simHost
	defer func() {
		var wg sync.WaitGroup
		for _, s := range sims {
			wg.Go(s.link.Close)
		}
		wg.Wait()
	}()
	for _, n := range steps {
		var names []string
		for i := len(sims); i < n; i++ {
			names = append(names, fmt.Sprintf("s%03d", i+1))
		}
		start := time.Now()
		for _, name := range names {
			seed, public, err := hosts.NewUser()
			if err != nil {
				t.Fatal(err)
			}
			b.seeds[name] = filepath.Join(b.keys, name+".nk")
			if err := os.WriteFile(b.seeds[name], seed, 0o600); err != nil {
				t.Fatal(err)
			}
			b.users[name] = hosts.UserConfig(name, public)
		}
		b.reload()
		b.provision(names...)
		provisioned := time.Since(start)
		for i, name := range names {
			s, err := startSim(b, name, len(sims)+i)
			if err != nil {
				t.Fatal(err)
			}
			sims = append(sims, s)
		}
		t.Logf("%d simulated hosts: their users and streams made in %s, their links opened in %s", n, provisioned.Round(time.Millisecond), (time.Since(start) - provisioned).Round(time.Millisecond))
		waitListed(t, h1, n+1)
		rows = append(rows, measureScale(t, b, h1, n, sims))
	}
	t.Logf("one cluster, three servers, R3 streams:\n%s", strings.Join(rows, "\n"))
}

func envString(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// simHost is a simulated host: a real link whose handler answers each
// message with a report that its agent took it.
type simHost struct {
	link     *hosts.Link
	messages atomic.Int64
}

func (s *simHost) Message(ctx context.Context, p hosts.Packet) error {
	s.messages.Add(1)
	now := time.Now().UTC()
	return s.link.Send(ctx, hosts.Packet{Kind: hosts.KindEvent, To: p.From, ID: p.ID, Event: &hosts.RemoteEvent{
		Team: p.Message.Team, Agent: p.Message.Agent, State: "submitted", At: now, Seq: int(now.UnixNano())}})
}

func (s *simHost) Event(context.Context, hosts.Packet) error { return nil }
func (s *simHost) Flush(context.Context) error               { return nil }

// startSim opens simulated host name, connected to node i%3 first.
func startSim(b *bus, name string, i int) (*simHost, error) {
	s := &simHost{}
	dir, err := os.MkdirTemp(b.keys, name+"-")
	if err != nil {
		return nil, err
	}
	l, err := hosts.Open(context.Background(), hosts.Options{
		Name: name, Dir: dir, URL: strings.Join(rotate(b.urls, i%len(b.urls)), ","), NkeyFile: b.seeds[name], CAFile: b.cluster.CAFile(),
		Replicas: b.replicas, Handler: s, Agents: func(context.Context) []string { return []string{"s/x"} },
	})
	if err != nil {
		return nil, err
	}
	s.link = l
	l.Start()
	return s, nil
}

func rotate(list []string, k int) []string {
	return append(append([]string{}, list[k:]...), list[:k]...)
}

// waitListed waits until h lists n hosts up.
func waitListed(t *testing.T, h *host, n int) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		var doc struct{ Hosts []struct{ Up bool } }
		res := h.srv.Run("--json", "hosts")
		_ = json.Unmarshal([]byte(res.Stdout), &doc)
		up := 0
		for _, x := range doc.Hosts {
			if x.Up {
				up++
			}
		}
		if up >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s lists %d hosts up, want %d", h.name, up, n)
		}
		time.Sleep(time.Second)
	}
}

const scaleHeader = "hosts | servers' RSS (MB, each) | servers' CPU idle (% of a core, each) | streams | consumers | idle traffic in+out (msgs/s, KB/s, all servers) | h1 daemon RSS (MB) | hosts (s) | broadcast --all-hosts to every simulated host (s, 3 runs) | this process's RSS (MB: the simulated hosts)"

// measureScale measures the cluster and h1 with n simulated hosts.
func measureScale(t *testing.T, b *bus, h1 *host, n int, sims []*simHost) string {
	t.Helper()
	type varz struct {
		Mem  int64   `json:"mem"`
		CPU  float64 `json:"cpu"`
		In   int64   `json:"in_msgs"`
		Out  int64   `json:"out_msgs"`
		InB  int64   `json:"in_bytes"`
		OutB int64   `json:"out_bytes"`
	}
	sample := func() (vs []varz) {
		for i := range b.lab.Hosts {
			var v varz
			if err := b.cluster.Monitor(i, "varz", &v); err != nil {
				t.Fatal(err)
			}
			vs = append(vs, v)
		}
		return vs
	}
	time.Sleep(10 * time.Second) // settle: every host has announced itself a few times
	const window = 30 * time.Second
	before := sample()
	time.Sleep(window)
	after := sample()
	var msgs, bytes int64
	var rss, cpu []string
	for i := range after {
		cpu = append(cpu, fmt.Sprintf("%.0f", after[i].CPU))
		msgs += after[i].In - before[i].In + after[i].Out - before[i].Out
		bytes += after[i].InB - before[i].InB + after[i].OutB - before[i].OutB
		rss = append(rss, fmt.Sprintf("%.0f", float64(after[i].Mem)/(1<<20)))
	}
	var jsz struct {
		Streams   int `json:"streams"`
		Consumers int `json:"consumers"`
	}
	if err := b.cluster.Monitor(0, "jsz", &jsz); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	h1.srv.Run("hosts")
	listing := time.Since(start)
	var casts []string
	if n > 0 {
		for range 3 {
			start := time.Now()
			res := h1.srv.Run("--json", "broadcast", "--all-hosts", "s", "are you there")
			took := time.Since(start)
			var doc broadcastDoc
			_ = json.Unmarshal([]byte(res.Stdout), &doc)
			submitted := 0
			for _, r := range doc.Results {
				if r.Verdict == "submitted" {
					submitted++
				}
			}
			if submitted != n {
				t.Errorf("broadcast to %d simulated hosts: %d submitted\n%.2000s", n, submitted, res)
			}
			casts = append(casts, fmt.Sprintf("%.2f", took.Seconds()))
		}
	}
	return fmt.Sprintf("%d | %s | %s | %d | %d | %.0f, %.1f | %.0f | %.2f | %s | %.0f", n, strings.Join(rss, ", "), strings.Join(cpu, ", "), jsz.Streams, jsz.Consumers,
		float64(msgs)/window.Seconds(), float64(bytes)/window.Seconds()/1024, float64(rssOf(h1.daemon.Pid))/(1<<20), listing.Seconds(), strings.Join(casts, ", "),
		float64(rssOf(os.Getpid()))/(1<<20))
}

// rssOf is the resident memory of process pid, in bytes.
func rssOf(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}
