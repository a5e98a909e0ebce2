package multihost

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/e2e/harness"
	"github.com/agentmsg/agentmsg/e2e/netlab"
)

// Every remote message reaches its end, and every verdict is its host's
// (issue 30, findings 2 to 5), on three hosts in network namespaces and a
// real three-node cluster with TLS, one lab for all: a broadcast whose
// copies share an id on two hosts, a receiving tmux server that stops
// answering, a broadcast to four agents on three hosts, and how long a cut
// host stays listed up.
func TestRemoteMessagesReachTheirEnd(t *testing.T) {
	lab := netlab.New(t, 3)
	b := newBus(t, lab)
	for _, n := range []string{"h1", "h2", "h3"} {
		b.add(n)
	}
	h1 := b.startHost(0, "h1", []string{"agent-f2-bob", "agent-f4-x"})
	h2 := b.startHost(1, "h2", []string{"agent-f2-bob", "agent-f4-y", "agent-f4-z"})
	h2.agents = append(h2.agents, h2.srv.StartAgent("agent-f3-s", harness.EchoDelay(800*time.Millisecond)))
	h3 := b.startHost(2, "h3", []string{"agent-f4-w"})
	hs := []*host{h1, h2, h3}
	waitAllHostsUp(t, hs, -1)
	agent := func(h *host, session string) *harness.TestAgent {
		for _, a := range h.agents {
			if a.Session == session {
				return a
			}
		}
		t.Fatalf("%s has no %s", h.name, session)
		return nil
	}

	// Finding 2: t/bob on h1 and h2; h1's takes the broadcast, h2's is
	// busy and the broadcast says --no-queue. Each copy's verdict is its
	// own host's: on 26de3cb h2/bob was reported submitted (h1's report).
	t.Run("a broadcast's copies on two hosts have their own verdicts", func(t *testing.T) {
		agent(h2, "agent-f2-bob").SetState("busy")
		res := h3.srv.Run("--json", "broadcast", "--all-hosts", "--no-queue", "--ready-timeout", "2s", "f2", "one of you")
		rep := decodeBroadcast(t, res)
		got := map[string]string{}
		for _, r := range rep.Results {
			got[r.Host+"/"+r.Agent] = r.Verdict
		}
		if got["h1/bob"] != "submitted" || got["h2/bob"] != "not_ready" || len(got) != 2 {
			t.Errorf("verdicts %v; want h1/bob submitted, h2/bob not_ready\n%s", got, res)
		}
		time.Sleep(time.Second)
		if n := len(agent(h2, "agent-f2-bob").Received()); n != 0 {
			t.Errorf("h2's bob, busy, got %d messages", n)
		}
		agent(h2, "agent-f2-bob").SetState("ready")
	})

	// Finding 4: four agents on three hosts, all ready; two of them on h2,
	// where the copies share the broadcast's id. Every copy's verdict is
	// its host's as soon as it reports, and h1 records the broadcast and
	// each copy (log, GET /v1/messages/{id}). On 26de3cb one copy was
	// deferred/remote_pending after the whole wait, and h1 knew nothing of
	// the remote copies.
	t.Run("a broadcast to four agents on three hosts", func(t *testing.T) {
		start := time.Now()
		res, err := h1.srv.Server.Run("--json", "broadcast", "--all-hosts", "f4", "all four of you")
		took := time.Since(start)
		if err != nil {
			t.Fatalf("broadcast --all-hosts after %s: %v", took.Round(time.Millisecond), err)
		}
		rep := decodeBroadcast(t, res)
		got := map[string]string{}
		for _, r := range rep.Results {
			got[r.Host+"/"+r.Agent] = r.Verdict
		}
		t.Logf("broadcast --all-hosts to 4 agents on 3 hosts: %s, %v", took.Round(time.Millisecond), got)
		got["/x"] += got["h1/x"]
		for _, want := range []string{"/x", "h2/y", "h2/z", "h3/w"} {
			if got[want] != "submitted" {
				t.Errorf("copy %s: %q, want submitted (all: %v)", want, got[want], got)
			}
		}
		if took > 10*time.Second {
			t.Errorf("the broadcast took %s", took)
		}
		for _, a := range []*harness.TestAgent{agent(h1, "agent-f4-x"), agent(h2, "agent-f4-y"), agent(h2, "agent-f4-z"), agent(h3, "agent-f4-w")} {
			waitFor(t, a.Session+" has it", func() bool { return len(a.Received()) == 1 })
		}
		logRes, _ := h1.srv.Server.Run("--json", "log", "f4")
		var log struct {
			Messages []struct {
				ID    string `json:"id"`
				Host  string `json:"host"`
				Inbox string `json:"inbox"`
			} `json:"messages"`
		}
		if err := json.Unmarshal([]byte(logRes.Stdout), &log); err != nil {
			t.Fatalf("log: %v\n%s", err, logRes)
		}
		inLog := map[string]bool{}
		for _, m := range log.Messages {
			if m.ID == rep.ID {
				inLog[m.Host+"/"+m.Inbox] = true
			}
		}
		if len(inLog) != 4 || !inLog["h2/y"] || !inLog["h2/z"] || !inLog["h3/w"] {
			t.Errorf("h1's log of team f4 holds %v of the broadcast; want its 4 copies\n%s", inLog, logRes.Stdout)
		}
		waitFor(t, "h1's record of every copy", func() bool {
			var doc struct {
				Copies []struct{ Inbox string }
				Remote []struct{ Host, Agent, State string }
			}
			_ = json.Unmarshal([]byte(h1.messageDoc(rep.ID)), &doc)
			submitted := 0
			for _, r := range doc.Remote {
				if r.State == "submitted" {
					submitted++
				}
			}
			return len(doc.Copies) == 1 && len(doc.Remote) == 3 && submitted == 3
		})
		history, _ := h1.srv.Server.Run("log", "--id", rep.ID)
		if history.Code != 0 || strings.Count(history.Stdout, "submitted") < 4 {
			t.Errorf("h1's log --id %s:\n%s", rep.ID, history)
		}
	})

	// Finding 3: a message recorded on h2 while h2's tmux server does not
	// answer (stopped for twelve seconds, longer than two passes wait for
	// tmux) is typed once it answers, with no new send to wake it; and
	// each verdict is true. On 26de3cb the message sent during the stall
	// was still untyped (pending) 30 s after tmux answered again, and one
	// being typed when tmux stopped was told failed, though typed.
	t.Run("a message recorded while the receiving tmux did not answer", func(t *testing.T) {
		s := agent(h2, "agent-f3-s") // its screen shows what is typed 800 ms late
		if v, err := h1.post("app", "MSG_APP_00f30000", "h2", "f3", "s", "a listing of h2's sessions", false); err != nil || v != "submitted" {
			t.Fatalf("first message: %s %v", v, err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(h2.srv.Tmux("display", "-p", "#{pid}")))
		if err != nil {
			t.Fatal(err)
		}
		told := map[string]string{}
		var wg sync.WaitGroup
		var toldMu sync.Mutex
		send := func(id, text string) {
			wg.Go(func() {
				v, err := h1.post("app", id, "h2", "f3", "s", text, false)
				toldMu.Lock()
				told[id] = fmt.Sprint(v, err)
				toldMu.Unlock()
			})
		}
		stall := func(inFlight bool, ids ...string) {
			t.Helper()
			if inFlight {
				// The stall comes while one is being typed (its delivery
				// holds the pane's lock while it waits for its echo).
				send(ids[0], "typed when tmux stops")
				ids = ids[1:]
				time.Sleep(400 * time.Millisecond)
			}
			if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			stopped := true
			defer func() {
				if stopped {
					_ = syscall.Kill(pid, syscall.SIGCONT)
				}
			}()
			time.Sleep(300 * time.Millisecond)
			send(ids[0], "recorded while tmux does not answer")
			time.Sleep(12 * time.Second)
			if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
				t.Fatal(err)
			}
			stopped = false
		}
		for round, ids := range [][]string{{"MSG_APP_00f30001"}, {"MSG_APP_00f30002", "MSG_APP_00f30003"}} {
			before := len(s.Received())
			stall(round == 1, ids...)
			resumed := time.Now()
			wg.Wait()
			deadline := time.Now().Add(30 * time.Second)
			for len(s.Received()) < before+len(ids) && time.Now().Before(deadline) {
				time.Sleep(100 * time.Millisecond)
			}
			if got := s.Received(); len(got) != before+len(ids) {
				t.Errorf("round %d: %s 30 s after tmux answered again: %v; want %v once each (on h2: %s)", round+1, s.Session, got, ids, h2.messageDoc(ids[len(ids)-1]))
			} else {
				t.Logf("round %d (a message being typed when tmux stopped: %v): told %v; typed %s after tmux answered again", round+1, round == 1, told, time.Since(resumed).Round(time.Millisecond))
			}
		}
		// Every verdict true: one typed is never told failed or not ready.
		for id, v := range told {
			if !strings.HasPrefix(v, "submitted") && !strings.HasPrefix(v, "queued") && !strings.HasPrefix(v, "deferred") && !strings.HasPrefix(v, "unknown") {
				t.Errorf("%s was told %s, and typed; on h2: %s\non h1: %s", id, v, h2.messageDoc(id), h1.messageDoc(id))
			}
		}
	})

	// Finding 5: how long a host cut off (its NATS node with it) stays
	// listed up, measured twice: the host whose node leads the cluster's
	// JetStream meta group is cut, then the one whose node leads the
	// presence bucket. docs/hosts.md gives the bound. On 26de3cb it was 36
	// to 43 s when the cut took a leader with it (the bucket's reads went
	// to the cut server, or waited for a leader), 10 to 12 s otherwise.
	t.Run("a cut host is listed down within the documented bound", func(t *testing.T) {
		_, ojs := b.asOperator()
		bucketLeader := func() string {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			s, err := ojs.Stream(ctx, "KV_agentmsg_hosts")
			if err != nil || s.CachedInfo().Cluster == nil {
				return fmt.Sprint(err)
			}
			return s.CachedInfo().Cluster.Leader
		}
		byName := map[string]*host{"h1": h1, "h2": h2, "h3": h3}
		measure := func(why string, cut *host) {
			t.Helper()
			var observer *host
			for _, h := range hs {
				if h != cut && observer == nil {
					observer = h
				}
			}
			meta, _ := b.cluster.MetaLeader(0)
			t.Logf("cutting %s (%s): meta leader %s, presence bucket's leader %s; %s lists it", cut.name, why, meta, bucketLeader(), observer.name)
			if err := cut.net.LinkDown(); err != nil {
				t.Fatal(err)
			}
			at := time.Now()
			down := time.Duration(0)
			var trace []string
			for time.Since(at) < 90*time.Second && down == 0 {
				var doc struct {
					Hosts []struct {
						Name string
						Up   bool
						Seen time.Time
					}
				}
				res := observer.srv.Run("--json", "hosts")
				_ = json.Unmarshal([]byte(res.Stdout), &doc)
				listed := "not listed"
				for _, x := range doc.Hosts {
					if x.Name == cut.name {
						listed = fmt.Sprintf("up %v, seen %s before the cut", x.Up, at.Sub(x.Seen).Round(100*time.Millisecond))
						if !x.Up {
							down = time.Since(at)
						}
					}
				}
				trace = append(trace, fmt.Sprintf("%5.1fs: %s", time.Since(at).Seconds(), listed))
				time.Sleep(250 * time.Millisecond)
			}
			if err := cut.net.LinkUp(); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s listed %s down %s into the cut", observer.name, cut.name, down.Round(100*time.Millisecond))
			if down == 0 || down > presenceBound {
				t.Errorf("%s listed %s down %s into the cut; docs/hosts.md says within %s:\n%s", observer.name, cut.name, down, presenceBound, strings.Join(trace, "\n"))
			}
			waitAllHostsUp(t, hs, -1)
		}
		meta, err := b.cluster.MetaLeader(0)
		if byName[meta] == nil {
			t.Fatalf("no meta leader: %q %v", meta, err)
		}
		measure("its node leads the meta group", byName[meta])
		// The bucket's leader, once the cluster has one again.
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(500 * time.Millisecond) {
			if h := byName[bucketLeader()]; h != nil {
				measure("its node leads the presence bucket", h)
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("the presence bucket has no leader 20 s after the cut ended: %s", bucketLeader())
				break
			}
		}
	})
}

// presenceBound is how long docs/hosts.md says a host cut off stays listed
// up, at most.
const presenceBound = 15 * time.Second

// broadcastDoc is broadcast --json with each copy's host.
type broadcastDoc struct {
	ID      string `json:"id"`
	Verdict string `json:"verdict"`
	Results []struct {
		Host    string `json:"host"`
		Team    string `json:"team"`
		Agent   string `json:"agent"`
		Verdict string `json:"verdict"`
		Reason  string `json:"reason"`
		Error   string `json:"error"`
	} `json:"results"`
}

func decodeBroadcast(t *testing.T, res harness.Result) broadcastDoc {
	t.Helper()
	var doc broadcastDoc
	if err := json.Unmarshal([]byte(res.Stdout), &doc); err != nil || doc.ID == "" {
		t.Fatalf("broadcast --json: %v\n%s", err, res)
	}
	return doc
}
