package mcpserver

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/eventlog"
	"github.com/agentmsg/agentmsg/mailbox"
)

// The tools MCP lacked while the CLI had them (read, reply, requests,
// status, board, heartbeat, spawn, deliver, log, events, team clean), and
// how a protocol message says how to answer it.

// A long message is read whole by id; a shutdown-request carries how to
// answer it, and reply_message answers it to its sender with reply_to
// and the metadata the protocol asks for.
func TestReadAndReplyMessage(t *testing.T) {
	t.Parallel()
	tm := newTeam(t)
	lead, ana := tm.as("lead", false), tm.as("ana", false)
	for _, name := range []string{"lead", "ana"} {
		if err := tm.store.SetStatus("t", name, mailbox.Status{}); err != nil { // as agentmsg mcp does
			t.Fatal(err)
		}
	}
	var req SendOutput
	lead.call("send_message", map[string]any{"to": "ana", "type": "shutdown-request", "content": "wrap up\nthe rest of a long text"}, &req)
	var in CheckOutput
	ana.call("check_messages", nil, &in)
	if in.Count != 1 || !strings.Contains(in.Messages[0].Answer, "--type shutdown-response --meta accept=true "+req.MessageID) ||
		!strings.Contains(in.Messages[0].Answer, "reply_message") {
		t.Fatalf("the shutdown-request as ana reads it: %+v", in)
	}
	var whole Message
	ana.call("read_message", map[string]any{"message_id": req.MessageID}, &whole)
	if whole.Content != "wrap up\nthe rest of a long text" || whole.From != "lead" {
		t.Fatalf("read_message: %+v", whole)
	}
	if msg := ana.callErr("read_message", map[string]any{"message_id": "MSG_LEAD_00000000"}); !strings.Contains(msg, "no inbox holds it") {
		t.Errorf("an unknown id: %q", msg)
	}

	var sent SendOutput
	ana.call("reply_message", map[string]any{"message_id": req.MessageID, "type": "shutdown-response",
		"metadata": map[string]string{"accept": "true"}, "content": "stopping"}, &sent)
	if sent.To != "lead" || sent.Verdict != "recorded" {
		t.Fatalf("reply_message: %+v", sent)
	}
	var got WaitOutput
	lead.call("wait_for_message", map[string]any{"reply_to": req.MessageID, "type": "shutdown-response", "timeout_seconds": 5}, &got)
	if got.TimedOut || got.Message.Metadata["accept"] != "true" || got.Message.From != "ana" {
		t.Fatalf("the answer: %+v", got)
	}
	for args, want := range map[string]map[string]any{
		"not in your inbox":     {"message_id": "MSG_BOB_00000000", "content": "x"},
		"needs metadata accept": {"message_id": req.MessageID, "type": "shutdown-response", "content": "x"},
		"is not a message id":   {"message_id": "nope", "content": "x"},
		"only an orchestrator":  {"message_id": req.MessageID, "content": "x", "team": "u"},
	} {
		if msg := ana.callErr("reply_message", want); !strings.Contains(msg, args) {
			t.Errorf("reply_message %v: %q, want it to say %q", want, msg, args)
		}
	}
}

// An orchestrator reaches any team by naming it; an agent stays in its
// own, and is told why.
func TestOrchestratorActsAcrossTeams(t *testing.T) {
	t.Parallel()
	tm := newTeam(t, "ana")
	if _, _, err := tm.tmux.NewSession(context.Background(), "agent-u-bob", "", nil, nil); err != nil {
		t.Fatal(err)
	}
	lead, ana := tm.as("lead", true), tm.as("ana", false)

	var sent SendOutput
	lead.call("send_message", map[string]any{"to": "bob", "team": "u", "content": "hi from t"}, &sent)
	if !sent.Delivered || sent.To != "bob" {
		t.Fatalf("send to u/bob: %+v", sent)
	}
	var b BroadcastOutput
	lead.call("broadcast", map[string]any{"team": "u", "content": "all of u"}, &b)
	if !slices.Equal(b.DeliveredTo, []string{"bob"}) {
		t.Fatalf("broadcast to u: %+v", b)
	}
	if got := tm.tmux.Received("agent-u-bob"); len(got) != 2 || !strings.HasSuffix(got[0], ": hi from t") || !strings.HasSuffix(got[1], ": all of u") {
		t.Fatalf("bob's pane got %q", got)
	}
	if got := tm.tmux.Received("agent-t-ana"); len(got) != 0 {
		t.Fatalf("ana's pane got %q", got)
	}
	var list ListOutput
	lead.call("list_agents", map[string]any{"team": "u"}, &list)
	if list.Team != "u" || len(list.Agents) == 0 || list.Agents[0].Agent != "bob" {
		t.Fatalf("list_agents of u: %+v", list)
	}

	for tool, args := range map[string]map[string]any{
		"send_message":  {"to": "bob", "team": "u", "content": "x"},
		"request_task":  {"team": "u", "description": "x"},
		"claim_request": {"team": "u", "request_id": "REQ_00000000"},
		"list_agents":   {"team": "u"},
		"list_requests": {"team": "u"},
		"get_board":     {"team": "u"},
	} {
		if msg := ana.callErr(tool, args); !strings.Contains(msg, "only an orchestrator") || !strings.Contains(msg, "you are in team t") {
			t.Errorf("%s to team u as an agent: %q", tool, msg)
		}
	}
	if got := tm.tmux.Received("agent-u-bob"); len(got) != 2 {
		t.Errorf("an agent reached another team: bob's pane got %q", got)
	}
}

