package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentmsg/agentmsg/e2e/harness"
)

// The daemon (agentmsg serve), as a desktop app uses it: over its Unix
// socket, with the event stream (issue 18).

// daemonServer is a test server with its daemon running, whatever the
// mode of the suite.
func daemonServer(t *testing.T) *harness.TestServer {
	t.Helper()
	s := harness.NewTestServer(t)
	if !harness.DaemonMode() {
		if err := s.StartDaemon(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := s.StopDaemon(); err != nil {
				t.Error(err)
			}
		})
	}
	return s
}

// api is an HTTP client of the daemon's socket.
func api(s *harness.TestServer) *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", s.DaemonSocket())
	}}}
}

// post sends body to path and decodes the answer into out.
func post(t *testing.T, c *http.Client, path, body string, out any) int {
	t.Helper()
	resp, err := c.Post("http://agentmsg"+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(data, out); err != nil {
		t.Fatalf("%s: %v\n%s", path, err, data)
	}
	return resp.StatusCode
}

// event is one event of the stream.
type event struct {
	id   int64
	kind string
	data map[string]any
}

// follow reads the event stream from after lastID (-1: from the start)
// and sends each event to the channel until ctx ends.
func follow(ctx context.Context, t *testing.T, c *http.Client, lastID int64) <-chan event {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://agentmsg/v1/events", nil)
	if lastID >= 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatInt(lastID, 10))
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan event, 1000)
	go func() {
		defer resp.Body.Close()
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var e event
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if e.data != nil {
					out <- e
				}
				e = event{}
			case strings.HasPrefix(line, "id: "):
				e.id, _ = strconv.ParseInt(line[4:], 10, 64)
			case strings.HasPrefix(line, "event: "):
				e.kind = line[7:]
			case strings.HasPrefix(line, "data: "):
				_ = json.Unmarshal([]byte(line[6:]), &e.data)
			}
		}
	}()
	return out
}

// waitEvent waits for an event of message id of type typ.
func waitEvent(t *testing.T, events <-chan event, id, typ string) event {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case e, ok := <-events:
			if !ok {
				t.Fatalf("the stream ended before %s %s", typ, id)
			}
			if e.data["message_id"] == id && e.data["type"] == typ {
				return e
			}
		case <-timeout:
			t.Fatalf("no %s event for %s within 20s", typ, id)
		}
	}
}

// An app connects, sends to a busy agent and sees it deferred; the agent
// becomes ready, a deliver runs, and the app sees the same message
// submitted; it reconnects with Last-Event-ID and sees nothing twice.
func TestAppFollowsAMessageToItsEnd(t *testing.T) {
	t.Parallel()
	s := daemonServer(t)
	ana := s.StartAgent("agent-alpha-ana", harness.InitialState("busy"))
	c := api(s)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := follow(ctx, t, c, -1)

	var sent struct {
		ID, Verdict, Stored, Reason string
		ExitCode                    int `json:"exit_code"`
	}
	code := post(t, c, "/v1/send", `{"team":"alpha","agent":"ana","text":"hello from the app","from":"app","ready_timeout":"300ms"}`, &sent)
	if code != 200 || sent.Verdict != "deferred" || sent.Stored != "deferred" || sent.Reason != "busy" || sent.ExitCode != 0 {
		t.Fatalf("POST /v1/send: %d %+v; want deferred, busy, exit 0", code, sent)
	}
	waitEvent(t, events, sent.ID, "message.deferred")

	ana.SetState("ready")
	var delivered struct {
		Delivered int
		ExitCode  int `json:"exit_code"`
	}
	if code := post(t, c, "/v1/deliver", `{}`, &delivered); code != 200 || delivered.Delivered != 1 {
		t.Fatalf("POST /v1/deliver: %d %+v", code, delivered)
	}
	got := waitEvent(t, events, sent.ID, "message.submitted")
	wantReceived(t, ana, harness.Submitted(sent.ID, "hello from the app"))
	cancel()

	// Reconnect after the submitted event: nothing already seen comes
	// again; what comes next (a read) comes once.
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	again := follow(ctx2, t, c, got.id)
	wantCode(t, s.Run("--json", "send", "alpha", "ana", "second"), 0)
	seen := map[int64]bool{}
	timeout := time.After(10 * time.Second)
	for done := false; !done; {
		select {
		case e := <-again:
			if e.id <= got.id || seen[e.id] {
				t.Fatalf("after reconnecting with Last-Event-ID %d: event %d %v again", got.id, e.id, e.data)
			}
			seen[e.id] = true
			done = e.data["type"] == "message.submitted"
		case <-timeout:
			t.Fatal("no events after reconnecting")
		}
	}
}

