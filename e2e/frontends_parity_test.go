package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/e2e/harness"
	"github.com/agentmsg/agentmsg/mcpserver"
)

// The operations one front end had and the other had not (issue 21): the
// CLI's task assign and the MCP server's team field, read_message and
// spawn_agent; the answer hint of a shutdown-request; whoami and prime.

// A lead reaches another team from both front ends: a task from the CLI
// (task assign, which it lacked) and from MCP (assign_task with a team,
// which it lacked), a message and a broadcast; an agent that names another
// team over MCP is refused.
func TestCLIAndMCPAgreeAcrossTeams(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	ana := s.StartAgent("agent-t-ana")
	bob := s.StartAgent("agent-u-bob")
	lead := startMCPEnv(t, s, "lead", true)

	res := runAs(t, s, "t", "lead", "--json", "task", "assign", "u", "bob", "from the CLI")
	var cli struct {
		ID       string   `json:"id"`
		Verdict  string   `json:"verdict"`
		Injected []string `json:"injected"`
	}
	if err := json.Unmarshal([]byte(res.Stdout), &cli); err != nil || res.Code != 0 {
		t.Fatalf("task assign: %v\n%s", err, res)
	}
	var mcp mcpserver.AssignOutput
	lead.call(t, "assign_task", map[string]any{"team": "u", "agent": "bob", "task": "from MCP"}, &mcp)
	if cli.Verdict != "submitted" || mcp.Verdict != cli.Verdict || len(cli.Injected) != 0 || len(mcp.Injected) != 0 {
		t.Fatalf("CLI %+v, MCP %+v; want both submitted, nothing injected", cli, mcp)
	}
	var sent mcpserver.SendOutput
	lead.call(t, "send_message", map[string]any{"team": "u", "to": "bob", "content": "hi u"}, &sent)
	var all mcpserver.BroadcastOutput
	lead.call(t, "broadcast", map[string]any{"team": "u", "content": "all of u"}, &all)
	wantReceived(t, bob,
		harness.Submitted(cli.ID, "[task] from the CLI"),
		harness.Submitted(mcp.MessageID, "[task] from MCP"),
		harness.Submitted(sent.MessageID, "hi u"),
		harness.Submitted(all.MessageID, "all of u"))
	wantUntouched(t, ana)

	agent := startMCPEnv(t, s, "ana", false)
	err := agent.try(context.Background(), "send_message", map[string]any{"team": "u", "to": "bob", "content": "x"}, nil)
	if err == nil || !strings.Contains(err.Error(), "only an orchestrator") {
		t.Errorf("an agent sending to another team: %v", err)
	}
	if got := bob.Received(); len(got) != 4 {
		t.Errorf("bob got %d prompts, want 4", len(got))
	}
}

// A long message typed as a pointer ("... (full text: agentmsg read ID)")
// is read whole over MCP as with the CLI; spawn_agent starts an agent as
// spawn does.
func TestCLIAndMCPAgreeOnReadAndSpawn(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	s.StartAgent("agent-t-ana")
	lead := startMCPEnv(t, s, "lead", true)

	text := "first line of a long one\n" + strings.Repeat("folded paste ", 2048/13) + "end"
	rep, res := sendJSON(t, s, nil, "--agent", "claude", "t", "ana", text)
	wantCode(t, res, 0)
	read := s.Run("read", rep.ID)
	var whole mcpserver.Message
	lead.call(t, "read_message", map[string]any{"message_id": rep.ID}, &whole)
	if read.Code != 0 || read.Stdout != text+"\n" || whole.Content != text {
		t.Fatalf("read gave %d bytes (exit %d), read_message %d; want the %d sent", len(read.Stdout), read.Code, len(whole.Content), len(text))
	}

	res = runAs(t, s, "t", "lead", "spawn", "t", "c1", "--", "sh", "-c", "exec sleep 600")
	var spawned mcpserver.SpawnOutput
	lead.call(t, "spawn_agent", map[string]any{"name": "c2", "command": []string{"sh", "-c", "exec sleep 600"}}, &spawned)
	if res.Code != 0 || spawned.Session != "agent-t-c2" || spawned.PID == 0 {
		t.Fatalf("spawn: exit %d, spawn_agent %+v\n%s", res.Code, spawned, res)
	}
	var status mcpserver.StatusOutput
	lead.call(t, "get_agent_status", nil, &status)
	running := map[string]string{}
	for _, a := range status.Agents {
		running[a.Agent] = a.State
	}
	if running["c1"] == "" || running["c1"] == "dead" || running["c1"] != running["c2"] {
		t.Errorf("the spawned agents: %v, want c1 and c2 alive and alike", running)
	}
}

