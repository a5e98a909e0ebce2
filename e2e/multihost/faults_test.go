// Package multihost tests agentmsg on many hosts (issue 19) on a real
// network built on one machine: three hosts, each a network namespace
// with its own address, tmux server, mailbox and daemon (agentmsg serve);
// a real three-node NATS cluster with TLS and a user per host, one node
// per namespace; faults while over a thousand messages cross between
// them. The stand-in agents' own logs decide what arrived. It needs root
// (network namespaces) and skips without it.
package multihost

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/e2e/harness"
	"github.com/agentmsg/agentmsg/e2e/netlab"
)

func TestMain(m *testing.M) {
	code := m.Run()
	harness.Cleanup()
	os.Exit(code)
}

// envInt reads a tuning knob of the test from the environment.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// host is one machine of the test: its namespace, tmux server and daemon.
type host struct {
	name   string
	net    *netlab.Host
	srv    *harness.TestServer
	daemon *os.Process
	done   chan struct{}
	agents []*harness.TestAgent
	api    *http.Client
}

// startDaemon runs agentmsg serve inside the host's namespace and waits
// until its socket answers.
func (h *host) startDaemon() error {
	logf, err := os.OpenFile(filepath.Join(h.srv.Dir, "logs", "daemon.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	fmt.Fprintf(logf, "-- %s: starting the daemon\n", time.Now().Format("15:04:05.000"))
	cmd := h.net.Command(context.Background(), h.srv.Env(), h.srv.Bins.Agentmsg, "-S", h.srv.Socket, "serve")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() {
		err := cmd.Wait()
		if f, ferr := os.OpenFile(filepath.Join(h.srv.Dir, "logs", "daemon.log"), os.O_WRONLY|os.O_APPEND, 0); ferr == nil {
			fmt.Fprintf(f, "-- %s: the daemon (pid %d) ended: %v\n", time.Now().Format("15:04:05.000"), cmd.Process.Pid, err)
			f.Close()
		}
		close(done)
	}()
	h.daemon, h.done = cmd.Process, done
	deadline := time.Now().Add(30 * time.Second)
	for {
		if c, err := net.Dial("unix", h.srv.DaemonSocket()); err == nil {
			c.Close()
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("%s's daemon ended before it listened", h.name)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s's daemon did not listen within 30s", h.name)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// killDaemon SIGKILLs the daemon (its pid only: never a tmux client of
// its, which tmux before 3.7 does not survive) and waits for it.
func (h *host) killDaemon() {
	if h.daemon == nil {
		return
	}
	_ = syscall.Kill(h.daemon.Pid, syscall.SIGKILL)
	<-h.done
	h.daemon = nil
}

// stopDaemon ends the daemon with SIGTERM (it detaches cleanly).
func (h *host) stopDaemon() {
	if h.daemon == nil {
		return
	}
	_ = syscall.Kill(h.daemon.Pid, syscall.SIGTERM)
	select {
	case <-h.done:
	case <-time.After(15 * time.Second):
		h.killDaemon()
	}
	h.daemon = nil
}

// sent is one message a sender sent, and what it was told.
type sent struct {
	id, from     string
	toHost, to   string // the recipient's host and session
	verdict, err string
	hostIndex    int  // the sender's host
	noQueue      bool // sent with no_queue: told not_ready, it must never arrive
	// told is when its verdict came: one told submitted must have been
	// typed by then (a report believed from a host that never had it was
	// told before).
	told time.Time
}

// post sends one message through h's daemon's API, with the sender's own
// id: a sender that loses its connection can still learn what became of it.
func (h *host) post(from, id, toHost, team, agent, text string, noQueue bool) (verdict string, err error) {
	body, _ := json.Marshal(map[string]any{"team": team, "agent": agent, "host": toHost, "from": from, "id": id, "text": text, "ready_timeout": "2s", "no_queue": noQueue})
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", "http://agentmsg/v1/send", strings.NewReader(string(body)))
	resp, err := h.api.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var doc struct {
		Verdict string `json:"verdict"`
		Error   string `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		return "", err
	}
	if doc.Verdict == "" {
		return "", fmt.Errorf("HTTP %d: %s", resp.StatusCode, doc.Error)
	}
	return doc.Verdict, nil
}

// remoteState is GET /v1/messages/{id} on h's daemon: the state the other
// host last reported for a message h sent, and the HTTP status.
func (h *host) remoteState(id string) (string, int) {
	resp, err := h.api.Get("http://agentmsg/v1/messages/" + id)
	if err != nil {
		return err.Error(), 0
	}
	defer resp.Body.Close()
	var doc struct {
		Remote []struct {
			State string `json:"state"`
		} `json:"remote"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&doc)
	if len(doc.Remote) != 1 {
		return fmt.Sprintf("%d copies", len(doc.Remote)), resp.StatusCode
	}
	return doc.Remote[0].State, resp.StatusCode
}

// messageDoc is GET /v1/messages/{id} on h's daemon, as it came.
func (h *host) messageDoc(id string) string {
	resp, err := h.api.Get("http://agentmsg/v1/messages/" + id)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	var b strings.Builder
	_, _ = io.Copy(&b, io.LimitReader(resp.Body, 4096))
	return b.String()
}

// Over a thousand messages cross between three hosts while a NATS node is
// killed, a daemon is killed, a host's link is cut for a minute and a whole
// host restarts: none is lost, none doubled, none reported submitted that
// did not arrive, and each sender's messages to one agent arrive in order.
func TestHostsSurviveFaults(t *testing.T) {
	seed := uint64(envInt("AGENTMSG_MULTIHOST_SEED", int(time.Now().UnixNano()%1e9)))
	total := envInt("AGENTMSG_MULTIHOST_MESSAGES", 1020)
	cut := time.Duration(envInt("AGENTMSG_MULTIHOST_CUT_SECONDS", 60)) * time.Second
	t.Logf("seed %d (AGENTMSG_MULTIHOST_SEED), %d messages, link cut %s", seed, total, cut)
	rng := rand.New(rand.NewPCG(seed, seed))

	lab := netlab.New(t, 3)
	// h1 and h2 reach the cluster directly; h3 only through an SSH tunnel
	// that h1's daemon keeps (agentmsg hosts add h3 --ssh, below). h1 is
	// the operator's machine too: its config names the operator's key.
	sshd := lab.StartSSHD(lab.Hosts[2])
	b := newBus(t, lab)
	b.add("h1")
	b.add("h2")
	cluster := b.cluster

	hs := make([]*host, len(lab.Hosts))
	for i, nh := range lab.Hosts {
		h := &host{name: fmt.Sprintf("h%d", i+1), net: nh, srv: harness.NewTestServer(t)}
		if err := h.srv.StopDaemon(); err != nil { // the suite's daemon mode: this test runs its own
			t.Fatal(err)
		}
		if i < 2 {
			appendConfig(t, h.srv, fmt.Sprintf("\n[hosts]\nname = %q\nnats = %q\nnkey_file = %q\nca_file = %q\nreplicas = 3\n",
				h.name, strings.Join(b.urls, ","), b.seeds[h.name], cluster.CAFile()))
		}
		if i == 0 {
			appendConfig(t, h.srv, b.operatorTable())
		}
		hs[i] = h
	}
	// h3 joins as a person would: hosts add on h1 makes its stream (as the
	// operator) and its key, installs the key, the CA and h3's [hosts] on
	// the box over ssh, and adds the tunnel to h1's config; the operator
	// adds the user it printed to the bus.
	res := hs[0].srv.Run("--json", "hosts", "add", "h3", "--ssh", sshd.Alias, "--ssh-config", sshd.Config,
		"--port", "14222", "--remote-config-dir", filepath.Dir(hs[2].srv.ConfigPath()))
	added, err := harness.Decode[struct {
		User        string   `json:"nats_user"`
		Box         string   `json:"box_settings"`
		Provisioned []string `json:"provisioned"`
	}](res.Stdout)
	if res.Code != 0 || err != nil || !strings.Contains(added.Box, `nats = "tls://127.0.0.1:14222"`) || !slices.Contains(added.Provisioned, "made AGENTMSG_h3") {
		t.Fatalf("hosts add h3 --ssh: %v\n%s", err, res)
	}
	b.users["h3"] = added.User
	b.reload()
	for i, h := range hs {
		for k := 1; k <= 3; k++ {
			busy := time.Duration(rng.IntN(4)*100) * time.Millisecond
			h.agents = append(h.agents, h.srv.StartAgent(fmt.Sprintf("agent-t-a%d%d", i+1, k), harness.BusyAfterSubmit(busy)))
		}
		h.api = apiClient(h.srv.DaemonSocket())
		if err := h.startDaemon(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(h.stopDaemon) // before the lab's cleanup, which kills what runs in its namespaces
	}
	defer func() {
		if t.Failed() {
			for i := range lab.Hosts {
				t.Logf("NATS node %d: %s", i+1, cluster.Health(i))
			}
			for _, h := range hs {
				b, _ := os.ReadFile(filepath.Join(h.srv.Dir, "logs", "daemon.log"))
				t.Logf("%s's daemon log:\n%s", h.name, b)
			}
		}
	}()
	waitAllHostsUp(t, hs, 3)

	// Traffic: two senders per host, each sending to random agents on the
	// other hosts, one message at a time.
	var mu sync.Mutex
	var all []sent
	var senders sync.WaitGroup
	perSender := total / (2 * len(hs))
	// The traffic spans the faults: each sender paces itself over their
	// planned length, and goes on until they are over.
	pace := (25*time.Second + cut) / time.Duration(perSender)
	faultsDone := make(chan struct{})
	next := map[string]*atomic.Int64{} // each sender's next id's number
	for hi, h := range hs {
		for k := range 2 {
			from := fmt.Sprintf("app%d%c", hi+1, 'a'+k)
			tag := strings.ToUpper(from)
			r := rand.New(rand.NewPCG(seed+uint64(hi*10+k), 7))
			next[tag] = &atomic.Int64{}
			senders.Go(func() {
				for n := 0; ; n++ {
					next[tag].Store(int64(n))
					if n >= perSender {
						select {
						case <-faultsDone:
							return
						default:
						}
					}
					to := hs[(hi+1+r.IntN(len(hs)-1))%len(hs)]
					agent := to.agents[r.IntN(len(to.agents))]
					id := fmt.Sprintf("MSG_%s_%08x", tag, n)
					noQueue := r.IntN(8) == 0 // typed now or never
					verdict, err := h.post(from, id, to.name, "t", strings.TrimPrefix(agent.Session, "agent-t-"), fmt.Sprintf("%s n%d", from, n), noQueue)
					s := sent{id: id, from: from, toHost: to.name, to: agent.Session, verdict: verdict, hostIndex: hi, noQueue: noQueue, told: time.Now()}
					if err != nil {
						s.err = err.Error()
						time.Sleep(200 * time.Millisecond) // the daemon is being restarted
					}
					mu.Lock()
					all = append(all, s)
					mu.Unlock()
					time.Sleep(time.Duration(r.Int64N(int64(2 * pace))))
				}
			})
		}
	}

	// Broadcasts to the team on every host, from h1, every few seconds
	// through all the faults (the cut among them): each copy's verdict is
	// its host's, and each copy taken is typed once.
	var casts []castCopy
	var castsDone sync.WaitGroup
	castsDone.Go(func() {
		r := rand.New(rand.NewPCG(seed, 11))
		for n := 0; ; n++ {
			select {
			case <-faultsDone:
				return
			case <-time.After(time.Duration(2000+r.IntN(3000)) * time.Millisecond):
			}
			id := fmt.Sprintf("MSG_BCAST_%08x", n)
			copies, err := hs[0].broadcast("bcast", id, "t", fmt.Sprintf("all hands n%d", n))
			if err != nil {
				t.Logf("broadcast %s: %v", id, err) // h1's daemon is being restarted
				continue
			}
			mu.Lock()
			casts = append(casts, copies...)
			mu.Unlock()
		}
	})

	// h2's user, used by hand as a compromised host would, reports h1's
	// messages to h3's agents submitted while h3's daemon is stopped: the
	// ids its senders will use next are easy to guess.
	forge := func(stop <-chan struct{}) (published int) {
		_, js := b.as("h2", func(error) {})
		for {
			select {
			case <-stop:
				return published
			case <-time.After(250 * time.Millisecond):
			}
			for _, tag := range []string{"APP1A", "APP1B"} {
				n := int(next[tag].Load())
				for i := n - 1; i <= n+4; i++ {
					for k := 1; k <= 3; k++ {
						id := fmt.Sprintf("MSG_%s_%08x", tag, max(i, 0))
						ctx, cancel := context.WithTimeout(context.Background(), time.Second)
						_, err := js.Publish(ctx, "agentmsg.ev.h1.h2", packet("ev", "h2", "h1", id, map[string]any{
							"team": "t", "agent": fmt.Sprintf("a3%d", k), "state": "submitted", "at": time.Now().UTC(), "seq": time.Now().UnixNano()}))
						cancel()
						if err == nil {
							published++
						}
					}
				}
			}
		}
	}

	// Faults, one after another, while the traffic flows.
	faults := func() {
		step := func(what string, f func() error) {
			t.Logf("%s: %s", time.Now().Format("15:04:05.000"), what)
			if err := f(); err != nil {
				t.Errorf("%s: %v", what, err)
			}
		}
		pause := func(d time.Duration) { time.Sleep(d) }
		pause(3 * time.Second)
		step("kill -9 NATS node 1", func() error { return cluster.KillNode(0) })
		pause(5 * time.Second)
		step("start NATS node 1", func() error { return cluster.StartNode(0) })
		pause(2 * time.Second)
		step("kill -9 h2's daemon", func() error { hs[1].killDaemon(); return nil })
		pause(time.Second)
		step("start h2's daemon", hs[1].startDaemon)
		pause(2 * time.Second)
		step("stop h2's tmux server for 12 s (SIGSTOP): it answers nothing", func() error {
			pid, err := strconv.Atoi(strings.TrimSpace(hs[1].srv.Tmux("display", "-p", "#{pid}")))
			if err != nil {
				return err
			}
			if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
				return err
			}
			pause(12 * time.Second)
			return syscall.Kill(pid, syscall.SIGCONT)
		})
		pause(2 * time.Second)
		step("stop h3's daemon for 10 s, h2's user reporting h1's messages to h3 submitted meanwhile", func() error {
			hs[2].stopDaemon()
			stop := make(chan struct{})
			forged := make(chan int)
			go func() { forged <- forge(stop) }()
			pause(10 * time.Second)
			close(stop)
			t.Logf("%s: h2's user published %d forged reports", time.Now().Format("15:04:05.000"), <-forged)
			return hs[2].startDaemon()
		})
		pause(2 * time.Second)
		step(fmt.Sprintf("cut h3's link for %s", cut), func() error { return hs[2].net.LinkDown() })
		pause(cut)
		step("h3's link back", func() error { return hs[2].net.LinkUp() })
		pause(3 * time.Second)
		step("restart host h1 whole: kill -9 its daemon and its NATS node, then start both", func() error {
			hs[0].killDaemon()
			if err := cluster.KillNode(0); err != nil {
				return err
			}
			if err := cluster.StartNode(0); err != nil {
				return err
			}
			return hs[0].startDaemon()
		})
	}
	go func() { faults(); close(faultsDone) }()
	senders.Wait()
	castsDone.Wait()

	// Every message a sender may have handed over must arrive, once.
	received := func() map[string][]string { // session -> ids in order
		out := map[string][]string{}
		for _, h := range hs {
			for _, a := range h.agents {
				for _, line := range a.Received() {
					id, _, _ := strings.Cut(line, ":")
					out[a.Session] = append(out[a.Session], id)
				}
			}
		}
		return out
	}
	want := map[string]bool{} // ids that must arrive
	for _, s := range all {
		// A --no-queue message told deferred (no verdict in time) may
		// still fail there, its time up: only one told taken must arrive.
		if s.err == "" && s.verdict != "not_found" && s.verdict != "failed" && s.verdict != "not_ready" && (!s.noQueue || s.verdict == "submitted" || s.verdict == "queued") {
			want[s.id] = true
		}
	}
	// Every broadcast copy taken (or kept: deferred) must arrive, once.
	wantCast := map[[2]string]bool{} // id, session
	for _, c := range casts {
		if c.verdict != "not_found" && c.verdict != "failed" && c.verdict != "not_ready" {
			wantCast[[2]string{c.id, c.session}] = true
		}
	}
	deadline := time.Now().Add(3 * time.Minute)
	var got map[string][]string
	for {
		got = received()
		n := 0
		for session, ids := range got {
			for _, id := range ids {
				if want[id] || wantCast[[2]string{id, session}] {
					n++
				}
			}
		}
		if n >= len(want)+len(wantCast) || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	typedAt := typedTimes(t, hs) // id, session -> when the agent got it
	castVerdicts := map[string]int{}
	castWrong := 0
	for _, c := range casts {
		castVerdicts[c.verdict]++
		n := 0
		for _, id := range got[c.session] {
			if id == c.id {
				n++
			}
		}
		at, typed := typedAt[[2]string{c.id, c.session}]
		switch {
		case n > 1:
			t.Errorf("broadcast %s arrived %d times at %s", c.id, n, c.session)
		case wantCast[[2]string{c.id, c.session}] && n == 0:
			t.Errorf("broadcast %s to %s (told %s) never arrived", c.id, c.session, c.verdict)
		case !wantCast[[2]string{c.id, c.session}] && n > 0:
			t.Errorf("broadcast %s to %s (told %s) arrived", c.id, c.session, c.verdict)
		case (c.verdict == "submitted" || c.verdict == "queued") && typed && at.After(c.told.Add(verdictSlack)):
			t.Errorf("broadcast %s to %s was told %s at %s, before it was typed at %s", c.id, c.session, c.verdict, c.told.Format("15:04:05.000"), at.Format("15:04:05.000"))
		default:
			continue
		}
		castWrong++
	}
	early := 0
	for _, s := range all {
		if at, ok := typedAt[[2]string{s.id, s.to}]; ok && s.verdict == "submitted" && at.After(s.told.Add(verdictSlack)) {
			early++
			t.Errorf("%s to %s on %s was told submitted at %s, before it was typed at %s", s.id, s.to, s.toHost, s.told.Format("15:04:05.000"), at.Format("15:04:05.000"))
		}
	}
	t.Logf("broadcasts --all-hosts from h1: %d copies (%v), each typed once where taken: %d wrong; sends told submitted before they were typed: %d",
		len(casts), castVerdicts, castWrong, early)

	counts := map[string]int{}
	where := map[string]string{}
	for session, ids := range got {
		for _, id := range ids {
			counts[id]++
			where[id] = session
		}
	}
	var lost, doubled, misplaced, falseSubmitted, falseFailed, disordered, errored, erroredArrived int
	for _, s := range all {
		switch {
		case counts[s.id] > 1:
			doubled++
			t.Errorf("%s arrived %d times", s.id, counts[s.id])
		case counts[s.id] == 1 && where[s.id] != s.to:
			misplaced++
			t.Errorf("%s arrived at %s, sent to %s", s.id, where[s.id], s.to)
		}
		if s.err != "" {
			errored++
			if counts[s.id] == 1 {
				erroredArrived++
			}
			// The sender that lost its answer reads the truth from its
			// daemon: the other host's report when it arrived, and
			// nothing when it never left.
			// The other host's report may still be on its way.
			arrived := counts[s.id] == 1
			var state string
			var code int
			for end := time.Now().Add(90 * time.Second); ; time.Sleep(500 * time.Millisecond) {
				state, code = hs[s.hostIndex].remoteState(s.id)
				// Never arrived: never left, or (--no-queue) failed there.
				never := code == 404 || s.noQueue && code == 200 && (state == "failed" || state == "not_ready")
				if (arrived && code == 200 && (state == "submitted" || state == "queued")) || (!arrived && never) || time.Now().After(end) {
					break
				}
			}
			never := code == 404 || s.noQueue && code == 200 && (state == "failed" || state == "not_ready")
			if (arrived && (code != 200 || state != "submitted" && state != "queued")) || (!arrived && !never) {
				there := "?"
				for _, h := range hs {
					if h.name == s.toHost {
						there = h.messageDoc(s.id)
					}
				}
				var links []string
				for _, h := range hs {
					links = append(links, h.name+": "+h.srv.Run("--json", "hosts").Stdout)
				}
				t.Errorf("%s (no answer, arrived %d times): GET /v1/messages says %d %q; here: %.2000s\non %s: %.2000s\nlinks:\n%s", s.id, counts[s.id], code, state, hs[s.hostIndex].messageDoc(s.id), s.toHost, there, strings.Join(links, "\n"))
			}
			continue
		}
		if want[s.id] && counts[s.id] == 0 {
			lost++
			t.Errorf("%s to %s on %s (told %s) never arrived", s.id, s.to, s.toHost, s.verdict)
		}
		if s.verdict == "submitted" && counts[s.id] == 0 {
			falseSubmitted++
		}
		if (s.verdict == "not_ready" || s.verdict == "failed") && counts[s.id] > 0 {
			falseFailed++
			t.Errorf("%s to %s on %s (told %s) arrived", s.id, s.to, s.toHost, s.verdict)
		}
	}
	// Order per sender and recipient: the ids of one sender at one agent
	// arrive in the order sent (ids count up).
	for session, ids := range got {
		last := map[string]string{}
		for _, id := range ids {
			from := id[:strings.LastIndex(id, "_")]
			if prev, ok := last[from]; ok && id < prev {
				disordered++
				t.Errorf("at %s, %s arrived after %s", session, id, prev)
			}
			last[from] = id
		}
	}
	verdicts := map[string]int{}
	for _, s := range all {
		v := s.verdict
		if s.err != "" {
			v = "no answer"
		}
		verdicts[v]++
	}
	names := slices.Sorted(maps.Keys(verdicts))
	var summary []string
	for _, k := range names {
		summary = append(summary, fmt.Sprintf("%s %d", k, verdicts[k]))
	}
	noQueue := 0
	for _, s := range all {
		if s.noQueue {
			noQueue++
		}
	}
	t.Logf("seed %d: %d messages sent (%s; %d of them --no-queue); arrived once: %d of %d that must; lost %d, doubled %d, misplaced %d, reported submitted but not arrived %d, reported not ready but arrived %d, out of order %d; no answer %d (of which arrived %d)",
		seed, len(all), strings.Join(summary, ", "), noQueue, len(want)-lost, len(want), lost, doubled, misplaced, falseSubmitted, falseFailed, disordered, errored, erroredArrived)
	if len(all) < 1000 && total >= 1000 {
		t.Errorf("only %d messages were sent", len(all))
	}
}

// apiClient is an HTTP client of a daemon's socket.
func apiClient(sock string) *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
}

// waitFor polls cond for up to two minutes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitAllHostsUp waits until every host lists every host up with its
// agents agents (any number but none, when agents < 0).
func waitAllHostsUp(t *testing.T, hs []*host, agents int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for _, h := range hs {
		for {
			res := h.srv.Run("--json", "hosts")
			var doc struct {
				Hosts []struct {
					Name   string
					Up     bool
					Agents []string
				}
			}
			_ = json.Unmarshal([]byte(res.Stdout), &doc)
			up := 0
			for _, x := range doc.Hosts {
				if x.Up && (len(x.Agents) == agents || agents < 0 && len(x.Agents) > 0) {
					up++
				}
			}
			if up == len(hs) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s does not list every host up with its agents:\n%s", h.name, res)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}

// appendConfig adds text to s's config file.
func appendConfig(t *testing.T, s *harness.TestServer, text string) {
	t.Helper()
	f, err := os.OpenFile(s.ConfigPath(), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}

// verdictSlack is how much later than its verdict a message told
// submitted may show in the stand-in's log (the two clocks are the same
// machine's; the stand-in writes its record after reading the prompt).
const verdictSlack = 500 * time.Millisecond

// castCopy is one copy of a broadcast and what its sender was told.
type castCopy struct {
	id, session, verdict string
	told                 time.Time
}

// broadcast sends a broadcast --all-hosts to team through h's daemon's API,
// with the sender's own id, and returns each copy's verdict.
func (h *host) broadcast(from, id, team, text string) ([]castCopy, error) {
	body, _ := json.Marshal(map[string]any{"team": team, "all_hosts": true, "from": from, "id": id, "text": text, "ready_timeout": "2s"})
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", "http://agentmsg/v1/broadcast", strings.NewReader(string(body)))
	resp, err := h.api.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var doc struct {
		Results []struct {
			Host    string `json:"host"`
			Session string `json:"session"`
			Team    string `json:"team"`
			Agent   string `json:"agent"`
			Verdict string `json:"verdict"`
		} `json:"results"`
		Error string `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		return nil, err
	}
	if len(doc.Results) == 0 {
		return nil, fmt.Errorf("HTTP %d: %s", resp.StatusCode, doc.Error)
	}
	now := time.Now()
	var out []castCopy
	for _, r := range doc.Results {
		out = append(out, castCopy{id: id, session: "agent-" + r.Team + "-" + r.Agent, verdict: r.Verdict, told: now})
	}
	return out, nil
}

// typedTimes is when each agent got each message, from the stand-ins' logs.
func typedTimes(t *testing.T, hs []*host) map[[2]string]time.Time {
	t.Helper()
	out := map[[2]string]time.Time{}
	for _, h := range hs {
		for _, a := range h.agents {
			for _, r := range a.Records() {
				if r.Kind != "prompt" {
					continue
				}
				id, _, _ := strings.Cut(r.Text, ":")
				at, err := time.Parse(time.RFC3339Nano, r.T)
				if err == nil {
					out[[2]string{id, a.Session}] = at
				}
			}
		}
	}
	return out
}
