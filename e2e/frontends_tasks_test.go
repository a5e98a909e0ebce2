package e2e

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentmsg/agentmsg/e2e/harness"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/mcpserver"
)

// A task assigned over MCP carries what waits for the agent, whichever
// front end deferred it: a message the CLI deferred and one MCP deferred
// (the same verdict) both go in front of the task, are read afterwards, and
// a deliver pass from the CLI types neither again. The stand-in's log
// holds one prompt.
func TestCLIAndMCPMessagesRideInOneTask(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	bob := s.StartAgent("agent-t-bob", harness.InitialState("dialog"))
	lead := startMCPEnv(t, s, "lead", true, "AGENTMSG_READY_TIMEOUT=300ms")

	res := s.Run("--json", "--ready-timeout", "300ms", "--team", "t", "--from", "lead", "send", "t", "bob", "from the CLI")
	cli, err := harness.Decode[harness.SendReport](res.Stdout)
	if err != nil || res.Code != 0 {
		t.Fatalf("CLI send: %v (exit %d)\n%s", err, res.Code, res)
	}
	var mcp mcpserver.SendOutput
	lead.call(t, "send_message", map[string]any{"to": "bob", "content": "from MCP"}, &mcp)
	if cli.Verdict != "deferred" || mcp.Verdict != cli.Verdict {
		t.Fatalf("CLI %q, MCP %q; want both deferred", cli.Verdict, mcp.Verdict)
	}
	wantUntouched(t, bob)

	bob.SetState("ready")
	var task mcpserver.AssignOutput
	lead.call(t, "assign_task", map[string]any{"agent": "bob", "task": "review both"}, &task)
	if !task.Delivered || !slices.Equal(task.Injected, []string{cli.ID, mcp.MessageID}) {
		t.Fatalf("assign_task: %+v, want both messages injected", task)
	}
	wantCode(t, s.Run("deliver"), 0)
	got := bob.Received()
	// A long task is typed folded (its first line, then how to read it all).
	if len(got) != 1 || !strings.HasPrefix(got[0], task.MessageID+": [task] You have 2 unread messages") {
		t.Fatalf("bob received %q, want the one task carrying both messages", got)
	}
	for _, id := range []string{cli.ID, mcp.MessageID} {
		if st := deliveryState(t, s, "t", "bob", id); st != mailbox.StateRead {
			t.Errorf("%s is %s, want read (it rode in the task)", id, st)
		}
	}
}
