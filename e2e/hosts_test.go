package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/e2e/harness"
)

// Agents on two hosts (issue 19): two test servers, each its own tmux
// server, mailbox and daemon, joined by one NATS server on loopback
// (harness.TwoHosts).

// waitListed waits until s lists h1 and h2 up and agent among their agents.
func waitListed(t *testing.T, s *harness.TestServer, agent string) {
	t.Helper()
	waitFor(t, "h1 lists h2 with its agents", 30*time.Second, func() bool {
		return strings.Contains(fmt.Sprint(harness.WaitHosts(t, s, "h1", "h2").Hosts), agent)
	})
}

// A message crosses to an agent on another host and is typed there once;
// the sender hears that host's verdict and exit code: submitted, deferred
// for a busy agent (and delivered when it is ready), not_found for no such
// agent, and an unknown host is named as such.
func TestMessageCrossesHosts(t *testing.T) {
	t.Parallel()
	h1, h2 := harness.TwoHosts(t)
	ana := h2.StartAgent("agent-alpha-ana")
	bob := h2.StartAgent("agent-alpha-bob", harness.InitialState("busy"))
	waitListed(t, h1, "alpha/ana")

	rep, res := sendJSON(t, h1, nil, "--host", "h2", "alpha", "ana", "hello across")
	if res.Code != 0 || rep.Verdict != "submitted" {
		t.Fatalf("send --host h2: want submitted, exit 0:\n%s", res)
	}
	first := rep.ID
	wantReceived(t, ana, harness.Submitted(first, "from tester@h1: hello across"))

	rep, res = sendJSON(t, h1, nil, "--host", "h2", "--ready-timeout", "1s", "alpha", "bob", "when you can")
	if res.Code != 0 || rep.Verdict != "deferred" {
		t.Fatalf("send --host h2 to a busy agent: want deferred, exit 0:\n%s", res)
	}
	bob.SetState("ready")
	waitFor(t, "the deferred message at bob", 30*time.Second, func() bool { return len(bob.Received()) == 1 })

	_, res = sendJSON(t, h1, nil, "--host", "h2", "alpha", "nobody", "hi")
	wantCode(t, res, 3)
	res = h1.Run("send", "--host", "h9", "alpha", "ana", "hi")
	if res.Code != 3 || !strings.Contains(res.Stderr, `no such host "h9"`) {
		t.Fatalf("send --host h9: want exit 3 naming the host:\n%s", res)
	}
	wantReceived(t, ana, harness.Submitted(first, "from tester@h1: hello across"))

	// ana answers; the answer crosses back to the sender's host, into its
	// inbox there (it has no session).
	res, _ = h2.RunEnv([]string{"AGENTMSG_FROM=ana", "AGENTMSG_TEAM=alpha"}, "--json", "reply", first, "done, all green")
	if res.Code != 0 || !strings.Contains(res.Stdout, `"verdict": "recorded"`) {
		t.Fatalf("reply across hosts: want recorded, exit 0:\n%s", res)
	}
	res, _ = h1.RunEnv([]string{"AGENTMSG_TEAM=alpha"}, "--json", "inbox", "--all")
	if res.Code != 0 || !strings.Contains(res.Stdout, "done, all green") || !strings.Contains(res.Stdout, `"from_host": "h2"`) || !strings.Contains(res.Stdout, first) {
		t.Fatalf("the reply in tester's inbox on h1:\n%s", res)
	}
}