// A shutdown-request says how to answer it: an agent that runs the
// command its text names, as it is, is answered by shutdown --wait. On
// main it named none, and shutdown --wait timed out (exit 7) unless the
// agent was told by hand.
func TestShutdownAnsweredAsTheRequestSays(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	ana := s.StartAgent("agent-t-ana")

	var wg sync.WaitGroup
	var shutdown harness.Result
	wg.Go(func() {
		shutdown, _ = s.Server.RunEnv([]string{"AGENTMSG_FROM=lead", "AGENTMSG_TEAM=t"},
			"shutdown", "t", "ana", "--wait", "--timeout", "60s")
	})
	got := ana.WaitReceived(1, 30*time.Second)
	_, hint, ok := strings.Cut(got[0], "(answer: ")
	command, _, _ := strings.Cut(hint, ";")
	args := shellWords(command)
	if !ok || len(args) < 2 || args[0] != "agentmsg" {
		wg.Wait()
		t.Fatalf("the shutdown-request says nothing of how to answer it: %q (shutdown: %s)", got[0], shutdown)
	}
	// ana does what it was told, as itself.
	answer := runAs(t, s, "t", "ana", args[1:]...)
	wg.Wait()
	if answer.Code != 0 || shutdown.Code != 0 || !strings.Contains(shutdown.Stdout, "t/ana accepted: stopping now") {
		t.Fatalf("ana ran %q: %s\nshutdown --wait: %s", command, answer, shutdown)
	}
}

// shellWords splits a command line as a shell would, for the double
// quotes a hint uses.
func shellWords(line string) []string {
	var words []string
	var word strings.Builder
	quoted, in := false, false
	for _, r := range line {
		switch {
		case r == '"':
			quoted, in = !quoted, true
		case r == ' ' && !quoted:
			if in {
				words = append(words, word.String())
				word.Reset()
			}
			in = false
		default:
			word.WriteRune(r)
			in = true
		}
	}
	if in {
		words = append(words, word.String())
	}
	return words
}

// Inside an agent's pane, whoami says who it is and where that came from
// (its session), and prime words its instructions for it.
func TestWhoamiAndPrimeInsideAnAgentPane(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	report, code := runInPane(t, s, "agent-alpha-bob", "--json", "whoami")
	var who struct {
		Name       string `json:"name"`
		NameSource string `json:"name_source"`
		Team       string `json:"team"`
		TeamSource string `json:"team_source"`
		Tmux       struct {
			Session string `json:"session"`
			Pane    string `json:"pane"`
			Agent   bool   `json:"agent_session"`
		} `json:"tmux"`
	}
	if err := json.Unmarshal([]byte(report), &who); err != nil || code != "0" {
		t.Fatalf("whoami in agent-alpha-bob: exit %s, %v\n%s", code, err, report)
	}
	pane := strings.TrimSpace(s.Tmux("display-message", "-p", "-t", "=agent-alpha-bob:", "#{pane_id}"))
	if who.Name != "bob" || who.Team != "alpha" || who.NameSource != "tmux session agent-alpha-bob" ||
		who.TeamSource != "tmux session agent-alpha-bob" || who.Tmux.Session != "agent-alpha-bob" || who.Tmux.Pane != pane || !who.Tmux.Agent {
		t.Fatalf("whoami in agent-alpha-bob (pane %s): %+v", pane, who)
	}
	report, code = runInPane(t, s, "agent-alpha-cy", "prime")
	if code != "0" || !strings.HasPrefix(report, "You are cy, an agent of team alpha.") {
		t.Fatalf("prime in agent-alpha-cy: exit %s\n%s", code, report)
	}
}
