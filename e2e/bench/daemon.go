package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentmsg/agentmsg/e2e/harness"
)

// The daemon's rows: the same measures through agentmsg serve, its API
// over a kept connection, and what it costs to keep running.

// withDaemon is withServer with the server's daemon running.
func withDaemon(n int, fn func(s *harness.Server, agents []*harness.Agent, c *http.Client) error, opts ...harness.AgentOption) error {
	return withServer(n, func(s *harness.Server, agents []*harness.Agent) error {
		if s.DaemonPID() == 0 {
			if err := s.StartDaemon(profileEnv()...); err != nil {
				return err
			}
		}
		settle(s.DaemonPID())
		c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", s.DaemonSocket())
		}}}
		return fn(s, agents, c)
	}, opts...)
}

var (
	// profileDir, when set (-profile), gets each daemon's CPU profile and
	// execution trace, named after the row that ran it (current).
	profileDir string
	current    string
)

// profileEnv is what makes a daemon write its profile and trace for the
// current row (serve's AGENTMSG_PPROF and AGENTMSG_TRACE).
func profileEnv() []string {
	if profileDir == "" {
		return nil
	}
	base := filepath.Join(profileDir, current)
	return []string{"AGENTMSG_PPROF=" + base + ".pprof", "AGENTMSG_TRACE=" + base + ".trace"}
}

// post is one API call; its body is read to its end, the connection kept.
func post(c *http.Client, path, body string) (string, error) {
	resp, err := c.Post("http://agentmsg"+path, "application/json", strings.NewReader(body))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return string(b), fmt.Errorf("%s: %d %s", path, resp.StatusCode, b)
	}
	return string(b), err
}

func benchAPISend(n int) (row, error) {
	var times []time.Duration
	err := withDaemon(1, func(s *harness.Server, agents []*harness.Agent, c *http.Client) error {
		for i := range n + 5 {
			start := time.Now()
			out, err := post(c, "/v1/send", fmt.Sprintf(`{"team":"bench","agent":"a000","text":"message %d","from":"app"}`, i))
			if err != nil {
				return err
			}
			if !strings.Contains(out, `"verdict": "submitted"`) {
				return fmt.Errorf("send %d: %s", i, out)
			}
			if i >= 5 { // the first few warm the daemon's parts up
				times = append(times, time.Since(start))
			}
		}
		_, err := agents[0].WaitReceived(n+5, 10*time.Second)
		return err
	}, harness.Style("plain"))
	if err != nil {
		return row{}, err
	}
	return row{
		what:   fmt.Sprintf("API send to a ready agent over a kept connection (n=%d)", n),
		result: fmt.Sprintf("median %s, p95 %s", ms(harness.Percentile(times, 50)), ms(harness.Percentile(times, 95))),
		target: "median <= 5 ms, p95 <= 10 ms",
	}, nil
}

func benchCLIThroughDaemon(n int) (row, error) {
	var times []time.Duration
	err := withDaemon(1, func(s *harness.Server, agents []*harness.Agent, _ *http.Client) error {
		for i := range n + 3 {
			res, err := s.Run("send", "bench", "a000", fmt.Sprintf("message %d", i))
			if err != nil || res.Code != 0 {
				return fmt.Errorf("send %d: %v %s", i, err, res)
			}
			if i >= 3 {
				times = append(times, res.Elapsed)
			}
		}
		_, err := agents[0].WaitReceived(n+3, 10*time.Second)
		return err
	}, harness.Style("plain"))
	if err != nil {
		return row{}, err
	}
	return row{
		what:   fmt.Sprintf("agentmsg send through the daemon, process start to exit (n=%d)", n),
		result: fmt.Sprintf("median %s, p95 %s", ms(harness.Percentile(times, 50)), ms(harness.Percentile(times, 95))),
		target: "median <= 10 ms",
	}, nil
}