// A send to another host is typed there as its sender chose, the way a
// send there would have typed it: --no-queue fails (exit 4, not_ready) and
// is never typed later, also behind an older message that waits;
// --while-busy --agent claude goes into a busy agent's queue; --force
// types into a shell prompt. Without them, a shell prompt is refused with
// the same exit code as here.
func TestRemoteSendKeepsItsSendersChoices(t *testing.T) {
	t.Parallel()
	h1, h2 := harness.TwoHosts(t)
	ana := h2.StartAgent("agent-alpha-ana", harness.InitialState("busy"))
	bob := h2.StartAgent("agent-alpha-bob", harness.InitialState("busy"), harness.NoQueue())
	pane := h2.NewShellSession("agent-alpha-sh")
	h2.Tmux("send-keys", "-t", pane, "-l", "PS1='$ '")
	h2.Tmux("send-keys", "-t", pane, "-H", "0d")
	waitListed(t, h1, "alpha/sh")
	waitFor(t, "a shell prompt", 5*time.Second, func() bool { return strings.HasSuffix(strings.TrimRight(h2.Capture(pane), "\n "), "$") })

	rep, res := sendJSON(t, h1, nil, "--host", "h2", "--no-queue", "--ready-timeout", "1s", "alpha", "bob", "now or never")
	if res.Code != 4 || rep.Verdict != "not_ready" {
		t.Fatalf("send --host h2 --no-queue to a busy agent: want not_ready, exit 4:\n%s", res)
	}
	// Longer than a pass waits for one agent: kept there a while, and
	// still not_ready in the end, not deferred.
	rep, res = sendJSON(t, h1, nil, "--host", "h2", "--no-queue", "--ready-timeout", "4s", "alpha", "bob", "in four seconds or never")
	if res.Code != 4 || rep.Verdict != "not_ready" {
		t.Fatalf("send --host h2 --no-queue --ready-timeout 4s to a busy agent: want not_ready, exit 4:\n%s", res)
	}
	rep, res = sendJSON(t, h1, nil, "--host", "h2", "--ready-timeout", "1s", "alpha", "bob", "when you can")
	if res.Code != 0 || rep.Verdict != "deferred" {
		t.Fatalf("send --host h2 to a busy agent: want deferred, exit 0:\n%s", res)
	}
	kept := rep.ID
	_, res = sendJSON(t, h1, nil, "--host", "h2", "--no-queue", "--ready-timeout", "1s", "alpha", "bob", "behind it, never")
	if res.Code != 4 || !strings.Contains(res.Stdout, `"reason": "behind_older"`) {
		t.Fatalf("send --host h2 --no-queue behind a kept message: want not_ready behind older, exit 4:\n%s", res)
	}

	rep, res = sendJSON(t, h1, nil, "--host", "h2", "--while-busy", "--agent", "claude", "alpha", "ana", "next, please")
	if res.Code != 0 || rep.Verdict != "queued" {
		t.Fatalf("send --host h2 --while-busy --agent claude to a busy agent that queues: want queued, exit 0:\n%s", res)
	}

	res = h1.Run("send", "--host", "h2", "alpha", "sh", "; echo ran")
	wantCode(t, res, 4)
	if !strings.Contains(res.Stderr, "shell") {
		t.Errorf("want a refusal naming the shell prompt:\n%s", res.Stderr)
	}
	rep, res = sendJSON(t, h1, nil, "--host", "h2", "--force", "--agent", "generic", "alpha", "sh", "hello shell")
	wantCode(t, res, 0)
	if !strings.Contains(h2.Capture(pane), rep.ID+": from tester@h1: hello shell") || strings.Contains(h2.Capture(pane), "echo ran") {
		t.Errorf("--force typed it, and only it:\n%s", h2.Capture(pane))
	}

	bob.SetState("ready")
	ana.SetState("ready")
	waitFor(t, "the kept message at bob", 30*time.Second, func() bool { return len(bob.Received()) == 1 })
	waitFor(t, "the queued message run by ana", 30*time.Second, func() bool { return len(ana.Received()) == 1 })
	time.Sleep(2 * time.Second) // a --no-queue message typed late would come within this
	got := bob.Received()
	if len(got) != 1 || !strings.Contains(got[0], kept) {
		t.Fatalf("bob received %q, want only the kept message %s", got, kept)
	}
}

