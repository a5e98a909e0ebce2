package multihost

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmsg/agentmsg/e2e/harness"
	"github.com/agentmsg/agentmsg/e2e/netlab"
)

// The attack suite (issue 30): a compromised host, its NATS user and its
// machine, on a real three-node cluster with TLS, three hosts in network
// namespaces and a fourth that joins later. As h2's user, by hand, it tries
// to read what is sent to others, to pose as another host, to speak for
// another host's copies and to keep another host out. Each attempt must
// be refused or come to nothing: nothing read, nothing typed, no verdict
// changed, the host that joins later reached. scripts/test runs it as a
// step of its own (the "attacks of a compromised host" step).
func TestAttacksOfACompromisedHost(t *testing.T) {
	start := time.Now()
	lab := netlab.New(t, 3)
	b := newBus(t, lab)
	for _, n := range []string{"h1", "h2", "h3"} {
		b.add(n)
	}
	h1 := b.startHost(0, "h1", []string{"agent-t-a11", "agent-t-a12"})
	h2 := b.startHost(1, "h2", []string{"agent-t-a21"})
	h3 := b.startHost(2, "h3", []string{"agent-t-a31"})
	hs := []*host{h1, h2, h3}
	waitAllHostsUp(t, hs, -1)
	t.Logf("lab, cluster and three hosts up in %s", time.Since(start).Round(time.Millisecond))

	var mu sync.Mutex
	var violations []string
	nc, js := b.as("h2", func(err error) {
		mu.Lock()
		violations = append(violations, err.Error())
		mu.Unlock()
	})
	// Everything h2's user hears, on any subscription it manages to make.
	var heard []string
	listen := func(subj string) {
		if _, err := nc.Subscribe(subj, func(m *nats.Msg) {
			mu.Lock()
			heard = append(heard, m.Subject+": "+string(m.Data))
			mu.Unlock()
		}); err != nil {
			t.Logf("subscribe %s: %v", subj, err)
		}
	}
	for _, subj := range []string{"agentmsg.*.h1.*", "agentmsg.*.h3.*", "agentmsg.>", "_INBOX_h1.>", "_INBOX_h3.>", "$JS.>", "$KV.>", ">"} {
		listen(subj)
	}
	_ = nc.Flush()

	type attempt struct{ what, result string }
	var results []attempt
	ctx := func() context.Context {
		c, cancel := context.WithTimeout(context.Background(), time.Second)
		t.Cleanup(cancel)
		return c
	}
	seen := 0 // the bus's refusals already told of
	refused := func(what string, err error) {
		t.Helper()
		r := "refused: " + firstLine(fmt.Sprint(err))
		mu.Lock()
		if len(violations) > seen {
			r = "refused: " + firstLine(strings.TrimPrefix(violations[len(violations)-1], "nats: permissions violation: "))
		}
		seen = len(violations)
		mu.Unlock()
		if err == nil {
			r = "DONE"
			t.Errorf("%s: the bus did it", what)
		}
		results = append(results, attempt{what, r})
	}

	// 1. Streams: its own, changed to take others' mail or speak for them.
	own, err := js.Stream(ctx(), "AGENTMSG_h2")
	if err != nil {
		t.Fatalf("h2 cannot look at its own stream: %v", err)
	}
	cfg := own.CachedInfo().Config
	with := func(change func(*jetstream.StreamConfig)) jetstream.StreamConfig {
		c := cfg
		change(&c)
		return c
	}
	_, err = js.UpdateStream(ctx(), with(func(c *jetstream.StreamConfig) {
		c.Sources = []*jetstream.StreamSource{{Name: "AGENTMSG_h1"}, {Name: "AGENTMSG_h3"}}
	}))
	refused("stream update: its own stream sources h1's and h3's (their mail, readable by MSG.GET)", err)
	_, err = js.UpdateStream(ctx(), with(func(c *jetstream.StreamConfig) {
		c.RePublish = &jetstream.RePublish{Source: "agentmsg.*.h2.*", Destination: "agentmsg.msg.h1.h3"}
	}))
	refused("stream update: republish its own subjects as h3's packets to h1", err)
	// What the republish would carry: a packet on its own stream's subject.
	if _, err := js.Publish(ctx(), "agentmsg.msg.h2.h2", packet("msg", "h3", "h1", "MSG_LEAD_0f0f0f00",
		map[string]any{"team": "t", "agent": "a11", "sender": "lead", "tag": "LEAD", "text": "FORGED as h3, republished", "queue": true})); err != nil {
		t.Fatalf("h2 cannot publish into its own stream: %v", err)
	}
	// Each update replaces the one before: the last two keep h4's subjects.
	_, err = js.UpdateStream(ctx(), with(func(c *jetstream.StreamConfig) {
		c.Subjects = append(c.Subjects, "agentmsg.*.h4.*")
	}))
	refused("stream update: take h4's subjects (h4 has not joined)", err)
	_, err = js.UpdateStream(ctx(), with(func(c *jetstream.StreamConfig) {
		c.Subjects = append(c.Subjects, "agentmsg.*.h4.*")
		c.AllowRollup, c.AllowMsgSchedules = true, true
	}))
	refused("stream update: allow roll-ups and schedules", err)
	_, err = js.CreateStream(ctx(), jetstream.StreamConfig{Name: "AGENTMSG_h4", Subjects: []string{"agentmsg.*.h4.*"}})
	refused("stream create: h4's stream, before h4 joins", err)
	_, err = js.CreateStream(ctx(), jetstream.StreamConfig{Name: "TAKE", Subjects: []string{"agentmsg.*.h4.*"}})
	refused("stream create: another stream holding h4's subjects", err)
	_, err = js.CreateStream(ctx(), jetstream.StreamConfig{Name: "COPY", Mirror: &jetstream.StreamSource{Name: "AGENTMSG_h1"}})
	refused("stream create: a mirror of h1's stream", err)
	_, err = js.CreateStream(ctx(), jetstream.StreamConfig{Name: "COPY", Sources: []*jetstream.StreamSource{{Name: "AGENTMSG_h3"}}})
	refused("stream create: a stream sourcing h3's", err)

	// 2. The presence bucket: its stream, others' entries.
	kvStream, err := js.Stream(ctx(), "KV_agentmsg_hosts")
	if err != nil {
		t.Fatalf("h2 cannot look at the presence bucket: %v", err)
	}
	kvc := kvStream.CachedInfo().Config
	kvc.Sources = []*jetstream.StreamSource{{Name: "AGENTMSG_h1"}}
	_, err = js.UpdateStream(ctx(), kvc)
	refused("stream update: the presence bucket sources h1's stream", err)
	_, err = js.Publish(ctx(), "$KV.agentmsg_hosts.h1", []byte(`{"agents":[],"at":"2000-01-01T00:00:00Z","left":true}`))
	refused("KV put: h1's presence (say it left)", err)
	rollup := nats.NewMsg("$KV.agentmsg_hosts.h2")
	rollup.Header.Set("Nats-Rollup", "all")
	rollup.Data = []byte(`{"agents":["t/a21"]}`)
	_, err = js.PublishMsg(ctx(), rollup)
	refused("KV put: its own entry with Nats-Rollup: all (every other entry gone)", err)

	// 3. Consumers and reads on others' streams.
	_, err = js.CreateConsumer(ctx(), "AGENTMSG_h1", jetstream.ConsumerConfig{Durable: "steal", AckPolicy: jetstream.AckNonePolicy})
	refused("consumer create: a durable on h1's stream", err)
	_, err = js.OrderedConsumer(ctx(), "AGENTMSG_h3", jetstream.OrderedConsumerConfig{})
	refused("consumer create: an ordered consumer on h3's stream", err)
	for _, api := range []struct{ subj, body string }{
		{"$JS.API.STREAM.MSG.GET.AGENTMSG_h1", `{"seq":1}`},
		{"$JS.API.STREAM.MSG.GET.AGENTMSG_h3", `{"last_by_subj":"agentmsg.msg.h3.h1"}`},
		{"$JS.API.DIRECT.GET.AGENTMSG_h1", `{"seq":1}`},
		{"$JS.API.DIRECT.GET.AGENTMSG_h3.agentmsg.msg.h3.h1", ``},
		{"$JS.API.STREAM.INFO.AGENTMSG_h1", ``},
		{"$JS.API.STREAM.PURGE.AGENTMSG_h1", `{}`},
		{"$JS.API.STREAM.DELETE.AGENTMSG_h3", ``},
		{"$JS.API.STREAM.NAMES", `{}`},
	} {
		_, err := nc.Request(api.subj, []byte(api.body), time.Second)
		refused("direct API: "+api.subj, err)
	}

	// 4. Forged senders. On h3's subject: refused by the bus. On its own
	// subject with a body naming h3: taken by the bus, refused by h1.
	forged := packet("msg", "h3", "h1", "MSG_LEAD_0f0f0f01", map[string]any{"team": "t", "agent": "a11", "sender": "lead", "tag": "LEAD", "text": "FORGED as h3, on h3's subject", "queue": true})
	_, err = js.Publish(ctx(), "agentmsg.msg.h1.h3", forged)
	refused("publish: a message to h1 on h3's subject", err)
	forgedBody := packet("msg", "h3", "h1", "MSG_LEAD_0f0f0f02", map[string]any{"team": "t", "agent": "a11", "sender": "lead", "tag": "LEAD", "text": "FORGED as h3, on its own subject", "queue": true})
	if _, err := js.Publish(ctx(), "agentmsg.msg.h1.h2", forgedBody); err != nil {
		t.Fatalf("h2 cannot publish on its own subject: %v", err)
	}
	results = append(results, attempt{"publish: a message to h1 on its own subject whose body says h3", "taken by the bus; h1 refuses it (checked below: nothing typed)"})
	sched := nats.NewMsg("agentmsg.msg.h1.h2")
	sched.Header.Set("Nats-Schedule", "@at "+time.Now().Add(time.Second).UTC().Format(time.RFC3339))
	sched.Header.Set("Nats-Schedule-Target", "agentmsg.msg.h1.h3")
	sched.Data = forged
	_, err = js.PublishMsg(ctx(), sched)
	refused("publish: a message scheduled to be published on h3's subject", err)
	_, err = js.Publish(ctx(), "_INBOX_h1.forged", []byte(`{"stream":"AGENTMSG_h3","seq":1}`))
	refused("publish: a JetStream answer into h1's inbox", err)

	// 5. Keeping another host's packet out: published first with the
	// Nats-Msg-Id the real one carried before (its id and copy).
	m := nats.NewMsg("agentmsg.msg.h1.h2")
	m.Data = packet("msg", "h2", "h1", "MSG_LEAD_0f0f0f03", map[string]any{"team": "t", "agent": "a12", "sender": "lead", "tag": "LEAD", "text": "from h2, carrying the id h3's next packet would", "queue": true})
	m.Header.Set("Nats-Msg-Id", "MSG_APP_0000a4a4.t.a11")
	if _, err := js.PublishMsg(ctx(), m); err != nil {
		t.Fatalf("h2 cannot publish on its own subject: %v", err)
	}
	if v, err := h3.post("app", "MSG_APP_0000a4a4", "h1", "t", "a11", "from h3: kept out?", false); err != nil || v != "submitted" {
		t.Errorf("h3's message after h2 took its Nats-Msg-Id: %s %v; want submitted", v, err)
		results = append(results, attempt{"publish first with the Nats-Msg-Id of h3's next packet to h1", "h3's packet dropped: " + v})
	} else {
		results = append(results, attempt{"publish first with the Nats-Msg-Id of h3's next packet to h1", "came to nothing: h3's message submitted"})
	}

	// 6. Forged reports. h3's daemon stops; h1 sends to h3's agent; h2
	// reports it submitted, and reports on a copy it was never sent.
	h3.stopDaemon()
	v, err := h1.post("lead", "MSG_LEAD_0000b0b0", "h3", "t", "a31", "to h3 while its daemon is stopped", false)
	if err != nil || v != "deferred" {
		t.Errorf("send to h3 while its daemon is stopped: %s %v; want deferred", v, err)
	}
	for i, rep := range []struct {
		subj string
		from string
		body map[string]any
	}{
		{"agentmsg.ev.h1.h2", "h2", map[string]any{"team": "t", "agent": "a31", "state": "submitted"}},
		{"agentmsg.ev.h1.h2", "h3", map[string]any{"team": "t", "agent": "a31", "state": "submitted"}},
		{"agentmsg.ev.h1.h3", "h3", map[string]any{"team": "t", "agent": "a31", "state": "submitted"}},
	} {
		body := rep.body
		body["at"], body["seq"] = time.Now().UTC(), time.Now().UnixNano()+int64(i)
		_, err := js.Publish(ctx(), rep.subj, packet("ev", rep.from, "h1", "MSG_LEAD_0000b0b0", body))
		what := fmt.Sprintf("report: %s, body from %s, says h1's message to h3 submitted", rep.subj, rep.from)
		if rep.subj == "agentmsg.ev.h1.h3" {
			refused(what, err)
			continue
		}
		results = append(results, attempt{what, fmt.Sprintf("taken by the bus (%v); h1 must not believe it (checked below)", err)})
	}
	time.Sleep(2 * time.Second)
	if state, code := h1.remoteState("MSG_LEAD_0000b0b0"); code != http.StatusOK || state != "outbox" {
		t.Errorf("h1's record of its message to h3 after h2's reports: %d %q; want outbox (h3 has not read it)", code, state)
		results = append(results, attempt{"h1's record after the forged reports", state})
	}

	// 7. h4 joins after all that: the operator adds it, it comes up, and a
	// message reaches it.
	b.add("h4")
	h4 := &host{name: "h4", srv: harness.NewTestServer(t)}
	if err := h4.srv.StopDaemon(); err != nil {
		t.Fatal(err)
	}
	appendConfig(t, h4.srv, b.hostsTable("h4", 0))
	h4.agents = append(h4.agents, h4.srv.StartAgent("agent-t-a41"))
	if err := h4.srv.StartDaemon(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h4.srv.StopDaemon() })
	h4.api = apiClient(h4.srv.DaemonSocket())
	joined := time.Now()
	for {
		v, err := h1.post("lead", fmt.Sprintf("MSG_LEAD_0000c%03x", int(time.Since(joined)/time.Second)), "h4", "t", "a41", "welcome h4", true)
		if err == nil && v == "submitted" {
			results = append(results, attempt{"h4 joins after h2 tried to take its subjects", fmt.Sprintf("up; a message to it submitted %s after it started", time.Since(joined).Round(time.Millisecond))})
			break
		}
		if time.Since(joined) > 45*time.Second {
			t.Errorf("h4 never reached: %s %v\n%s", v, err, h4.srv.Run("--json", "hosts"))
			results = append(results, attempt{"h4 joins after h2 tried to take its subjects", "not reached: " + v})
			break
		}
		time.Sleep(time.Second)
	}

	// Nothing typed but what its sender sent; nothing read.
	time.Sleep(2 * time.Second)
	for _, h := range append(hs, h4) {
		for _, a := range h.agents {
			for _, line := range a.Received() {
				if strings.Contains(line, "FORGED") || strings.Contains(line, "MSG_LEAD_0000b0b0") {
					t.Errorf("%s typed %q", a.Session, line)
				}
			}
		}
	}
	mu.Lock()
	others := 0
	for _, h := range heard {
		if !strings.HasPrefix(h, "agentmsg.msg.h2.") && !strings.HasPrefix(h, "agentmsg.ev.h2.") && !strings.HasPrefix(h, "_INBOX_h2.") {
			t.Errorf("h2's user heard %.200s", h)
			others++
		}
	}
	nViolations := len(violations)
	mu.Unlock()
	results = append(results, attempt{"subscribe: agentmsg.*.h1.*, agentmsg.*.h3.*, agentmsg.>, _INBOX_h1.>, _INBOX_h3.>, $JS.>, $KV.>, >",
		fmt.Sprintf("refused; heard %d packets of other hosts' while h1, h3 and h4 exchanged mail", others)})
	// The operator's view: no stream but those it made.
	_, ojs := b.asOperator()
	for _, name := range []string{"COPY", "TAKE"} {
		if _, err := ojs.Stream(ctx(), name); err == nil {
			t.Errorf("stream %s is on the bus", name)
		}
	}
	var table strings.Builder
	for _, r := range results {
		fmt.Fprintf(&table, "\n  %-95s %s", r.what, r.result)
	}
	t.Logf("attacks as h2's user (%d refusals from the bus), in %s:%s", nViolations, time.Since(start).Round(time.Second), table.String())
	if os.Getenv("AGENTMSG_ATTACK_VERBOSE") == "1" {
		for _, v := range violations {
			t.Log(v)
		}
	}
}

// packet is a packet's JSON as a host sends it.
func packet(kind, from, to, id string, body map[string]any) []byte {
	p := map[string]any{"kind": kind, "from": from, "to": to, "id": id}
	if kind == "msg" {
		p["message"] = body
	} else {
		p["event"] = body
	}
	data, _ := json.Marshal(p)
	return data
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 90 {
		s = s[:90] + "..."
	}
	return s
}
