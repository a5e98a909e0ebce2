package main

import (
	"context"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentmsg/agentmsg/cmd"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/mcpserver"
	"github.com/agentmsg/agentmsg/service"
)

// reach is where a front end offers one service operation: the CLI
// command that runs it and the MCP tool that does.
type reach struct{ cli, mcp string }

// operations maps every exported method of *service.Service to the CLI
// command and the MCP tool that reach it. A new operation fails the test
// below until both front ends offer it, or it is named in internal.
var operations = map[string]reach{
	"Agents":        {"agents", "get_agent_status"},
	"AssignTask":    {"task assign", "assign_task"},
	"Board":         {"board", "get_board"},
	"Broadcast":     {"broadcast", "broadcast"},
	"Claim":         {"claim", "claim_request"},
	"CleanTeam":     {"team clean", "clean_team"},
	"Deliver":       {"deliver", "deliver_messages"},
	"Events":        {"events", "get_events"},
	"Heartbeat":     {"heartbeat", "heartbeat"},
	"Hostlist":      {"hosts", "list_hosts"},
	"History":       {"log", "message_log"}, // log --id; message_log with message_id
	"Inbox":         {"inbox", "check_messages"},
	"Kill":          {"kill", "kill_agent"},
	"ListAgents":    {"list", "list_agents"},
	"Log":           {"log", "message_log"},
	"Read":          {"read", "read_message"},
	"Reply":         {"reply", "reply_message"},
	"Request":       {"request", "request_task"},
	"Requests":      {"requests", "list_requests"},
	"Send":          {"send", "send_message"},
	"SetStatus":     {"status set", "set_status"},
	"Shutdown":      {"shutdown", "shutdown_agent"},
	"Spawn":         {"spawn", "spawn_agent"},
	"Wait":          {"wait", "wait_for_message"},
	"WaitDelivered": {"send", "send_message"}, // send --wait-delivered; send_message wait_delivered_seconds
	"Workflow":      {"workflow run", "create_workflow"},
}

// internal are the exported methods that are no operation of their own,
// or that only one front end can offer, and why.
var internal = map[string]string{
	// Parts of other operations.
	"CheckTeam":     "the check every operation that names a team makes",
	"ExpiredNotice": "the reminder Deliver and Requests --nudge post for an expired request",
	"LastEvent":     "where send --wait-delivered and events start reading the event log",
	"ReadOwn":       "read_message as an agent (not an orchestrator): Read scoped to its own mail",
	"Sent":          "log --id and GET /v1/messages/{id} for a message sent to another host: what History finds nowhere here",
	"ServerGone":    "how deliver --watch learns that its tmux server has gone, and ends",
	// The daemon's side of a message from another host (package relay).
	"NewReceiver":  "records what another host's daemon sent to one of this host's agents",
	"MessageState": "how far such a message got, told back to its sending host",
	// A person's, in the terminal UI (agentmsg top) and the daemon's API:
	// they act on what a person saw on an agent's screen, which an agent
	// calling tools does not see.
	"Screens":  "the screens top shows",
	"OpenPane": "top's jump to an agent's pane in the person's own terminal",
	"Handle":   "top's 'handled by hand' on a message a person dealt with",
	"Retry":    "top's retry of a message after a person looked at the pane",
	// A stream: a tool call answers once; wait_for_message is its MCP form.
	"Follow": "inbox --follow",
}

// Every operation of package service is reachable from the CLI and from
// MCP (the orchestrator's tools): front ends used to differ (MCP had
// workflows and assign_task, the CLI spawn and read).
func TestFrontendsReachEveryServiceOperation(t *testing.T) {
	var methods []string
	typ := reflect.TypeFor[*service.Service]()
	for i := range typ.NumMethod() {
		methods = append(methods, typ.Method(i).Name)
	}
	for _, m := range methods {
		_, mapped := operations[m]
		if _, skip := internal[m]; !mapped && !skip {
			t.Errorf("service.%s is reached by no front end: add a CLI command and an MCP tool (operations), or say in internal why not", m)
		}
	}
	for name := range operations {
		if !slices.Contains(methods, name) {
			t.Errorf("operations names service.%s, which is gone", name)
		}
	}

	f, _, _ := testFactory(t, nil)
	root := cmd.NewCmdRoot(f)
	tools := mcpTools(t, true)
	for _, name := range sortedKeys(operations) {
		r := operations[name]
		if c, rest, err := root.Find(strings.Fields(r.cli)); err != nil || len(rest) > 0 || c.CommandPath() != "agentmsg "+r.cli {
			t.Errorf("service.%s: the CLI has no command %q", name, r.cli)
		}
		if !slices.Contains(tools, r.mcp) {
			t.Errorf("service.%s: the MCP server has no tool %q", name, r.mcp)
		}
	}
}

// mcpTools lists the tools of the MCP server (the orchestrator's, or an
// agent's).
func mcpTools(t *testing.T, orchestrator bool) []string {
	t.Helper()
	ctx := context.Background()
	deps := service.Service{Team: "alpha", Name: "lead", Sender: "LEAD", Store: mailbox.New(t.TempDir())}
	st, ct := mcp.NewInMemoryTransports()
	ss, err := mcpserver.New(deps, orchestrator).Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		cs.Close()
		ss.Wait()
	}()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