// While the bus is down, a send to another host is kept in the sender's
// outbox (deferred, link_down, exit 0) and typed there once when the bus
// is back.
func TestSendWaitsForTheLink(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bus := harness.NATSBus(t, dir, 0)
	_, port, _ := net.SplitHostPort(bus.Addr().String())
	h1 := harness.HostServer(t, "h1", bus.ClientURL())
	h2 := harness.HostServer(t, "h2", bus.ClientURL())
	ana := h2.StartAgent("agent-alpha-ana")
	harness.WaitHosts(t, h1, "h1", "h2")
	bus.Shutdown()
	bus.WaitForShutdown()

	rep, res := sendJSON(t, h1, nil, "--host", "h2", "--ready-timeout", "1s", "alpha", "ana", "after the outage")
	if res.Code != 0 || rep.Verdict != "deferred" || !strings.Contains(res.Stdout, "link_down") {
		t.Fatalf("send while the bus is down: want deferred (link_down), exit 0:\n%s", res)
	}
	var p int
	fmt.Sscan(port, &p)
	bus = harness.NATSBus(t, dir, p)
	defer bus.Shutdown()
	waitFor(t, "the message at ana once the bus is back", 30*time.Second, func() bool { return len(ana.Received()) == 1 })
	time.Sleep(2 * time.Second) // a second copy would come within this
	wantReceived(t, ana, harness.Submitted(rep.ID, "from tester@h1: after the outage"))
}