func benchAPIBroadcast(n, runs int) (row, error) {
	var times []time.Duration
	var rss, cpu string
	err := withDaemon(n, func(s *harness.Server, agents []*harness.Agent, c *http.Client) error {
		for i := range runs + 1 {
			start := time.Now()
			out, err := post(c, "/v1/broadcast", fmt.Sprintf(`{"team":"bench","text":"broadcast %d","from":"app"}`, i))
			if err != nil {
				return err
			}
			if !strings.Contains(out, fmt.Sprintf(`"delivered": %d,`, n)) {
				return fmt.Errorf("broadcast to %d: %.300s", n, out)
			}
			if i > 0 {
				times = append(times, time.Since(start))
			}
		}
		for _, a := range agents {
			if got, err := a.WaitReceived(runs+1, 20*time.Second); err != nil || len(got) != runs+1 {
				return fmt.Errorf("%s received %d of %d: %v", a.Session, len(got), runs+1, err)
			}
		}
		pid := s.DaemonPID()
		rss = vmRSS(pid)
		cpu = idleCPU(pid, 10*time.Second)
		return nil
	}, harness.Style("plain"), harness.NoCue())
	if err != nil {
		return row{}, err
	}
	goal := target(n, "100 agents <= 80 ms")
	if n >= 500 {
		goal = "500 agents <= 400 ms; RSS <= 60 MB; idle CPU <= 1%"
	}
	return row{
		what:   fmt.Sprintf("API broadcast to %d agents (%d runs)", n, runs),
		result: fmt.Sprintf("median %s, max %s; daemon RSS %s, idle CPU %s", ms(harness.Percentile(times, 50)), ms(harness.Percentile(times, 100)), rss, cpu),
		target: goal,
	}, nil
}

func benchConcurrentThroughDaemon(senders, each int) (row, error) {
	var (
		elapsed time.Duration
		merged  int
		total   = senders * each
	)
	err := withDaemon(1, func(s *harness.Server, agents []*harness.Agent, _ *http.Client) error {
		want := map[string]bool{}
		var mu sync.Mutex
		var g sync.WaitGroup
		errs := make([]error, senders)
		start := time.Now()
		for w := range senders {
			g.Go(func() {
				for i := range each {
					text := fmt.Sprintf("sender %d message %d", w, i)
					res, err := s.Run("--json", "send", "bench", "a000", text)
					if err == nil && res.Code != 0 {
						err = fmt.Errorf("%s", res)
					}
					if err != nil {
						errs[w] = err
						return
					}
					rep, err := harness.Decode[harness.SendReport](res.Stdout)
					if err != nil {
						errs[w] = err
						return
					}
					mu.Lock()
					want[harness.Submitted(rep.ID, text)] = true
					mu.Unlock()
				}
			})
		}
		g.Wait()
		elapsed = time.Since(start)
		if err := errors.Join(errs...); err != nil {
			return err
		}
		got, err := agents[0].WaitReceived(total, 10*time.Second)
		if err != nil {
			return err
		}
		for _, p := range got {
			if !want[p] {
				merged++
			}
			delete(want, p)
		}
		merged += len(want)
		return nil
	}, harness.Style("plain"))
	if err != nil {
		return row{}, err
	}
	return row{
		what:   fmt.Sprintf("%d senders x %d messages to one agent, through the daemon", senders, each),
		result: fmt.Sprintf("%.0f msgs/s, %d of %d merged or lost", float64(total)/elapsed.Seconds(), merged, total),
		target: ">= 150 msgs/s, 0 merged",
	}, nil
}

// settle waits until a daemon just started is done starting (its control
// client attached, its first look at every agent and the deliver pass
// that follows, over every inbox): a long-lived daemon is measured, not
// its first seconds. It waits at least two seconds (the first look comes
// after one), then for a second in which the daemon used under 2% of a
// core, at most 20 s in all.
func settle(pid int) {
	start := time.Now()
	time.Sleep(2 * time.Second)
	for time.Since(start) < 20*time.Second {
		before, ok := cpuTicks(pid)
		time.Sleep(time.Second)
		after, ok2 := cpuTicks(pid)
		if !ok || !ok2 || after-before < 2 {
			return
		}
	}
}

// vmRSS is a process's resident memory.
func vmRSS(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "?"
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.Atoi(strings.Fields(v)[0])
			return fmt.Sprintf("%.1f MB", float64(kb)/1024)
		}
	}
	return "?"
}

// idleCPU is the share of a core a process used over d, doing nothing asked.
func idleCPU(pid int, d time.Duration) string {
	before, ok1 := cpuTicks(pid)
	time.Sleep(d)
	after, ok2 := cpuTicks(pid)
	if !ok1 || !ok2 {
		return "?"
	}
	const hz = 100 // USER_HZ
	return fmt.Sprintf("%.2f%%", float64(after-before)/hz/d.Seconds()*100)
}

func cpuTicks(pid int) (int64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 13 {
		return 0, false
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	k, _ := strconv.ParseInt(f[12], 10, 64)
	return u + k, true
}
