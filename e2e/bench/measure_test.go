package main

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/e2e/harness"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
)

// The measurements that need the end-to-end harness (real binaries,
// private tmux servers, stand-ins) and decide nothing: each runs only when
// its variable asks for it, logs its figures, and fails only when it
// cannot measure. The program beside them (go run ./e2e/bench,
// scripts/bench) prints the table of delivery's figures.

func TestMain(m *testing.M) {
	code := m.Run()
	harness.Cleanup()
	os.Exit(code)
}

// The time of a send to another host, process start to verdict, over a
// loopback bus: a measurement (AGENTMSG_MEASURE_HOSTS=1), never a pass or
// fail on time. The figures over the namespaces are e2e/multihost's.
func TestCrossHostSendSpeed(t *testing.T) {
	if os.Getenv("AGENTMSG_MEASURE_HOSTS") != "1" {
		t.Skip("a measurement: set AGENTMSG_MEASURE_HOSTS=1")
	}
	h1, h2 := harness.TwoHosts(t)
	h2.StartAgent("agent-alpha-ana")
	harness.WaitHosts(t, h1, "h1", "h2")
	var took []time.Duration
	for i := range 40 {
		start := time.Now()
		res := h1.Run("send", "--host", "h2", "alpha", "ana", fmt.Sprint("timed ", i))
		took = append(took, time.Since(start))
		if res.Code != 0 {
			t.Fatalf("want exit 0, got %s", res)
		}
	}
	slices.Sort(took)
	t.Logf("send --host, process start to verdict, %d sends: median %s, p95 %s, max %s",
		len(took), took[len(took)/2], took[len(took)*95/100], took[len(took)-1])
}

// What top costs at the scale, for the README and docs/top.md: 500
// stand-in agents and 10,000 messages, top idle for 30 s in a 200x50
// pane. It reports; it never fails on a slow machine. Set
// AGENTMSG_MEASURE_TOP=1 to run it (it starts 500 stand-ins).
func TestTopIdleCPU(t *testing.T) {
	if os.Getenv("AGENTMSG_MEASURE_TOP") == "" {
		t.Skip("set AGENTMSG_MEASURE_TOP=1 to measure top with 500 agents and 10,000 messages")
	}
	const agents, messages = 500, 10000
	s := harness.NewTestServer(t)
	names := make([]string, agents)
	for i := range names {
		names[i] = fmt.Sprintf("agent-t%02d-a%03d", i/10, i)
	}
	for chunk := range slices.Chunk(names, 50) {
		s.StartAgents(chunk, harness.NoCue())
	}
	store := s.Mailbox()
	for i := range messages {
		to := i % agents
		box, err := store.Box(fmt.Sprintf("t%02d", to/10), fmt.Sprintf("a%03d", to))
		if err != nil {
			t.Fatal(err)
		}
		state := mailbox.StateSubmitted
		if i%10 == 0 {
			state = mailbox.StateDeferred
		}
		e := mailbox.Envelope{ID: message.ID(fmt.Sprintf("MSG_LEAD_%08x", i)), From: "lead", To: fmt.Sprintf("a%03d", to), Type: mailbox.TypeText,
			Content: "a message of a busy day", Delivery: &mailbox.Delivery{State: state, Attempts: 1}}
		if err := box.AppendBatched(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.Sync(); err != nil {
		t.Fatal(err)
	}
	argv := append([]string{"new-session", "-d", "-P", "-F", "#{pane_pid}", "-s", "top", "-x", "200", "-y", "50", "--", "/usr/bin/env"}, s.Env()...)
	pid, err := strconv.Atoi(strings.TrimSpace(s.Tmux(append(argv, s.Bins.Agentmsg, "-S", s.Socket, "top")...)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Server.PressKeys("=top:", "q") })
	deadline := time.Now().Add(60 * time.Second)
	for {
		screen := s.Capture("=top:")
		if strings.Contains(screen, "500 agents") && strings.Contains(screen, "1000 open of 10000 messages") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("top does not show 500 agents and 1000 open of 10000 messages after 60s:\n%s", screen)
		}
		time.Sleep(50 * time.Millisecond)
	}
	server, err := strconv.Atoi(strings.TrimSpace(s.Tmux("display-message", "-p", "#{pid}")))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Second) // past the start: its first looks and reads
	topBefore, serverBefore := harness.CPUTime(t, pid), harness.CPUTime(t, server)
	const idle = 30 * time.Second
	time.Sleep(idle)
	topCPU, serverCPU := harness.CPUTime(t, pid)-topBefore, harness.CPUTime(t, server)-serverBefore
	t.Logf("%d agents, %d messages, %s idle: agentmsg top used %s of CPU (%.1f%% of a core), the tmux server %s (%.1f%%), on %s",
		agents, messages, idle, topCPU, 100*topCPU.Seconds()/idle.Seconds(), serverCPU, 100*serverCPU.Seconds()/idle.Seconds(), harness.TmuxVersion())
	t.Logf("its screen:\n%s", s.Capture("=top:"))
}