// A host whose daemon stopped says so on the bus: hosts lists it down at
// once, and a send to it is kept on the bus (deferred, exit 0) within a
// second or two, not after its whole ready timeout and 10 s more, since no
// verdict can come until that host reads the bus again; it is typed there
// once when it does.
func TestSendToAHostThatStopped(t *testing.T) {
	t.Parallel()
	h1, h2 := harness.TwoHosts(t)
	ana := h2.StartAgent("agent-alpha-ana")
	waitListed(t, h1, "alpha/ana")
	if err := h2.StopDaemon(); err != nil {
		t.Fatal(err)
	}
	res := h1.Run("--json", "hosts")
	var doc harness.HostsDoc
	_ = json.Unmarshal([]byte(res.Stdout), &doc)
	for _, h := range doc.Hosts {
		if h.Name == "h2" && h.Up {
			t.Errorf("hosts lists h2 up after its daemon stopped:\n%s", res)
		}
	}
	rep, res := sendJSON(t, h1, nil, "--host", "h2", "--ready-timeout", "5s", "alpha", "ana", "while you were out")
	if res.Code != 0 || rep.Verdict != "deferred" || res.Elapsed > 5*time.Second || !strings.Contains(res.Stdout, "has not answered") {
		t.Fatalf("send to a host whose daemon stopped: want deferred within 5 s, naming it:\n%s", res)
	}
	if err := h2.StartDaemon(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the message at ana once h2 reads the bus again", 30*time.Second, func() bool { return len(ana.Received()) == 1 })
	time.Sleep(2 * time.Second) // a second copy would come within this
	wantReceived(t, ana, harness.Submitted(rep.ID, "from tester@h1: while you were out"))
}

// A send to a host whose daemon died a moment ago (its presence still
// recent, its stream on the bus taking the message) is not kept waiting
// its whole time (the ready timeout and 10 s more): once the host has
// missed an announcement and said nothing, the send says deferred, and the
// message is typed once the host is back.
func TestSendToAHostThatJustDied(t *testing.T) {
	t.Parallel()
	h1, h2 := harness.TwoHosts(t)
	ana := h2.StartAgent("agent-alpha-ana")
	waitListed(t, h1, "alpha/ana")
	h2.KillDaemon()
	rep, res := sendJSON(t, h1, nil, "--host", "h2", "--ready-timeout", "2s", "alpha", "ana", "are you still there")
	if res.Code != 0 || rep.Verdict != "deferred" || res.Elapsed > 9*time.Second || !strings.Contains(res.Stdout, "has not answered") {
		t.Fatalf("send to a host whose daemon was killed: want deferred within 9 s (it missed an announcement), naming it:\n%s", res)
	}
	t.Logf("deferred after %s", res.Elapsed.Round(time.Millisecond))
	if err := h2.StartDaemon(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the message at ana once h2 is back", 30*time.Second, func() bool { return len(ana.Received()) == 1 })
	time.Sleep(2 * time.Second) // a second copy would come within this
	wantReceived(t, ana, harness.Submitted(rep.ID, "from tester@h1: are you still there"))
}

// broadcast --all-hosts reaches the team's agents on every host, each copy
// typed by its own host, with one verdict over all of them.
func TestBroadcastReachesEveryHost(t *testing.T) {
	t.Parallel()
	h1, h2 := harness.TwoHosts(t)
	carl := h1.StartAgent("agent-alpha-carl")
	ana := h2.StartAgent("agent-alpha-ana")
	other := h2.StartAgent("agent-beta-dan")
	waitListed(t, h1, "alpha/ana")
	res := h1.Run("--json", "broadcast", "--all-hosts", "alpha", "all hands")
	rep, err := harness.Decode[harness.BroadcastReport](res.Stdout)
	if err != nil || res.Code != 0 || rep.Verdict != "delivered" || rep.Delivered != 2 {
		t.Fatalf("broadcast --all-hosts: want delivered to 2, exit 0 (%v):\n%s", err, res)
	}
	if !strings.Contains(res.Stdout, `"host": "h2"`) {
		t.Errorf("the copy on h2 does not say its host:\n%s", res.Stdout)
	}
	wantReceived(t, carl, harness.Submitted(rep.ID, "all hands"))
	wantReceived(t, ana, harness.Submitted(rep.ID, "from tester@h1: all hands"))
	wantUntouched(t, other)
}

// list --all-hosts shows the agents other hosts announce, after this
// host's own.
func TestListAllHosts(t *testing.T) {
	t.Parallel()
	h1, h2 := harness.TwoHosts(t)
	h1.StartAgent("agent-alpha-carl")
	h2.StartAgent("agent-alpha-ana")
	h2.StartAgent("agent-beta-dan")
	waitListed(t, h1, "alpha/ana")
	res := h1.Run("list", "--all-hosts", "alpha")
	if res.Code != 0 || !strings.Contains(res.Stdout, "agent-alpha-carl") || !regexp.MustCompile(`h2\s+up\s+alpha/ana`).MatchString(res.Stdout) || strings.Contains(res.Stdout, "beta/dan") {
		t.Fatalf("list --all-hosts alpha:\n%s", res)
	}
}

// A sender whose daemon died while it waited for another host's verdict
// reads the truth from the daemon once it is back: the other host's
// report of the message.
func TestTruthAfterTheSendersDaemonDied(t *testing.T) {
	t.Parallel()
	h1, h2 := harness.TwoHosts(t)
	ana := h2.StartAgent("agent-alpha-ana", harness.InitialState("busy"))
	harness.WaitHosts(t, h1, "h1", "h2")
	c := api(h1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		resp, err := c.Post("http://agentmsg/v1/send", "application/json", strings.NewReader(
			`{"team":"alpha","agent":"ana","host":"h2","from":"app","id":"MSG_APP_0000beef","text":"are you there","ready_timeout":"5s"}`))
		if err == nil {
			resp.Body.Close()
		}
	}()
	time.Sleep(700 * time.Millisecond) // the message is out; its verdict is not
	h1.KillDaemon()
	<-done
	if err := h1.StartDaemon(); err != nil {
		t.Fatal(err)
	}
	ana.SetState("ready")
	waitFor(t, "the message at ana", 30*time.Second, func() bool { return len(ana.Received()) == 1 })
	waitFor(t, "h1 to know it was submitted", 30*time.Second, func() bool {
		var doc struct {
			Remote []struct{ State string } `json:"remote"`
		}
		resp, err := c.Get("http://agentmsg/v1/messages/MSG_APP_0000beef")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		_ = json.NewDecoder(resp.Body).Decode(&doc)
		return resp.StatusCode == 200 && len(doc.Remote) == 1 && doc.Remote[0].State == "submitted"
	})
}