// The API's answers carry the CLI's verdicts and exit codes; a request
// that cannot be understood is 400 with exit 2, a missing agent 404 with
// exit 3.
func TestAPIErrors(t *testing.T) {
	t.Parallel()
	s := daemonServer(t)
	s.StartAgent("agent-alpha-ana")
	c := api(s)
	var e struct {
		Error    string
		ExitCode int `json:"exit_code"`
		Verdict  string
	}
	for _, tt := range []struct {
		body   string
		status int
		exit   int
		has    string
	}{
		{`{"team":"alpha","agent":"ana","text":"x","ready_timeot":"1s"}`, 400, 2, "unknown field"},
		{`{"team":"alpha","agent":"Ana!","text":"x"}`, 400, 2, "agent"},
		{`{"team":"alpha","agent":"nobody","text":"x"}`, 404, 3, "no session named exactly"},
		{`{"team":"alpha","agent":"ana","text":"   "}`, 400, 2, "empty"},
		{`{"team":"alpha","agent":"ana","text":"x","ready_timeout":"soon"}`, 400, 2, "duration"},
	} {
		e.Error, e.ExitCode = "", 0
		if code := post(t, c, "/v1/send", tt.body, &e); code != tt.status || e.ExitCode != tt.exit || !strings.Contains(e.Error, tt.has) {
			t.Errorf("%s: %d %+v; want %d, exit %d, an error saying %q", tt.body, code, e, tt.status, tt.exit, tt.has)
		}
	}
}

// A delivery flag on a command that delivers nothing is refused alike
// whether the command runs here or in the daemon it is forwarded to: the
// same exit code, the same words, the same JSON document.
func TestDeliveryFlagRefusedAlikeThroughTheDaemon(t *testing.T) {
	t.Parallel()
	s := daemonServer(t)
	for _, args := range [][]string{
		{"--team", "alpha", "status", "--ready-timeout", "3s"},
		{"--json", "--team", "alpha", "board", "--settle", "1s"},
	} {
		direct, err := s.Server.RunEnv([]string{harness.Direct}, args...)
		if err != nil {
			t.Fatal(err)
		}
		forwarded := s.Run(args...)
		wantCode(t, direct, 2)
		wantCode(t, forwarded, 2)
		if direct.Stdout != forwarded.Stdout || direct.Stderr != forwarded.Stderr {
			t.Errorf("%q: here\n%s\nin the daemon\n%s", args, direct, forwarded)
		}
		if !strings.Contains(direct.Stdout+direct.Stderr, "applies only to commands that deliver") {
			t.Errorf("%q: %s", args, direct)
		}
	}
}

// With a daemon running, a message kept for a busy agent is typed when the
// agent becomes ready, with no hook and no one running deliver; send
// --wait-delivered reports that.
func TestDaemonDeliversWhenTheAgentIsReady(t *testing.T) {
	t.Parallel()
	s := daemonServer(t)
	ana := s.StartAgent("agent-alpha-ana", harness.InitialState("busy"))
	done := make(chan harness.Result, 1)
	go func() {
		res, _ := s.Server.Run("--json", "send", "--ready-timeout", "300ms", "--wait-delivered", "30s", "alpha", "ana", "when you are free")
		done <- res
	}()
	// Deferred first: only then is she ready.
	waitFor(t, "the message kept", 10*time.Second, func() bool {
		return strings.Contains(s.Run("log", "alpha", "ana").Stdout, "deferred")
	})
	ana.SetState("ready")
	res := <-done
	wantCode(t, res, 0)
	var rep struct {
		ID, Verdict string
		ExitCode    int `json:"exit_code"`
	}
	if err := json.Unmarshal([]byte(res.Stdout), &rep); err != nil || rep.Verdict != "submitted" {
		t.Fatalf("%v: want the later verdict submitted:\n%s", err, res)
	}
	wantReceived(t, ana, harness.Submitted(rep.ID, "when you are free"))
}

