package e2e

import (
	"testing"

	"github.com/agentmsg/agentmsg/e2e/harness"
	"github.com/agentmsg/agentmsg/mcpserver"
)

// The CLI and the MCP server give one broadcast the same verdict: they
// used to disagree on a target that was deferred (the CLI said delivered,
// MCP partial). Both now say deferred: nothing failed, not all arrived yet.
func TestCLIAndMCPAgreeOnABroadcast(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	s.StartAgents([]string{"agent-t-a1", "agent-t-a2"})
	s.StartAgent("agent-t-a3", harness.InitialState("dialog"))

	res := s.Run("--json", "--ready-timeout", "300ms", "broadcast", "t", "from the CLI")
	cli, err := harness.Decode[harness.BroadcastReport](res.Stdout)
	if err != nil {
		t.Fatal(err)
	}
	lead := startMCPEnv(t, s, "lead", true, "AGENTMSG_READY_TIMEOUT=300ms")
	var mcp mcpserver.BroadcastOutput
	lead.call(t, "broadcast", map[string]any{"content": "from MCP"}, &mcp)

	if cli.Verdict != "deferred" || res.Code != 0 || mcp.Verdict != cli.Verdict {
		t.Fatalf("CLI verdict %q (exit %d), MCP verdict %q; want both deferred, exit 0\n%s", cli.Verdict, res.Code, mcp.Verdict, res)
	}
	if cli.Delivered != len(mcp.DeliveredTo) || cli.Deferred != len(mcp.Deferred) || cli.Failed != len(mcp.Failed) {
		t.Errorf("CLI %d delivered, %d deferred, %d failed; MCP %v, %v, %v", cli.Delivered, cli.Deferred, cli.Failed, mcp.DeliveredTo, mcp.Deferred, mcp.Failed)
	}
}