// The board, the caller's status, its heartbeat and the team's requests.
func TestBoardStatusHeartbeatRequests(t *testing.T) {
	t.Parallel()
	tm := newTeam(t)
	ana, lead := tm.as("ana", false), tm.as("lead", true)
	var set SetStatusOutput
	ana.call("set_status", map[string]any{"state": "working", "working_on": "the parser"}, &set)
	ana.call("set_status", map[string]any{"done": []string{"tests"}}, &set)
	if set.Status.State != "working" || set.Status.WorkingOn != "the parser" || !slices.Equal(set.Status.Done, []string{"tests"}) {
		t.Fatalf("set_status: %+v", set)
	}
	if msg := ana.callErr("set_status", map[string]any{"state": "asleep"}); !strings.Contains(msg, "want one of") {
		t.Errorf("a bad state: %q", msg)
	}
	var board BoardOutput
	lead.call("get_board", nil, &board)
	if len(board.Agents) != 1 || board.Agents[0].Agent != "ana" || board.Agents[0].WorkingOn != "the parser" {
		t.Fatalf("get_board: %+v", board)
	}
	var hb HeartbeatOutput
	ana.call("heartbeat", nil, &hb)
	if rec, err := tm.store.RegisteredAgent("t", "ana"); err != nil || !rec.Heartbeat.Equal(hb.At) || hb.Agent != "ana" {
		t.Fatalf("heartbeat %+v; registry %+v, %v", hb, rec, err)
	}
	var req RequestOutput
	lead.call("request_task", map[string]any{"description": "review PR 12"}, &req)
	var claim ClaimOutput
	ana.call("claim_request", map[string]any{"request_id": req.RequestID}, &claim)
	var reqs ListRequestsOutput
	ana.call("list_requests", nil, &reqs)
	if len(reqs.Requests) != 1 || reqs.Requests[0].RequestID != req.RequestID || reqs.Requests[0].State != "claimed" ||
		reqs.Requests[0].ClaimedBy != "ana" || reqs.Requests[0].From != "lead" {
		t.Fatalf("list_requests: %+v", reqs)
	}
}

// spawn_agent starts an agent in the team named, through the lifecycle.
func TestSpawnAgent(t *testing.T) {
	t.Parallel()
	tm := newTeam(t)
	lead := tm.as("lead", true)
	var out SpawnOutput
	lead.call("spawn_agent", map[string]any{"name": "carl", "team": "u", "command": []string{"sh", "-c", "exec cat"}, "cwd": "/tmp"}, &out)
	if out.Team != "u" || out.Agent != "carl" || out.Session != "agent-u-carl" {
		t.Fatalf("spawn_agent: %+v", out)
	}
	if got := tm.life.log(); !slices.Equal(got, []string{`spawn u/carl ["sh" "-c" "exec cat"] in "/tmp"`}) {
		t.Fatalf("lifecycle calls: %q", got)
	}
	if msg := lead.callErr("spawn_agent", map[string]any{"name": "Bad Name", "command": []string{"sh"}}); !strings.Contains(msg, "invalid agent name") {
		t.Errorf("a bad name: %q", msg)
	}
}