// bearer adds a token to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// One daemon serves MCP over Streamable HTTP to every agent, each known by
// its own token: ana's send_message reaches bob as from ana, whatever she
// could claim; no token, or a made-up one, is refused.
func TestMCPOverHTTP(t *testing.T) {
	t.Parallel()
	s := daemonServer(t)
	bob := s.StartAgent("agent-alpha-bob")
	res := s.Run("mcp", "token", "alpha", "ana")
	wantCode(t, res, 0)
	token := strings.TrimSpace(res.Stdout)
	unix := api(s).Transport

	for _, bad := range []string{"", "amt_madeup"} {
		req, _ := http.NewRequest(http.MethodPost, "http://agentmsg/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
		req.Header.Set("Content-Type", "application/json")
		if bad != "" {
			req.Header.Set("Authorization", "Bearer "+bad)
		}
		resp, err := (&http.Client{Transport: unix}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("token %q: %d, want 401", bad, resp.StatusCode)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	session, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://agentmsg/mcp",
		HTTPClient: &http.Client{Transport: bearer{token, unix}}, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	out, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "send_message", Arguments: map[string]any{"to": "bob", "content": "over http"}})
	if err != nil || out.IsError {
		t.Fatalf("send_message: %v %+v", err, out)
	}
	got := bob.WaitReceived(1, 10*time.Second)
	if len(got) != 1 || !strings.HasPrefix(got[0], "MSG_ANA_") || !strings.HasSuffix(got[0], ": over http") {
		t.Fatalf("bob received %q, want one message from ana", got)
	}
}

// With [serve] auto (here AGENTMSG_SERVE_AUTO=1), a command that finds no
// daemon starts one and runs in it.
func TestDaemonStartsOnDemand(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	if err := s.StopDaemon(); err != nil {
		t.Fatal(err)
	}
	ana := s.StartAgent("agent-alpha-ana")
	res, err := s.Server.RunEnv([]string{"AGENTMSG_SERVE_AUTO=1"}, "send", "alpha", "ana", "started it")
	if err != nil {
		t.Fatal(err)
	}
	lock := filepath.Join(s.Dir, "state", "agentmsg", "serve.lock")
	var holder struct{ PID int }
	b, _ := os.ReadFile(lock)
	_ = json.Unmarshal(b, &holder)
	t.Cleanup(func() {
		if holder.PID > 0 {
			_ = syscall.Kill(holder.PID, syscall.SIGTERM) // the daemon this test's send started
			waitFor(t, "the daemon to stop", 10*time.Second, func() bool { return syscall.Kill(holder.PID, 0) != nil })
		}
	})
	wantCode(t, res, 0)
	if holder.PID == 0 {
		t.Fatalf("no daemon started (%s: %q)", lock, b)
	}
	wantReceived(t, ana, harness.Submitted(strings.Fields(res.Stdout)[4], "started it"))
}

// The daemon records each change of an agent's state as an event, and
// asks tmux whether any screen changed before it looks at them all: an
// agent turned busy, then ready, then into a dialog and back is seen
// every time (agent.busy, agent.ready, agent.dialog, agent.ready), an
// agent that appears is seen, and one that goes is too.
func TestDaemonRecordsEveryAgentChange(t *testing.T) {
	t.Parallel()
	s := daemonServer(t)
	ana := s.StartAgent("agent-alpha-ana")
	s.StartAgent("agent-alpha-bob")
	// The daemon's first look learns the states (no events); it looks
	// every second, so after 1.5s changes are news.
	time.Sleep(1500 * time.Millisecond)
	events := func() string { return s.Run("--json", "events", "--follow=false").Stdout }
	for _, state := range []string{"busy", "ready", "dialog", "ready"} {
		before := strings.Count(events(), `"agent.`+state+`"`)
		ana.SetState(state)
		waitFor(t, "agent."+state+" for ana", 15*time.Second, func() bool {
			return strings.Count(events(), `"agent.`+state+`"`) > before
		})
	}
	s.StartAgent("agent-alpha-cy")
	waitFor(t, "cy appearing", 15*time.Second, func() bool {
		for line := range strings.SplitSeq(events(), "\n") {
			if strings.Contains(line, `"agent.appeared"`) && strings.Contains(line, `"agent":"cy"`) {
				return true
			}
		}
		return false
	})
	s.Tmux("kill-session", "-t", "=agent-alpha-bob")
	waitFor(t, "bob gone", 15*time.Second, func() bool { return strings.Contains(events(), `"agent.gone"`) })
}
