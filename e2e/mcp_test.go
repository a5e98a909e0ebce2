package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentmsg/agentmsg/e2e/harness"
	"github.com/agentmsg/agentmsg/internal/procs"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/mcpserver"
	"github.com/agentmsg/agentmsg/message"
)

// callTimeout bounds one tool call from a test.
const callTimeout = 60 * time.Second

// mcpClient is a real MCP client (the SDK's) talking over stdio to the
// built agentmsg running "mcp" as one agent of team t.
type mcpClient struct {
	name   string
	cs     *mcp.ClientSession
	stderr *lockedBuffer
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startMCP runs agentmsg -S SOCKET mcp [--orchestrator] as name of team t,
// in the server's hermetic environment, and connects to it.
func startMCP(t *testing.T, s *harness.TestServer, name string, orchestrator bool) *mcpClient {
	t.Helper()
	return startMCPEnv(t, s, name, orchestrator)
}

// startMCPEnv is startMCP with more environment (AGENTMSG_* settings).
func startMCPEnv(t *testing.T, s *harness.TestServer, name string, orchestrator bool, env ...string) *mcpClient {
	t.Helper()
	args := []string{"-S", s.Socket, "mcp"}
	if orchestrator {
		args = append(args, "--orchestrator")
	}
	cmd := exec.Command(s.Bins.Agentmsg, args...)
	cmd.Env = append(append(s.Env(), "AGENTMSG_FROM="+name, "AGENTMSG_TEAM=t"), env...)
	c := &mcpClient{name: name, stderr: &lockedBuffer{}}
	cmd.Stderr = c.stderr
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e-" + name, Version: "1"}, nil).
		Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, nil)
	if err != nil {
		t.Fatalf("starting agentmsg mcp as %s: %v\nstderr: %s", name, err, c.stderr)
	}
	c.cs = cs
	t.Cleanup(func() {
		if err := cs.Close(); err != nil {
			t.Logf("closing %s's MCP session: %v", name, err)
		}
	})
	return c
}

