package e2e

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/agentmsg/agentmsg/e2e/harness"
	"github.com/agentmsg/agentmsg/mcpserver"
)

// The CLI and the MCP server run the same lifecycle operations
// (service.Shutdown, Kill, Agents) and agree on what came of them: a shutdown
// request submitted and not answered within its wait, a kill of another
// agent that ends it, and a kill of the caller itself, which both refuse
// (the MCP server used to, the CLI did not); then the agents that are left.
func TestCLIAndMCPAgreeOnLifecycle(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	s.StartAgents([]string{"agent-t-lead", "agent-t-a1", "agent-t-a2", "agent-t-b1", "agent-t-b2"})
	lead := startMCPEnv(t, s, "lead", true)

	// Shutdown, nobody answers within the wait.
	res := runAs(t, s, "t", "lead", "--json", "shutdown", "t", "a1", "--wait", "--timeout", "200ms")
	var cli struct {
		Verdict  string `json:"verdict"`
		Answered bool   `json:"answered"`
		TimedOut bool   `json:"timed_out"`
	}
	if err := json.Unmarshal([]byte(res.Stdout), &cli); err != nil {
		t.Fatalf("%v\n%s", err, res)
	}
	var mcp mcpserver.ShutdownOutput
	lead.call(t, "shutdown_agent", map[string]any{"agent": "a2", "wait_seconds": 0.2}, &mcp)
	if res.Code != 7 || cli.Verdict != "submitted" || !cli.TimedOut || cli.Answered || mcp.Answered || mcp.RequestID == "" {
		t.Errorf("shutdown: CLI %+v (exit %d), MCP %+v", cli, res.Code, mcp)
	}

	// Kill another agent: both end it.
	res = runAs(t, s, "t", "lead", "kill", "t", "b1", "--grace", "2s")
	var killed mcpserver.KillOutput
	lead.call(t, "kill_agent", map[string]any{"agent": "b2", "grace_seconds": 2}, &killed)
	if res.Code != 0 || !killed.Killed {
		t.Errorf("kill: CLI exit %d, MCP %+v\n%s", res.Code, killed, res)
	}
	for _, session := range []string{"agent-t-b1", "agent-t-b2"} {
		if hasSession(t, s, session) {
			t.Errorf("%s is still there after kill", session)
		}
	}

	// Kill yourself: both refuse, and the session stays.
	res = runAs(t, s, "t", "lead", "kill", "t", "lead")
	err := lead.try(context.Background(), "kill_agent", map[string]any{"agent": "lead"}, nil)
	if res.Code != 2 || !strings.Contains(res.Stderr, "is you") || err == nil || !strings.Contains(err.Error(), "is you") {
		t.Errorf("killing yourself: CLI exit %d %q, MCP %v", res.Code, res.Stderr, err)
	}
	if !hasSession(t, s, "agent-t-lead") {
		t.Error("the caller's session is gone")
	}

	// Agents: the CLI's agents and MCP's get_agent_status and list_agents
	// name the same agents; the two status reports give them one state.
	res = runAs(t, s, "t", "lead", "--json", "agents", "t")
	var cliAgents struct {
		Agents []struct{ Agent, State string } `json:"agents"`
	}
	if err := json.Unmarshal([]byte(res.Stdout), &cliAgents); err != nil {
		t.Fatalf("%v\n%s", err, res)
	}
	var status mcpserver.StatusOutput
	lead.call(t, "get_agent_status", nil, &status)
	var list mcpserver.ListOutput
	lead.call(t, "list_agents", nil, &list)
	var fromCLI, fromStatus, listed []string
	for _, a := range cliAgents.Agents {
		fromCLI = append(fromCLI, a.Agent+" "+a.State)
	}
	for _, a := range status.Agents {
		fromStatus = append(fromStatus, a.Agent+" "+a.State)
	}
	for _, a := range list.Agents {
		if a.Session != "" {
			listed = append(listed, a.Agent)
		}
	}
	if want := []string{"a1 idle", "a2 idle", "lead idle"}; !slices.Equal(fromCLI, want) || !slices.Equal(fromStatus, want) {
		t.Errorf("agents: CLI %q, MCP %q; want %q", fromCLI, fromStatus, want)
	}
	if want := []string{"a1", "a2", "lead"}; !slices.Equal(listed, want) {
		t.Errorf("list_agents: %q, want %q", listed, want)
	}
}

// hasSession reports whether the server has a session named exactly name.
func hasSession(t *testing.T, s *harness.TestServer, name string) bool {
	t.Helper()
	sessions, err := s.Server.Sessions()
	if err != nil {
		t.Fatal(err)
	}
	return slices.Contains(sessions, name)
}