// A message deferred while its agent was busy is typed by
// deliver_messages once it is ready; message_log and get_events say what
// became of it; send_message with wait_delivered_seconds waits for it.
func TestDeliverLogAndEvents(t *testing.T) {
	t.Parallel()
	tm := newTeam(t, "ana")
	tm.store.Events = &eventlog.Log{Dir: filepath.Join(tm.store.Root, "events")}
	lead := tm.as("lead", true)
	tm.tmux.SetDialog("agent-t-ana", true)
	var first SendOutput
	lead.call("send_message", map[string]any{"to": "ana", "content": "later"}, &first)
	if first.Verdict != "deferred" {
		t.Fatalf("send: %+v", first)
	}
	var log LogOutput
	lead.call("message_log", map[string]any{"agent": "ana"}, &log)
	if len(log.Entries) != 1 || log.Entries[0].State != "deferred" || log.Entries[0].Reason == "" {
		t.Fatalf("message_log while ana is busy: %+v", log)
	}

	tm.tmux.SetDialog("agent-t-ana", false)
	var pass DeliverOutput
	lead.call("deliver_messages", nil, &pass)
	if pass.Delivered != 1 || len(pass.Tried) != 1 || pass.Tried[0].MessageID != first.MessageID || pass.Tried[0].Verdict != "submitted" {
		t.Fatalf("deliver_messages: %+v", pass)
	}
	lead.call("message_log", map[string]any{"message_id": first.MessageID}, &log)
	var states []string
	for _, d := range log.History["ana"] {
		states = append(states, d.State)
	}
	if len(log.Entries) != 1 || log.Entries[0].State != "submitted" || !slices.Contains(states, "deferred") || states[len(states)-1] != "submitted" {
		t.Fatalf("message_log of %s: %+v", first.MessageID, log)
	}

	var evs EventsOutput
	lead.call("get_events", map[string]any{"limit": 1}, &evs)
	if len(evs.Events) != 1 || !evs.More {
		t.Fatalf("get_events limit 1: %+v", evs)
	}
	var rest EventsOutput
	lead.call("get_events", map[string]any{"after": evs.NextAfter, "limit": 512}, &rest)
	var types []string
	for _, e := range rest.Events {
		if e.Message == string(first.MessageID) {
			types = append(types, string(e.Type))
		}
		if e.ID <= evs.NextAfter {
			t.Errorf("event %d came again after %d", e.ID, evs.NextAfter)
		}
	}
	if rest.More || !slices.Contains(types, "message.submitted") {
		t.Fatalf("get_events after %d: %v (more %v)", evs.NextAfter, types, rest.More)
	}

	// Deferred again, then delivered by a pass while the sender waits.
	tm.tmux.SetDialog("agent-t-ana", true)
	done := make(chan SendOutput, 1)
	go func() {
		var out SendOutput
		lead.call("send_message", map[string]any{"to": "ana", "content": "wait for me", "wait_delivered_seconds": 30}, &out)
		done <- out
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !deferredIn(t, tm, "ana", "wait for me") {
		if time.Now().After(deadline) {
			t.Fatal("the second message was never deferred")
		}
		time.Sleep(5 * time.Millisecond)
	}
	tm.tmux.SetDialog("agent-t-ana", false)
	lead.call("deliver_messages", nil, &pass)
	if got := <-done; !got.Delivered || got.Verdict != "submitted" {
		t.Fatalf("send_message with wait_delivered_seconds: %+v", got)
	}
}

// deferredIn reports whether agent's inbox holds text, deferred.
func deferredIn(t *testing.T, tm *team, agent, text string) bool {
	t.Helper()
	batch, err := tm.store.Read("t", agent)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range batch.Envelopes {
		if e.Content == text && e.Delivery != nil && e.Delivery.State == mailbox.StateDeferred {
			return true
		}
	}
	return false
}

// clean_team says what it would remove, then removes it; it needs the
// team named.
func TestCleanTeam(t *testing.T) {
	t.Parallel()
	tm := newTeam(t)
	lead := tm.as("lead", true)
	if err := tm.store.SetStatus("u", "bob", mailbox.Status{}); err != nil {
		t.Fatal(err)
	}
	var out CleanOutput
	lead.call("clean_team", map[string]any{"team": "u", "dry_run": true}, &out)
	if !out.Stored || out.Removed || out.Statuses != 1 {
		t.Fatalf("dry run: %+v", out)
	}
	lead.call("clean_team", map[string]any{"team": "u"}, &out)
	if !out.Removed {
		t.Fatalf("clean: %+v", out)
	}
	if teams, _ := tm.store.Teams(); slices.Contains(teams, "u") {
		t.Errorf("team u is still stored: %v", teams)
	}
	if msg := lead.callErr("clean_team", map[string]any{"team": ""}); !strings.Contains(msg, "team is empty") {
		t.Errorf("no team: %q", msg)
	}
}