// try calls tool with args and decodes its structured result into out. A
// tool error is an error; safe from any goroutine.
func (c *mcpClient) try(ctx context.Context, tool string, args, out any) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return fmt.Errorf("%s as %s: %w (server stderr: %s)", tool, c.name, err, c.stderr)
	}
	if res.IsError {
		var text []string
		for _, ct := range res.Content {
			if tc, ok := ct.(*mcp.TextContent); ok {
				text = append(text, tc.Text)
			}
		}
		return fmt.Errorf("%s as %s: tool error: %s", tool, c.name, strings.Join(text, " "))
	}
	if out == nil {
		return nil
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

// call is try that fails the test; only from the test's goroutine.
func (c *mcpClient) call(t *testing.T, tool string, args, out any) {
	t.Helper()
	if err := c.try(context.Background(), tool, args, out); err != nil {
		t.Fatal(err)
	}
}

// An orchestrator and three stand-in agents, each with its own agentmsg
// mcp process, go through every tool: a request that one of three
// claimants wins and answers, direct messages, a broadcast, a task with
// the agent's unread messages in front, a three-step workflow whose
// outputs chain, a shutdown accepted and one deferred, and a kill that
// leaves no process.
func TestMCPOrchestratorAndAgents(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	names := []string{"a1", "a2", "a3"}
	standins := s.StartAgents([]string{"agent-t-a1", "agent-t-a2", "agent-t-a3"})
	lead := startMCP(t, s, "lead", true)
	agents := map[string]*mcpClient{}
	for _, n := range names {
		agents[n] = startMCP(t, s, n, false)
	}
	store := mailboxOf(s)

	// list_agents: the three in tmux, ready; the lead without a session.
	var list mcpserver.ListOutput
	lead.call(t, "list_agents", nil, &list)
	states := map[string]string{}
	for _, a := range list.Agents {
		states[a.Agent] = a.State
	}
	if want := map[string]string{"a1": "ready", "a2": "ready", "a3": "ready", "lead": "no-session"}; fmt.Sprint(states) != fmt.Sprint(want) {
		t.Fatalf("list_agents: %v, want %v", states, want)
	}

	// Request, claim (one winner of three), response.
	var req mcpserver.RequestOutput
	lead.call(t, "request_task", map[string]any{"description": "review PR 12", "timeout_seconds": 120}, &req)
	if !slices.Equal(req.Notified, names) {
		t.Fatalf("request_task told %v", req.Notified)
	}
	claims := make([]mcpserver.ClaimOutput, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, n := range names {
		wg.Go(func() {
			var got mcpserver.WaitOutput
			if errs[i] = agents[n].try(context.Background(), "wait_for_message", map[string]any{"type": "request", "timeout_seconds": 10}, &got); errs[i] != nil {
				return
			}
			if got.Message == nil || got.Message.RequestID != req.RequestID {
				errs[i] = fmt.Errorf("%s waited for the request and got %+v", n, got)
				return
			}
			errs[i] = agents[n].try(context.Background(), "claim_request", map[string]any{"request_id": req.RequestID}, &claims[i])
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	winner := ""
	for i, c := range claims {
		if c.Claimed {
			if winner != "" {
				t.Fatalf("two winners: %s and %s", winner, names[i])
			}
			winner = names[i]
		}
	}
	if winner == "" {
		t.Fatalf("nobody won: %+v", claims)
	}
	for i, c := range claims {
		if c.ClaimedBy != winner {
			t.Errorf("%s was told the winner is %q, not %s", names[i], c.ClaimedBy, winner)
		}
	}
	var claimMsg mcpserver.WaitOutput
	lead.call(t, "wait_for_message", map[string]any{"type": "claim", "timeout_seconds": 10}, &claimMsg)
	if claimMsg.Message == nil || claimMsg.Message.From != winner || claimMsg.Message.RequestID != req.RequestID {
		t.Fatalf("the lead's claim message: %+v", claimMsg)
	}
	var answer mcpserver.SendOutput
	agents[winner].call(t, "send_message", map[string]any{"to": "lead", "content": "PR 12: LGTM", "reply_to": req.MessageID}, &answer)
	if answer.Verdict != "recorded" {
		t.Errorf("the lead has no session, so its inbox only: %+v", answer)
	}
	var response mcpserver.WaitOutput
	lead.call(t, "wait_for_message", map[string]any{"from": winner, "reply_to": req.MessageID, "timeout_seconds": 10}, &response)
	if response.Message == nil || response.Message.Content != "PR 12: LGTM" || response.Message.RequestID != req.RequestID {
		t.Fatalf("the response: %+v", response)
	}

	// A direct message is typed into the agent's pane.
	var direct mcpserver.SendOutput
	lead.call(t, "send_message", map[string]any{"to": "a1", "content": "hello a1"}, &direct)
	if !direct.Delivered || direct.Verdict != "submitted" {
		t.Fatalf("send_message: %+v", direct)
	}
	wantReceived(t, standins[0], harness.Submitted(direct.MessageID, "hello a1"))

	// A broadcast reaches all three.
	var bc mcpserver.BroadcastOutput
	lead.call(t, "broadcast", map[string]any{"content": "stand-up in 5 minutes"}, &bc)
	if bc.Verdict != "delivered" || !slices.Equal(bc.DeliveredTo, names) || len(bc.Failed) != 0 {
		t.Fatalf("broadcast: %+v", bc)
	}
	for _, a := range standins {
		if got := a.Received(); got[len(got)-1] != harness.Submitted(bc.MessageID, "stand-up in 5 minutes") {
			t.Errorf("%s's last prompt: %q", a.Session, got[len(got)-1])
		}
	}
	// Both were typed into a1's pane: neither is news in its inbox.
	var inbox mcpserver.CheckOutput
	agents["a1"].call(t, "check_messages", nil, &inbox)
	if inbox.Count != 0 {
		t.Fatalf("a1's unread: %+v", inbox)
	}

	// assign_task: a2's unread broadcast was typed into its pane already,
	// so the task does not repeat it; a2's cursor moves past it.
	var task mcpserver.AssignOutput
	lead.call(t, "assign_task", map[string]any{"agent": "a2", "task": "write the release notes", "task_id": "notes"}, &task)
	if !task.Delivered || len(task.Injected) != 0 {
		t.Fatalf("assign_task: %+v", task)
	}
	stored := findStored(t, store, "a2", task.MessageID)
	if stored.Content != "write the release notes" || stored.Metadata["task_id"] != "notes" {
		t.Fatalf("the task as stored: %+v", stored)
	}
	if got := standins[1].Received(); !strings.HasPrefix(got[len(got)-1], task.MessageID+": [task] task_id=notes ") {
		t.Errorf("a2's last prompt: %q", got[len(got)-1])
	}

	// A workflow a -> b -> c whose outputs chain: each agent answers its
	// step through its own MCP session.
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var (
		mu    sync.Mutex
		tasks = map[string]string{}
		bad   []error
	)
	for _, n := range names {
		go func() {
			// A task is typed into the agent's pane, which is no news to
			// its wait_for_message; a stand-in acts on nothing it is shown,
			// so each takes its tasks from its inbox as its pane shows them.
			done := map[message.ID]bool{}
			isStep := func(e mailbox.Envelope) bool {
				return e.Type == mailbox.TypeTask && e.Metadata["step"] != "" && !done[e.ID]
			}
			for ctx.Err() == nil {
				task, err := store.Wait(ctx, "t", n, isStep, mailbox.Position{})
				if err != nil {
					return // the workflow is over
				}
				done[task.ID] = true
				step, content := task.Metadata["step"], task.Content
				mu.Lock()
				tasks[step] = content
				mu.Unlock()
				prev := ""
				if i := strings.Index(content, "<<"); i >= 0 {
					prev = content[i : strings.LastIndex(content, ">>")+2]
				}
				out := fmt.Sprintf("<<%s by %s%s>>", step, n, prev)
				err = agents[n].try(ctx, "send_message", map[string]any{"to": "lead", "type": "status", "content": out,
					"metadata": map[string]string{"step": step, "state": "complete"}}, nil)
				if err != nil {
					if ctx.Err() == nil { // not the end of the workflow cutting a report short
						mu.Lock()
						bad = append(bad, err)
						mu.Unlock()
					}
					return
				}
			}
		}()
	}
	var wf mcpserver.WorkflowOutput
	lead.call(t, "create_workflow", map[string]any{"timeout_seconds": 60, "steps": []map[string]any{
		{"name": "c", "agent": "a3", "prompt": "summarise the analysis", "depends_on": []string{"b"}},
		{"name": "b", "agent": "a2", "prompt": "analyse what was gathered", "depends_on": []string{"a"}},
		{"name": "a", "agent": "a1", "prompt": "gather the failing tests"},
	}}, &wf)
	stop()
	mu.Lock()
	if err := errors.Join(bad...); err != nil {
		t.Fatal(err)
	}
	if !wf.Completed || wf.TimedOut {
		t.Fatalf("workflow: %+v", wf)
	}
	want := map[string]string{"a": "<<a by a1>>", "b": "<<b by a2<<a by a1>>>>", "c": "<<c by a3<<b by a2<<a by a1>>>>>>"}
	for step, w := range want {
		if wf.Outputs[step] != w {
			t.Errorf("step %s: output %q, want %q", step, wf.Outputs[step], w)
		}
	}
	if !strings.Contains(tasks["c"], "--- step \"b\" (by a2) ---\n<<b by a2<<a by a1>>>>") {
		t.Errorf("c's prompt lacks b's output: %q", tasks["c"])
	}
	mu.Unlock()

	var status mcpserver.StatusOutput
	lead.call(t, "get_agent_status", nil, &status)
	for _, a := range status.Agents {
		if slices.Contains(names, a.Agent) && a.State == "dead" {
			t.Errorf("get_agent_status: %s is dead: %+v", a.Agent, a)
		}
	}
	if len(status.Agents) < 3 {
		t.Errorf("get_agent_status: %+v", status)
	}

	// Shutdown accepted (a1 answers through MCP) and deferred (a2 answers
	// with agentmsg reply). The request is typed into each pane, where the
	// stand-in takes it from its inbox (as with the tasks above).
	shutdownRequest := func(agent string) (mailbox.Envelope, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		e, err := store.Wait(ctx, "t", agent, func(e mailbox.Envelope) bool { return e.Type == mailbox.TypeShutdownRequest }, mailbox.Position{})
		if err != nil {
			err = fmt.Errorf("%s saw no shutdown-request: %w", agent, err)
		}
		return e, err
	}
	answered := make(chan error, 2)
	go func() {
		got, err := shutdownRequest("a1")
		if err == nil {
			err = agents["a1"].try(context.Background(), "send_message", map[string]any{"to": "lead", "type": "shutdown-response",
				"reply_to": got.ID, "content": "done, stopping", "metadata": map[string]string{"accept": "true"}}, nil)
		}
		answered <- err
	}()
	go func() {
		got, err := shutdownRequest("a2")
		if err == nil {
			var res harness.Result
			res, err = s.Server.Run("--team", "t", "--from", "a2", "reply", "--type", "shutdown-response", "--meta", "accept=false",
				string(got.ID), "finishing the release notes first")
			if err == nil && res.Code != 0 {
				err = fmt.Errorf("a2's reply: %s", res)
			}
		}
		answered <- err
	}()
	var accepted, deferred mcpserver.ShutdownOutput
	lead.call(t, "shutdown_agent", map[string]any{"agent": "a1", "reason": "the sprint is over", "wait_seconds": 30}, &accepted)
	lead.call(t, "shutdown_agent", map[string]any{"agent": "a2", "wait_seconds": 30}, &deferred)
	for range 2 {
		if err := <-answered; err != nil {
			t.Fatal(err)
		}
	}
	if !accepted.Answered || !accepted.Accepted || accepted.Reason != "done, stopping" {
		t.Errorf("a1's shutdown: %+v", accepted)
	}
	if !deferred.Answered || deferred.Accepted || deferred.Reason != "finishing the release notes first" ||
		deferred.Response == nil || deferred.Response.From != "a2" {
		t.Errorf("a2's shutdown: %+v", deferred)
	}

	// kill_agent: the stand-in's process and its session are gone.
	pid, err := standins[2].PID()
	if err != nil {
		t.Fatal(err)
	}
	var killed mcpserver.KillOutput
	lead.call(t, "kill_agent", map[string]any{"agent": "a3", "grace_seconds": 2}, &killed)
	if !killed.Killed || !slices.Contains(killed.PIDs, pid) {
		t.Fatalf("kill_agent: %+v (stand-in pid %d)", killed, pid)
	}
	// Ended (a zombie until its parent, the tmux server, reaps it: it runs
	// nothing and holds nothing, as lifecycle's own tests count it).
	if alive(pid) {
		t.Errorf("process %d of a3 still runs after kill_agent", pid)
	}
	if _, err := s.Server.Tmux("has-session", "-t", "=agent-t-a3"); err == nil {
		t.Error("a3's session is still there after kill_agent")
	}
	lead.call(t, "get_agent_status", map[string]any{}, &status)
	for _, a := range status.Agents {
		if a.Agent == "a3" && a.State != "dead" {
			t.Errorf("a3 after the kill: %+v", a)
		}
	}

	// A wait with nothing to come times out.
	var none mcpserver.WaitOutput
	agents["a1"].call(t, "wait_for_message", map[string]any{"from": "nobody", "timeout_seconds": 0.3}, &none)
	if !none.TimedOut || none.Message != nil {
		t.Errorf("wait for nobody: %+v", none)
	}
}

// findStored is message id in agent's inbox of team t.
func findStored(t *testing.T, store *mailbox.Store, agent, id string) mailbox.Envelope {
	t.Helper()
	batch, err := store.Read("t", agent)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range batch.Envelopes {
		if string(e.ID) == id {
			return e
		}
	}
	t.Fatalf("%s is not in %s's inbox", id, agent)
	return mailbox.Envelope{}
}

// alive reports whether pid is a process that is not a zombie.
func alive(pid int) bool {
	p, err := procs.Get(pid)
	return err == nil && !p.Ended()
}

// A client that writes its requests and closes stdin gets every answer;
// malformed lines among them get JSON-RPC errors and do not end the
// server (issue 10, item 14).
func TestMCPPipedRequestsAndMalformedLines(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`garbage`, `{`, `{}`, "\xff\xfe\x00", `{"jsonrpc":"2.0","id":{},"method":"ping"}`, `[{"jsonrpc":"2.0","id":9,"method":"ping"}]`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
	}, "\n") + "\n"
	res := s.RunStdin(in, "--team", "t", "--from", "ana", "mcp")
	wantCode(t, res, 0)
	var codes []int
	answered := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(res.Stdout), "\n") {
		var r struct {
			ID     json.RawMessage     `json:"id"`
			Result json.RawMessage     `json:"result"`
			Error  *struct{ Code int } `json:"error"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("not JSON-RPC: %q\n%s", line, res)
		}
		if r.Error != nil {
			codes = append(codes, r.Error.Code)
			continue
		}
		answered[string(r.ID)] = string(r.Result)
	}
	if want := []int{-32700, -32700, -32600, -32700, -32600, -32600}; !slices.Equal(codes, want) {
		t.Errorf("errors %v, want %v\n%s", codes, want, res)
	}
	if !strings.Contains(answered["1"], `"serverInfo"`) || !strings.Contains(answered["2"], `"check_messages"`) {
		t.Errorf("initialize and tools/list not both answered:\n%s", res)
	}
}
