package e2e

import (
	"testing"

	"github.com/agentmsg/agentmsg/e2e/harness"
	"github.com/agentmsg/agentmsg/mcpserver"
)

// The CLI and the MCP server send, defer and reply through one service:
// the same scenario through both gives the same verdicts, and the stand-in
// agent's log shows each message that was to be typed arrived once.
func TestCLIAndMCPAgreeOnSendAndReply(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	ana := s.StartAgent("agent-t-ana")
	s.StartAgent("agent-t-bob", harness.InitialState("dialog"))
	lead := startMCPEnv(t, s, "lead", false, "AGENTMSG_READY_TIMEOUT=300ms")

	cliSend := func(args ...string) harness.SendReport {
		t.Helper()
		res := s.Run(append([]string{"--json", "--ready-timeout", "300ms", "--team", "t"}, args...)...)
		rep, err := harness.Decode[harness.SendReport](res.Stdout)
		if err != nil || res.Code != rep.ExitCode {
			t.Fatalf("%q: %v (exit %d)\n%s", args, err, res.Code, res)
		}
		return rep
	}
	var received []string
	for _, tc := range []struct{ agent, want string }{{"ana", "submitted"}, {"bob", "deferred"}} {
		cli := cliSend("--from", "lead", "send", "t", tc.agent, "from the CLI")
		var mcp mcpserver.SendOutput
		lead.call(t, "send_message", map[string]any{"to": tc.agent, "content": "from MCP"}, &mcp)
		if cli.Verdict != tc.want || mcp.Verdict != cli.Verdict || cli.ExitCode != 0 {
			t.Errorf("to %s: CLI %q (exit %d), MCP %q; want both %s, exit 0", tc.agent, cli.Verdict, cli.ExitCode, mcp.Verdict, tc.want)
		}
		if tc.agent == "ana" {
			received = append(received, harness.Submitted(cli.ID, "from the CLI"), harness.Submitted(mcp.MessageID, "from MCP"))
		}
	}

	// ana asks lead (a person: only an inbox); lead answers through each.
	q := cliSend("--from", "ana", "send", "--mailbox-only", "--create", "t", "lead", "ready to merge?")
	if q.Verdict != "recorded" {
		t.Fatalf("ana's question: %q", q.Verdict)
	}
	cli := cliSend("--from", "lead", "reply", q.ID, "yes, from the CLI")
	var mcp mcpserver.SendOutput
	lead.call(t, "send_message", map[string]any{"to": "ana", "content": "yes, from MCP", "reply_to": q.ID}, &mcp)
	if cli.Verdict != "submitted" || mcp.Verdict != cli.Verdict {
		t.Errorf("reply: CLI %q, MCP %q; want both submitted", cli.Verdict, mcp.Verdict)
	}
	received = append(received, harness.Submitted(cli.ID, "re "+q.ID+": yes, from the CLI"),
		harness.Submitted(mcp.MessageID, "re "+q.ID+": yes, from MCP"))
	wantReceived(t, ana, received...)
}
