//go:build linux

package e2e

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/e2e/harness"
)

// What agentmsg mcp costs when a client misbehaves, at the scale:
// a client that writes 100,000 requests and never reads an answer, and one
// that has 10,000 wait_for_message calls open. It measures the real binary
// (its RSS and CPU from /proc) and fails past the limits the issue sets
// (100 MB; 5% of a core while idle). Timing decides it, so it runs only
// with AGENTMSG_MEASURE_MCP=1.
func TestMCPLimitsMeasured(t *testing.T) {
	if os.Getenv("AGENTMSG_MEASURE_MCP") == "" {
		t.Skip("set AGENTMSG_MEASURE_MCP=1 to measure agentmsg mcp under 100,000 unread requests and 10,000 waits")
	}
	t.Run("client never reads", func(t *testing.T) {
		const requests = 100_000
		p := startRawMCP(t)
		written := p.send(t, requests, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"check_messages","arguments":{"peek":true}}}`)
		p.settle(written, requests, 3*time.Second, 3*time.Minute)
		peak := p.status(t, "VmHWM")
		t.Logf("a client that never reads: %d of %d requests written before the server stopped reading, peak RSS %d MB", written.Load(), requests, peak>>20)
		if peak > 100<<20 {
			t.Errorf("peak RSS %d MB, want under 100 MB", peak>>20)
		}
	})
	t.Run("10000 waits", func(t *testing.T) {
		const waits = 10_000
		p := startRawMCP(t)
		var answered atomic.Int64
		go func() {
			for p.out.Scan() {
				answered.Add(1)
			}
		}()
		written := p.send(t, waits, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"wait_for_message","arguments":{"from":"nobody","timeout_seconds":120}}}`)
		p.settle(written, waits, 2*time.Second, time.Minute)
		time.Sleep(2 * time.Second) // past the start of the last waits
		before := harness.CPUTime(t, p.cmd.Process.Pid)
		const idle = 10 * time.Second
		time.Sleep(idle)
		used := harness.CPUTime(t, p.cmd.Process.Pid) - before
		share := 100 * used.Seconds() / idle.Seconds()
		t.Logf("%d of %d waits written before the server stopped reading (%d answered), %s idle: %s of CPU (%.1f%% of a core), RSS %d MB",
			written.Load(), waits, answered.Load(), idle, used, share, p.status(t, "VmRSS")>>20)
		if share >= 5 {
			t.Errorf("%.1f%% of a core while idle, want under 5%%", share)
		}
	})
}

// rawMCP is agentmsg mcp run as agent ana of team t, spoken to in raw
// JSON-RPC lines: a client the SDK would not let a test be.
type rawMCP struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
}

// startRawMCP starts agentmsg mcp and initializes the session; the
// process is killed (by its pid) when the test ends.
func startRawMCP(t *testing.T) *rawMCP {
	t.Helper()
	s := harness.NewTestServer(t)
	cmd := exec.Command(s.Bins.Agentmsg, "-S", s.Socket, "mcp")
	cmd.Env = append(s.Env(), "AGENTMSG_FROM=ana", "AGENTMSG_TEAM=t")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		r.Close()
	})
	p := &rawMCP{cmd: cmd, in: in, out: bufio.NewScanner(r)}
	p.out.Buffer(make([]byte, 1<<20), 1<<20)
	fmt.Fprintln(in, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"measure","version":"1"}}}`)
	if !p.out.Scan() || !strings.Contains(p.out.Text(), `"result"`) {
		t.Fatalf("initialize: %q (%v)", p.out.Text(), p.out.Err())
	}
	fmt.Fprintln(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return p
}

// send writes n requests (format takes the id) from a goroutine and
// counts those written: a server that stops reading stops the count.
func (p *rawMCP) send(t *testing.T, n int, format string) *atomic.Int64 {
	var written atomic.Int64
	go func() {
		w := bufio.NewWriter(p.in)
		for i := 1; i <= n; i++ {
			if _, err := fmt.Fprintf(w, format+"\n", i); err != nil {
				return
			}
			if i%100 == 0 || i == n {
				if w.Flush() != nil {
					return
				}
				written.Store(int64(i))
			}
		}
	}()
	return &written
}

// settle returns once all n requests are written, or the count has not
// moved for still (the server pushes back), or limit has passed.
func (p *rawMCP) settle(written *atomic.Int64, n int64, still, limit time.Duration) {
	deadline := time.Now().Add(limit)
	last, since := int64(-1), time.Now()
	for time.Now().Before(deadline) {
		w := written.Load()
		if w == n {
			time.Sleep(still) // what was written is still being read
			return
		}
		if w != last {
			last, since = w, time.Now()
		} else if time.Since(since) > still {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// status is a memory field of /proc/PID/status, in bytes.
func (p *rawMCP) status(t *testing.T, field string) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, p.cmd.Process.Pid)
	return 0
}
