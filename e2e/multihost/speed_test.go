package multihost

import (
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/e2e/harness"
	"github.com/agentmsg/agentmsg/e2e/netlab"
)

// The speed of messages between hosts over the lab's network, measured
// (AGENTMSG_MEASURE_HOSTS=1), never a pass or fail on time: a send to
// another host, process start to verdict; and how long a thousand
// messages kept while the sender's link was cut take to arrive once it is
// back.
func TestHostsSpeed(t *testing.T) {
	if os.Getenv("AGENTMSG_MEASURE_HOSTS") != "1" {
		t.Skip("a measurement: set AGENTMSG_MEASURE_HOSTS=1")
	}
	// The default, one copy of each host's stream: a second copy on a
	// cluster of two makes every cut stop its writes until the two elect
	// a leader again, 3 s and more after the link is back (measured with
	// AGENTMSG_MULTIHOST_REPLICAS=2).
	replicas := envInt("AGENTMSG_MULTIHOST_REPLICAS", 1)
	lab := netlab.New(t, 2)
	b := newBus(t, lab)
	b.replicas = replicas
	b.add("h1")
	b.add("h2")
	hs := make([]*host, 2)
	for i, nh := range lab.Hosts {
		h := &host{name: fmt.Sprintf("h%d", i+1), net: nh, srv: harness.NewTestServer(t)}
		if err := h.srv.StopDaemon(); err != nil {
			t.Fatal(err)
		}
		// Each host's own node first: the way a host near its server is.
		appendConfig(t, h.srv, b.hostsTable(h.name, i))
		for k := 1; k <= 4; k++ {
			h.agents = append(h.agents, h.srv.StartAgent(fmt.Sprintf("agent-t-a%d%d", i+1, k)))
		}
		h.api = apiClient(h.srv.DaemonSocket())
		if err := h.startDaemon(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(h.stopDaemon)
		hs[i] = h
	}
	defer func() {
		if t.Failed() {
			for _, h := range hs {
				b, _ := os.ReadFile(h.srv.Dir + "/logs/daemon.log")
				t.Logf("%s's daemon log:\n%s", h.name, b)
			}
		}
	}()
	waitAllHostsUp(t, hs, 4)

	var took []time.Duration
	for i := range 40 {
		start := time.Now()
		res := hs[0].srv.Run("send", "--host", "h2", "t", "a21", fmt.Sprint("timed ", i))
		took = append(took, time.Since(start))
		if res.Code != 0 {
			t.Fatalf("send --host h2: %s", res)
		}
	}
	slices.Sort(took)
	t.Logf("send --host over the lab's network, process start to verdict, %d sends: median %s, p95 %s, max %s",
		len(took), took[len(took)/2], took[len(took)*95/100], took[len(took)-1])

	// A thousand messages kept in h1's outbox while its link is cut.
	n := envInt("AGENTMSG_MULTIHOST_QUEUED", 1000)
	if err := hs[0].net.LinkDown(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // the cluster notices (a measurement, not a test of it)
	queued := time.Now()
	for i := range n {
		agent := fmt.Sprintf("a2%d", 1+i%4)
		start := time.Now()
		if _, err := hs[0].post("app", fmt.Sprintf("MSG_APP_%08x", i), "h2", "t", agent, fmt.Sprint("queued ", i), false); err != nil {
			t.Fatalf("send %d while the link is cut, after %s: %v", i, time.Since(start), err)
		}
	}
	t.Logf("%d sends kept in the outbox while the link is cut, in %s", n, time.Since(queued))
	before := 0
	for _, a := range hs[1].agents {
		before += len(a.Received())
	}
	back := time.Now()
	if err := hs[0].net.LinkUp(); err != nil {
		t.Fatal(err)
	}
	var first time.Duration // the first typed: the bus took packets again
	waitFor(t, "the thousand messages at h2", func() bool {
		got := 0
		for _, a := range hs[1].agents {
			got += len(a.Received())
		}
		if got > before && first == 0 {
			first = time.Since(back)
		}
		return got-before >= n
	})
	all := time.Since(back)
	t.Logf("%d messages kept while the link was cut arrived %s after it came back: the first %s after, the rest in %s",
		n, all, first, all-first)
}
