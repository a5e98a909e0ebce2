package e2e

import (
	"slices"
	"testing"

	"github.com/agentmsg/agentmsg/e2e/harness"
	"github.com/agentmsg/agentmsg/mcpserver"
)

// The CLI and the MCP server post and claim requests the same way: both
// clean the description and tell every other agent of the team (a session,
// or only a status on the board); a claim has one winner whichever front
// end it comes from, and the loser learns who won.
func TestCLIAndMCPAgreeOnRequests(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	s.StartAgents([]string{"agent-t-a1", "agent-t-a2"})
	if res := s.Run("--from", "a3", "--team", "t", "status", "set", "--state", "working"); res.Code != 0 {
		t.Fatalf("status set: %s", res)
	}
	const raw, clean = "take\x1b[31m the flaky\x07 test", "take the flaky test"

	res := s.Run("--from", "lead", "--json", "request", "t", raw)
	cli, err := harness.Decode[struct {
		RequestID   string   `json:"request_id"`
		Description string   `json:"description"`
		Notified    []string `json:"notified"`
	}](res.Stdout)
	if err != nil || res.Code != 0 {
		t.Fatalf("CLI request: %v\n%s", err, res)
	}
	lead := startMCP(t, s, "lead", false)
	var mcp mcpserver.RequestOutput
	lead.call(t, "request_task", map[string]any{"description": raw}, &mcp)

	want := []string{"a1", "a2", "a3"}
	if !slices.Equal(cli.Notified, want) || !slices.Equal(mcp.Notified, want) || cli.Description != clean {
		t.Fatalf("CLI told %v (description %q), MCP told %v; want both %v, %q", cli.Notified, cli.Description, mcp.Notified, want, clean)
	}
	list := s.Run("--from", "lead", "--json", "requests", "t")
	reqs, err := harness.Decode[struct {
		Requests []struct{ ID, Description string } `json:"requests"`
	}](list.Stdout)
	if err != nil || len(reqs.Requests) != 2 {
		t.Fatalf("requests: %v\n%s", err, list)
	}
	for _, r := range reqs.Requests {
		if r.Description != clean {
			t.Errorf("request %s stored as %q, want %q", r.ID, r.Description, clean)
		}
	}

	// a1 wins the CLI's request on the CLI, a2 the MCP's over MCP; each
	// loses the other's, through the other front end.
	if res := s.Run("--from", "a1", "claim", "t", cli.RequestID); res.Code != 0 {
		t.Fatalf("CLI claim: %s", res)
	}
	a2 := startMCP(t, s, "a2", false)
	var won, lost mcpserver.ClaimOutput
	a2.call(t, "claim_request", map[string]any{"request_id": mcp.RequestID}, &won)
	a2.call(t, "claim_request", map[string]any{"request_id": cli.RequestID}, &lost)
	res = s.Run("--from", "a1", "--json", "claim", "t", mcp.RequestID)
	cliLost, err := harness.Decode[struct {
		Claimed   bool   `json:"claimed"`
		ClaimedBy string `json:"claimed_by"`
	}](res.Stdout)
	if err != nil || res.Code != 8 || cliLost.Claimed || cliLost.ClaimedBy != "a2" {
		t.Fatalf("CLI losing claim: %+v %v\n%s", cliLost, err, res)
	}
	if !won.Claimed || won.ClaimedBy != "a2" || lost.Claimed || lost.ClaimedBy != "a1" {
		t.Fatalf("MCP claims: won %+v, lost %+v", won, lost)
	}
}
