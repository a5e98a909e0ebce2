package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentmsg/agentmsg/lifecycle"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
	"github.com/agentmsg/agentmsg/target"
)

func toolNames(t *testing.T, c *client) []string {
	t.Helper()
	res, err := c.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

func TestToolsPerMode(t *testing.T) {
	t.Parallel()
	tm := newTeam(t)
	agent := []string{"check_messages", "claim_request", "get_board", "heartbeat", "list_agents", "list_hosts", "list_requests",
		"read_message", "reply_message", "request_task", "send_message", "set_status", "wait_for_message"}
	if got := toolNames(t, tm.as("ana", false)); !slices.Equal(got, agent) {
		t.Errorf("agent mode: %v, want %v", got, agent)
	}
	all := append(slices.Clone(agent), "assign_task", "broadcast", "clean_team", "create_workflow", "deliver_messages",
		"get_agent_status", "get_events", "kill_agent", "message_log", "shutdown_agent", "spawn_agent")
	slices.Sort(all)
	if got := toolNames(t, tm.as("lead", true)); !slices.Equal(got, all) {
		t.Errorf("orchestrator mode: %v, want %v", got, all)
	}
}

// A message to an agent in tmux is typed into its pane and is in its
// inbox; check_messages does not return it again (it is on her screen),
// though --all shows it in the inbox.
func TestSendThenCheck(t *testing.T) {
	t.Parallel()
	tm := newTeam(t, "ana")
	lead, ana := tm.as("lead", false), tm.as("ana", false)

	var sent SendOutput
	lead.call("send_message", map[string]any{"to": "ana", "content": "run the tests"}, &sent)
	if !sent.Delivered || sent.Verdict != "submitted" || !message.Valid(sent.MessageID) || !strings.HasPrefix(sent.MessageID, "MSG_LEAD_") {
		t.Fatalf("send: %+v", sent)
	}
	if got := tm.tmux.Received("agent-t-ana"); !slices.Equal(got, []string{sent.MessageID + ": run the tests"}) {
		t.Fatalf("ana's pane got %q", got)
	}
	var got CheckOutput
	ana.call("check_messages", map[string]any{}, &got)
	if got.Count != 0 || got.Messages == nil {
		t.Fatalf("check after the message was typed into ana's pane: %+v", got)
	}
	if batch, err := tm.store.Read("t", "ana"); err != nil || len(batch.Envelopes) != 1 || string(batch.Envelopes[0].ID) != sent.MessageID {
		t.Fatalf("the message must stay in ana's inbox: %+v, %v", batch, err)
	}
}

func TestPeekLeavesMessagesUnread(t *testing.T) {
	t.Parallel()
	tm := newTeam(t)
	// Only in ana's inbox: a message typed into her pane is no news.
	box, err := tm.store.Box("t", "ana")
	if err == nil {
		err = box.Append(mailbox.Envelope{ID: "MSG_LEAD_0000aaaa", From: "lead", To: "ana", Type: mailbox.TypeText, Content: "x"})
	}
	if err != nil {
		t.Fatal(err)
	}
	ana := tm.as("ana", false)
	for range 2 {
		var got CheckOutput
		ana.call("check_messages", map[string]any{"peek": true}, &got)
		if got.Count != 1 {
			t.Fatalf("peek: %+v", got)
		}
	}
}

// A reply carries reply_to, and the request id of the message it answers.
func TestReplyKeepsRequestID(t *testing.T) {
	t.Parallel()
	tm := newTeam(t, "ana", "bob")
	lead, ana := tm.as("lead", false), tm.as("ana", false)
	if err := tm.store.SetStatus("t", "lead", mailbox.Status{}); err != nil { // as agentmsg mcp does
		t.Fatal(err)
	}
	var req RequestOutput
	lead.call("request_task", map[string]any{"description": "review PR 12"}, &req)
	var in CheckOutput
	ana.call("check_messages", nil, &in)
	if in.Count != 1 || in.Messages[0].RequestID != req.RequestID || in.Messages[0].Type != "request" {
		t.Fatalf("ana's inbox: %+v", in)
	}
	var sent SendOutput
	ana.call("send_message", map[string]any{"to": "lead", "content": "done", "reply_to": in.Messages[0].MessageID}, &sent)
	if sent.Verdict != "recorded" || sent.Delivered || sent.Note == "" {
		t.Fatalf("lead has no session: want recorded, got %+v", sent)
	}
	var got WaitOutput
	lead.call("wait_for_message", map[string]any{"from": "ana", "reply_to": in.Messages[0].MessageID, "timeout_seconds": 5}, &got)
	if got.TimedOut || got.Message == nil || got.Message.RequestID != req.RequestID || got.Message.Content != "done" {
		t.Fatalf("lead's wait: %+v", got)
	}
}

func TestSendErrors(t *testing.T) {
	t.Parallel()
	tm := newTeam(t, "ana")
	lead := tm.as("lead", false)
	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"to": "nobody", "content": "hi"}, "no tmux session agent-t-nobody and no inbox"},
		{map[string]any{"to": "Bad Name", "content": "hi"}, "invalid agent name"},
		{map[string]any{"to": "lead", "content": "hi"}, "is you"},
		{map[string]any{"to": "ana", "content": "  "}, "empty"},
		{map[string]any{"to": "ana", "content": "hi", "type": "status"}, "needs metadata state"},
		{map[string]any{"to": "ana", "content": "hi", "type": "status", "metadata": map[string]string{"state": "asleep"}}, "want one of"},
		{map[string]any{"to": "ana", "content": "hi", "type": "gossip"}, `type "gossip": want one of`},
		{map[string]any{"to": "ana", "content": "hi", "reply_to": "nope"}, "not a message id"},
		{map[string]any{"content": "hi"}, "to"},
	} {
		if got := lead.callErr("send_message", tc.args); !strings.Contains(got, tc.want) {
			t.Errorf("%v: error %q, want it to say %q", tc.args, got, tc.want)
		}
	}
	if got := tm.tmux.Received("agent-t-ana"); len(got) != 0 {
		t.Errorf("ana's pane got %q", got)
	}
	if names, _ := tm.store.Agents("t"); slices.Contains(names, "nobody") {
		t.Error("a message to nobody made an inbox")
	}
}

// An agent that is not ready gets the message later: deferred, a success.
func TestSendDeferredWhenBusy(t *testing.T) {
	t.Parallel()
	tm := newTeam(t, "ana")
	tm.tmux.SetDialog("agent-t-ana", true)
	var sent SendOutput
	tm.as("lead", false).call("send_message", map[string]any{"to": "ana", "content": "later"}, &sent)
	if sent.Delivered || sent.Verdict != "deferred" {
		t.Fatalf("send: %+v", sent)
	}
}

// Of many agents claiming one request at once, exactly one gets it, and
// the requester hears who.
func TestClaimOneWinner(t *testing.T) {
	t.Parallel()
	names := []string{"a1", "a2", "a3", "a4", "a5"}
	tm := newTeam(t, names...)
	lead := tm.as("lead", false)
	var req RequestOutput
	lead.call("request_task", map[string]any{"description": "take the flaky test", "timeout_seconds": 60}, &req)
	if !strings.HasPrefix(req.RequestID, "REQ_") || !slices.Equal(req.Notified, names) || req.Expires.IsZero() {
		t.Fatalf("request: %+v", req)
	}
	clients := make([]*client, len(names))
	for i, n := range names {
		clients[i] = tm.as(n, false)
	}
	outs := make([]ClaimOutput, len(names))
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Go(func() { c.call("claim_request", map[string]any{"request_id": req.RequestID}, &outs[i]) })
	}
	wg.Wait()
	winner := ""
	for i, o := range outs {
		if o.Claimed {
			if winner != "" {
				t.Fatalf("two winners: %s and %s", winner, names[i])
			}
			winner = names[i]
		}
	}
	if winner == "" {
		t.Fatalf("no winner: %+v", outs)
	}
	for i, o := range outs {
		if o.ClaimedBy != winner || (!o.Claimed && !strings.Contains(o.Reason, "already claimed by "+winner)) {
			t.Errorf("%s: %+v", names[i], o)
		}
	}
	var got WaitOutput
	lead.call("wait_for_message", map[string]any{"type": "claim", "timeout_seconds": 1}, &got)
	if got.Message == nil || got.Message.From != winner || got.Message.RequestID != req.RequestID {
		t.Fatalf("claim message: %+v", got)
	}
	if msg := clients[0].callErr("claim_request", map[string]any{"request_id": "REQ_00000000"}); !strings.Contains(msg, "no request") {
		t.Errorf("unknown request: %q", msg)
	}
}

// A request posted with request_task is typed into the panes of agents
// in tmux with its REQ_ id while it is open, as agentmsg request's is, and
// not once it is claimed (issue 10, item 18).
func TestRequestTaskIsTypedWhileOpen(t *testing.T) {
	t.Parallel()
	tm := newTeam(t, "ana", "bob")
	lead := tm.as("lead", false)
	var req RequestOutput
	lead.call("request_task", map[string]any{"description": "take the flaky test"}, &req)
	var claim ClaimOutput
	tm.as("bob", false).call("claim_request", map[string]any{"request_id": req.RequestID}, &claim)
	if !claim.Claimed {
		t.Fatalf("claim: %+v", claim)
	}
	var open RequestOutput
	lead.call("request_task", map[string]any{"description": "review PR 12"}, &open)
	// A send types the older messages waiting for ana first.
	var sent SendOutput
	lead.call("send_message", map[string]any{"to": "ana", "content": "hi"}, &sent)
	want := []string{
		open.MessageID + ": [request " + open.RequestID + "] review PR 12",
		sent.MessageID + ": hi",
	}
	if got := tm.tmux.Received("agent-t-ana"); !slices.Equal(got, want) {
		t.Errorf("ana's pane got %q, want %q", got, want)
	}
}

func TestClaimExpired(t *testing.T) {
	t.Parallel()
	tm := newTeam(t, "ana")
	lead := tm.as("lead", false)
	var req RequestOutput
	lead.call("request_task", map[string]any{"description": "quick", "timeout_seconds": 0.01}, &req)
	time.Sleep(20 * time.Millisecond) // past a 10ms expiry, not a guess at a race
	var got ClaimOutput
	tm.as("ana", false).call("claim_request", map[string]any{"request_id": req.RequestID}, &got)
	if got.Claimed || !strings.Contains(got.Reason, "expired") {
		t.Fatalf("claim of an expired request: %+v", got)
	}
}

func TestWaitForMessage(t *testing.T) {
	t.Parallel()
	tm := newTeam(t, "ana")
	ana := tm.as("ana", false)

	var got WaitOutput
	ana.call("wait_for_message", map[string]any{"from": "lead", "timeout_seconds": 0.1}, &got)
	if !got.TimedOut || got.Message != nil {
		t.Fatalf("want timed_out, got %+v", got)
	}

	// A message typed into ana's pane she saw there: no news to wait for.
	lead := tm.as("lead", false)
	lead.call("send_message", map[string]any{"to": "ana", "content": "seen in her pane", "type": "status", "metadata": map[string]string{"state": "working"}}, nil)
	// Then she is busy (a dialog stands in for her turn, busy with this
	// wait): what is sent to her waits, not typed, and is news. Woken by
	// a message sent while she waits; an earlier one from someone else
	// does not match and stays unread.
	tm.tmux.SetDialog("agent-t-ana", true)
	bob := tm.as("bob", false)
	if err := tm.store.SetStatus("t", "bob", mailbox.Status{}); err != nil {
		t.Fatal(err)
	}
	bob.call("send_message", map[string]any{"to": "ana", "content": "not this"}, nil)
	done := make(chan WaitOutput, 1)
	go func() {
		var w WaitOutput
		res, err := ana.raw(context.Background(), "wait_for_message", map[string]any{"from": "lead", "type": "status", "timeout_seconds": 10})
		if err == nil && !res.IsError {
			decode(t, res, &w)
		}
		done <- w
	}()
	lead.call("send_message", map[string]any{"to": "ana", "content": "tests pass", "type": "status", "metadata": map[string]string{"state": "complete"}}, nil)
	w := <-done
	if w.TimedOut || w.Message == nil || w.Message.Content != "tests pass" || w.Message.Metadata["state"] != "complete" {
		t.Fatalf("wait: %+v", w)
	}
	left, err := tm.store.Unread("t", "ana", "ana")
	if err != nil || len(left.Envelopes) != 2 || left.Envelopes[0].Content != "not this" {
		t.Fatalf("the unmatched message should still be unread: %+v, %v", left, err)
	}
}

// A filter no message can match is refused at once, as the CLI's wait
// refuses it (MCP used to wait the whole timeout for type "Claim!").
func TestWaitRefusesImpossibleFilters(t *testing.T) {
	t.Parallel()
	tm := newTeam(t)
	ana := tm.as("ana", false)
	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"type": "Claim!", "timeout_seconds": 0.2}, `type "Claim!": types are lower-case words`},
		{map[string]any{"reply_to": "nope", "timeout_seconds": 0.2}, `reply_to "nope": not a message id`},
		{map[string]any{"from": "a;b", "timeout_seconds": 0.2}, `from "a;b"`},
	} {
		if got := ana.callErr("wait_for_message", tc.args); !strings.Contains(got, tc.want) {
			t.Errorf("%v: error %q, want it to say %q", tc.args, got, tc.want)
		}
	}
}

// A client that cancels its call ends the wait at once.
func TestWaitCancelledByClient(t *testing.T) {
	t.Parallel()
	tm := newTeam(t)
	ana := tm.as("ana", false)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := ana.raw(ctx, "wait_for_message", map[string]any{"timeout_seconds": 60})
	if err == nil || time.Since(start) > 10*time.Second {
		t.Fatalf("a cancelled wait returned %v after %s", err, time.Since(start))
	}
	// The session still works.
	var got CheckOutput
	ana.call("check_messages", nil, &got)
}

func TestSeconds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in        float64
		want      time.Duration
		shouldErr bool
	}{
		{0, DefaultWait, false}, {1.5, 1500 * time.Millisecond, false}, {500, MaxWait, false}, {-1, 0, true},
		// Beyond what a Duration holds: the limit, never a negative wrap.
		{1e308, MaxWait, false}, {1e10, MaxWait, false}, {float64(math.MaxInt64), MaxWait, false},
		// A tiny positive time is not 0 (which means the default).
		{1e-12, time.Nanosecond, false},
		{math.NaN(), 0, true}, {math.Inf(1), 0, true},
	} {
		got, err := seconds(tc.in, DefaultWait, MaxWait)
		if got != tc.want || (err != nil) != tc.shouldErr {
			t.Errorf("seconds(%g) = %s, %v", tc.in, got, err)
		}
	}
}

// Every seconds field of every tool is clamped to its documented limit:
// 1e308 once overflowed to a negative deadline (issue 10, item 15).
func TestHugeSecondsAreClamped(t *testing.T) {
	t.Parallel()
	tm := newTeam(t, "ana")
	lead, ana := tm.as("lead", true), tm.as("ana", false)

	// wait_for_message waits (at most MaxWait) instead of failing at once;
	// ana is busy with it (a dialog stands in), so lead's message is news.
	tm.tmux.SetDialog("agent-t-ana", true)
	done := make(chan WaitOutput, 1)
	go func() {
		var w WaitOutput
		res, err := ana.raw(context.Background(), "wait_for_message", map[string]any{"from": "lead", "timeout_seconds": 1e308})
		if err == nil && !res.IsError {
			decode(t, res, &w)
		} else if err == nil {
			w.Waited = -1
			t.Errorf("wait_for_message: %s", text(res))
		}
		done <- w
	}()
	var sent SendOutput
	lead.call("send_message", map[string]any{"to": "ana", "content": "late"}, &sent)
	if w := <-done; w.Message == nil || w.Message.MessageID != sent.MessageID {
		t.Fatalf("wait with timeout_seconds 1e308: %+v", w)
	}

	// A request with a huge timeout is open, and expires within the limit.
	var req RequestOutput
	lead.call("request_task", map[string]any{"description": "x", "timeout_seconds": 1e308}, &req)
	if req.Expires.IsZero() || req.Expires.After(time.Now().Add(mailbox.MaxRequestTimeout)) || req.Expires.Before(time.Now()) {
		t.Fatalf("request expires %s", req.Expires)
	}
	var claim ClaimOutput
	ana.call("claim_request", map[string]any{"request_id": req.RequestID}, &claim)
	if !claim.Claimed {
		t.Fatalf("claim of a request with a huge timeout: %+v", claim)
	}

	lead.call("shutdown_agent", map[string]any{"agent": "ana", "wait_seconds": 1e308}, nil)
	lead.call("kill_agent", map[string]any{"agent": "ana", "grace_seconds": 1e308}, nil)
	want := []string{`shutdown t/ana from lead reason "" wait 10m0s`, "kill t/ana grace 1m0s"}
	if got := tm.life.log(); !slices.Equal(got, want) {
		t.Errorf("lifecycle calls %q, want %q", got, want)
	}
}

// A tool that runs past its limit ends with a tool error that says so.
func TestToolTimeLimit(t *testing.T) {
	t.Parallel()
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	addTool(srv, "slow", "blocks", fixed[struct{}](30*time.Millisecond), func(ctx context.Context, _ struct{}) (struct{}, error) {
		<-ctx.Done()
		return struct{}{}, ctx.Err()
	})
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{}})
	if err != nil || !res.IsError || !strings.Contains(text(res), "did not finish within its time limit of 30ms") {
		t.Fatalf("%v %+v", err, res)
	}
}

func TestListAgents(t *testing.T) {
	t.Parallel()
	tm := newTeam(t, "ana", "bob")
	if err := tm.store.SetStatus("t", "lead", mailbox.Status{State: "working", WorkingOn: "the plan"}); err != nil {
		t.Fatal(err)
	}
	tm.tmux.SetDialog("agent-t-bob", true)
	var got ListOutput
	tm.as("lead", false).call("list_agents", nil, &got)
	if got.Team != "t" || len(got.Agents) != 3 {
		t.Fatalf("list: %+v", got)
	}
	want := map[string]string{"ana": "ready", "bob": "dialog", "lead": "no-session"}
	for _, a := range got.Agents {
		if a.State != want[a.Agent] {
			t.Errorf("%s: state %q, want %q", a.Agent, a.State, want[a.Agent])
		}
	}
	if l := got.Agents[2]; !l.You || l.Board != "working" || l.WorkingOn != "the plan" || l.Session != "" {
		t.Errorf("lead: %+v", l)
	}
	if a := got.Agents[0]; a.Session != "agent-t-ana" || a.Pane == "" {
		t.Errorf("ana: %+v", a)
	}
}

func TestBroadcast(t *testing.T) {
	t.Parallel()
	tm := newTeam(t, "a1", "a2", "a3")
	tm.tmux.SetDialog("agent-t-a3", true)
	var got BroadcastOutput
	tm.as("lead", true).call("broadcast", map[string]any{"content": "stand-up in 5"}, &got)
	if got.Verdict != "deferred" || !slices.Equal(got.DeliveredTo, []string{"a1", "a2"}) || !slices.Equal(got.Deferred, []string{"a3"}) || len(got.Failed) != 0 {
		t.Fatalf("broadcast: %+v", got)
	}
	for _, a := range []string{"a1", "a2"} {
		if r := tm.tmux.Received("agent-t-" + a); !slices.Equal(r, []string{got.MessageID + ": stand-up in 5"}) {
			t.Errorf("%s got %q", a, r)
		}
	}
	if msg := tm.as("lead2", true).callErr("broadcast", map[string]any{"content": "x", "type": "status"}); !strings.Contains(msg, "state") {
		t.Errorf("a status broadcast without state: %q", msg)
	}
}

func TestBroadcastNoAgents(t *testing.T) {
	t.Parallel()
	tm := newTeam(t)
	if msg := tm.as("lead", true).callErr("broadcast", map[string]any{"content": "anyone?"}); !strings.Contains(msg, "no agent sessions") {
		t.Errorf("broadcast to nobody: %q", msg)
	}
}

// assign_task puts the agent's unread messages that never reached its pane
// in front of the task, and those are read afterwards (and not typed again).
// A request claimed by another agent is not typed inside a task either
// (issue 10, item 18): it is recorded as skipped, and an open one goes in.
func TestAssignTaskLeavesOutClaimedRequests(t *testing.T) {
	t.Parallel()
	tm := newTeam(t, "ana", "bob")
	lead := tm.as("lead", true)
	var taken, open RequestOutput
	lead.call("request_task", map[string]any{"description": "taken job"}, &taken)
	lead.call("request_task", map[string]any{"description": "open job"}, &open)
	var claim ClaimOutput
	tm.as("bob", false).call("claim_request", map[string]any{"request_id": taken.RequestID}, &claim)
	var got AssignOutput
	lead.call("assign_task", map[string]any{"agent": "ana", "task": "ship it"}, &got)
	if !got.Delivered || !slices.Equal(got.Injected, []string{open.MessageID}) {
		t.Fatalf("assign: %+v", got)
	}
	typed := tm.tmux.Received("agent-t-ana")
	if len(typed) != 1 || strings.Contains(typed[0], "taken job") || !strings.Contains(typed[0], "open job") {
		t.Fatalf("ana's pane got %q", typed)
	}
	b, err := tm.store.Read("t", "ana")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range b.Envelopes {
		if e.ID == message.ID(taken.MessageID) && (e.Delivery.State != mailbox.StateSkipped || !strings.Contains(e.Delivery.LastVerdict, "claimed by bob")) {
			t.Errorf("the claimed request is %+v, want skipped", e.Delivery)
		}
	}
}

func TestAssignTaskInjectsUnread(t *testing.T) {
	t.Parallel()
	tm := newTeam(t, "ana", "bob")
	bob := tm.as("bob", false)
	var typed0 SendOutput
	bob.call("send_message", map[string]any{"to": "ana", "content": "typed already"}, &typed0)
	tm.tmux.SetDialog("agent-t-ana", true)
	var first SendOutput
	bob.call("send_message", map[string]any{"to": "ana", "content": "the API changed"}, &first)
	tm.tmux.SetDialog("agent-t-ana", false)
	if first.Verdict != "deferred" {
		t.Fatalf("setup: %+v, want deferred", first)
	}

	var got AssignOutput
	tm.as("lead", true).call("assign_task", map[string]any{"agent": "ana", "task": "update the client", "task_id": "T1"}, &got)
	if !got.Delivered || !slices.Equal(got.Injected, []string{first.MessageID}) {
		t.Fatalf("assign: %+v", got)
	}
	typed := tm.tmux.Received("agent-t-ana")
	want := got.MessageID + ": [task] task_id=T1 You have 1 unread message:\n[" + first.MessageID +
		"] from bob (text): the API changed\n\nYour task:\nupdate the client"
	if len(typed) != 2 || typed[1] != want {
		t.Fatalf("ana's pane got %q\nwant last %q", typed, want)
	}
	b, err := tm.store.Read("t", "ana")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range b.Envelopes {
		if e.ID == message.ID(first.MessageID) && e.Delivery.State != mailbox.StateRead {
			t.Errorf("the injected message is %s, want read (so deliver leaves it)", e.Delivery.State)
		}
	}
	// Nothing is news to ana now: the task and what came before it were
	// typed into her pane, the injected message with the task.
	var left CheckOutput
	tm.as("ana", false).call("check_messages", nil, &left)
	if left.Count != 0 {
		t.Fatalf("ana's unread after the task: %+v", left)
	}

	// Nothing unread: the task alone.
	tm.as("lead", true).call("assign_task", map[string]any{"agent": "bob", "task": "review"}, &got)
	if typed := tm.tmux.Received("agent-t-bob"); typed[len(typed)-1] != got.MessageID+": [task] review" || len(got.Injected) != 0 {
		t.Fatalf("bob's pane got %q", typed)
	}
}

func TestLifecycleTools(t *testing.T) {
	t.Parallel()
	tm := newTeam(t, "ana")
	lead := tm.as("lead", true)
	resp := mailbox.Envelope{ID: "MSG_ANA_0000abcd", From: "ana", Type: mailbox.TypeShutdownResponse, Content: "finishing the migration",
		ReplyTo: "MSG_LEAD_0000ffff", Metadata: map[string]string{"accept": "false"}}
	tm.life.shutdown = lifecycle.ShutdownResult{RequestID: "MSG_LEAD_0000ffff", Answered: true, Accepted: false, Reason: resp.Content, Response: &resp}
	var sd ShutdownOutput
	lead.call("shutdown_agent", map[string]any{"agent": "ana", "reason": "wrap up", "wait_seconds": 3}, &sd)
	if sd.RequestID != "MSG_LEAD_0000ffff" || !sd.Answered || sd.Accepted || sd.Reason != "finishing the migration" ||
		sd.Response == nil || sd.Response.Metadata["accept"] != "false" {
		t.Fatalf("shutdown: %+v", sd)
	}

	tm.life.kill = lifecycle.KillResult{PIDs: []int{41, 42}, Forced: true, Took: 1500 * time.Millisecond}
	var k KillOutput
	lead.call("kill_agent", map[string]any{"agent": "ana"}, &k)
	if !k.Killed || !slices.Equal(k.PIDs, []int{41, 42}) || !k.Forced || k.TookMS != 1500 || k.Session != "agent-t-ana" {
		t.Fatalf("kill: %+v", k)
	}

	ana, _ := target.New("t", "ana")
	bob, _ := target.New("t", "bob")
	tm.life.status = []lifecycle.AgentStatus{
		{Target: ana, State: "idle", Pending: 2, Status: &mailbox.Status{WorkingOn: "tests", State: "working"}},
		{Target: bob, State: "dead", Reason: "session gone"},
	}
	var st StatusOutput
	lead.call("get_agent_status", nil, &st)
	if len(st.Agents) != 2 || st.Agents[0].Pending != 2 || st.Agents[0].WorkingOn != "tests" || st.Agents[1].State != "dead" {
		t.Fatalf("status: %+v", st)
	}
	lead.call("get_agent_status", map[string]any{"agent": "bob"}, &st)
	if len(st.Agents) != 1 || st.Agents[0].Agent != "bob" {
		t.Fatalf("status of bob: %+v", st)
	}
	if msg := lead.callErr("get_agent_status", map[string]any{"agent": "carol"}); !strings.Contains(msg, `no agent "carol"`) {
		t.Errorf("status of a stranger: %q", msg)
	}
	want := []string{`shutdown t/ana from lead reason "wrap up" wait 3s`, "kill t/ana grace 5s", "status t", "status t", "status t"}
	if got := tm.life.log(); !slices.Equal(got, want) {
		t.Errorf("lifecycle calls %q, want %q", got, want)
	}

	if msg := lead.callErr("kill_agent", map[string]any{"agent": "lead"}); !strings.Contains(msg, "is you") {
		t.Errorf("killing yourself: %q", msg)
	}
	tm.life.err = errors.New("tmux went away")
	if msg := lead.callErr("kill_agent", map[string]any{"agent": "ana"}); !strings.Contains(msg, "killing t/ana: tmux went away") {
		t.Errorf("kill error: %q", msg)
	}
}

func TestLifecycleMissing(t *testing.T) {
	t.Parallel()
	tm := newTeam(t, "ana")
	deps := tm.deps("lead")
	deps.Lifecycle = nil
	lead := &client{t: t, cs: connect(t, deps, true)}
	if msg := lead.callErr("get_agent_status", nil); !strings.Contains(msg, "not available") {
		t.Errorf("%q", msg)
	}
}

func TestNoTeam(t *testing.T) {
	t.Parallel()
	tm := newTeam(t, "ana")
	deps := tm.deps("lead")
	deps.Team = ""
	c := &client{t: t, cs: connect(t, deps, false)}
	if msg := c.callErr("check_messages", nil); !strings.Contains(msg, "AGENTMSG_TEAM") {
		t.Errorf("%q", msg)
	}
}

// answerSteps plays agent name: each workflow task it gets is answered
// with a status message whose content is f(step, task text). A task is
// typed into the agent's pane, which is no news to wait_for_message; the
// fake pane holds no text to act on, so the agent takes each task from
// its inbox as the pane would show it.
func answerSteps(ctx context.Context, t *testing.T, tm *team, name string, f func(step, task string) (string, string)) {
	c := tm.as(name, false)
	go func() {
		done := map[message.ID]bool{}
		for ctx.Err() == nil {
			task, err := tm.store.Wait(ctx, "t", name, func(e mailbox.Envelope) bool { return e.Type == mailbox.TypeTask && !done[e.ID] }, mailbox.Position{})
			if err != nil {
				return
			}
			done[task.ID] = true
			step := task.Metadata["step"]
			out, state := f(step, task.Content)
			args := map[string]any{"to": "lead", "type": "status", "content": out,
				"metadata": map[string]string{"step": step, "state": state}}
			if res, err := c.raw(ctx, "send_message", args); (err != nil || res.IsError) && ctx.Err() == nil {
				t.Errorf("%s reporting %s: %v %v", name, step, err, res)
				return
			}
		}
	}()
}

func TestWorkflowChainsOutputs(t *testing.T) {
	t.Parallel()
	tm := newTeam(t, "a1", "a2", "a3")
	if err := tm.store.SetStatus("t", "lead", mailbox.Status{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	tasks := map[string]string{}
	for _, a := range []string{"a1", "a2", "a3"} {
		answerSteps(ctx, t, tm, a, func(step, task string) (string, string) {
			mu.Lock()
			tasks[step] = task
			mu.Unlock()
			// Each output names the step and quotes what came before.
			prev := ""
			if i := strings.Index(task, "<<"); i >= 0 {
				prev = task[i : strings.LastIndex(task, ">>")+2]
			}
			return fmt.Sprintf("<<%s by %s%s>>", step, a, prev), "complete"
		})
	}
	steps := []map[string]any{
		{"name": "c", "agent": "a3", "prompt": "summarise", "depends_on": []string{"b"}},
		{"name": "a", "agent": "a1", "prompt": "gather"},
		{"name": "b", "agent": "a2", "prompt": "analyse", "depends_on": []string{"a"}},
		{"name": "solo", "agent": "a1", "prompt": "independent"},
	}
	var got WorkflowOutput
	tm.as("lead", true).call("create_workflow", map[string]any{"steps": steps, "timeout_seconds": 30}, &got)
	if !got.Completed || got.TimedOut || len(got.Steps) != 4 {
		t.Fatalf("workflow: %+v", got)
	}
	want := map[string]string{
		"a":    "<<a by a1>>",
		"b":    "<<b by a2<<a by a1>>>>",
		"c":    "<<c by a3<<b by a2<<a by a1>>>>>>",
		"solo": "<<solo by a1>>",
	}
	for name, w := range want {
		if got.Outputs[name] != w {
			t.Errorf("output of %s: %q, want %q", name, got.Outputs[name], w)
		}
	}
	if got.Steps[0].Name != "c" || got.Steps[0].State != StepDone || got.Steps[0].ReportID == "" || got.Steps[0].Verdict != "submitted" {
		t.Errorf("steps keep the order given: %+v", got.Steps[0])
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(tasks["b"], "--- step \"a\" (by a1) ---\n<<a by a1>>") || !strings.Contains(tasks["b"], "analyse") ||
		!strings.Contains(tasks["b"], "metadata step=b and state=complete") {
		t.Errorf("b's task: %q", tasks["b"])
	}
	if strings.Contains(tasks["a"], "Outputs of the steps") {
		t.Errorf("a's task has dependencies: %q", tasks["a"])
	}
}

func TestWorkflowFailureSkipsDependents(t *testing.T) {
	t.Parallel()
	tm := newTeam(t, "a1", "a2")
	if err := tm.store.SetStatus("t", "lead", mailbox.Status{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	answerSteps(ctx, t, tm, "a1", func(step, _ string) (string, string) { return "could not", "failed" })
	var got WorkflowOutput
	tm.as("lead", true).call("create_workflow", map[string]any{"steps": []map[string]any{
		{"name": "a", "agent": "a1", "prompt": "try"},
		{"name": "b", "agent": "a2", "prompt": "after", "depends_on": []string{"a"}},
	}, "timeout_seconds": 20}, &got)
	if got.Completed || got.Steps[0].State != StepFailed || got.Steps[0].Output != "could not" || got.Steps[1].State != StepSkipped {
		t.Fatalf("workflow: %+v", got)
	}
	if len(tm.tmux.Received("agent-t-a2")) != 0 {
		t.Error("a skipped step's agent got a task")
	}
}

func TestWorkflowTimesOut(t *testing.T) {
	t.Parallel()
	tm := newTeam(t, "a1", "a2")
	var got WorkflowOutput
	start := time.Now()
	tm.as("lead", true).call("create_workflow", map[string]any{"steps": []map[string]any{
		{"name": "a", "agent": "a1", "prompt": "never answered"},
		{"name": "b", "agent": "a2", "prompt": "after", "depends_on": []string{"a"}},
	}, "timeout_seconds": 0.3}, &got)
	if got.Completed || !got.TimedOut || got.Steps[0].State != StepTimedOut || got.Steps[1].State != StepTimedOut {
		t.Fatalf("workflow: %+v", got)
	}
	if time.Since(start) > 10*time.Second {
		t.Errorf("took %s", time.Since(start))
	}
}

func TestWorkflowValidation(t *testing.T) {
	t.Parallel()
	tm := newTeam(t, "a1")
	lead := tm.as("lead", true)
	for _, tc := range []struct {
		steps []map[string]any
		want  string
	}{
		{nil, "steps is empty"},
		{[]map[string]any{{"name": "a", "agent": "a1", "prompt": "x", "depends_on": []string{"z"}}}, `depends on "z", which is not a step`},
		{[]map[string]any{{"name": "a", "agent": "a1", "prompt": "x"}, {"name": "a", "agent": "a1", "prompt": "y"}}, `two steps are named "a"`},
		{[]map[string]any{
			{"name": "a", "agent": "a1", "prompt": "x", "depends_on": []string{"b"}},
			{"name": "b", "agent": "a1", "prompt": "y", "depends_on": []string{"a"}},
		}, "cycle: a -> b -> a"},
		{[]map[string]any{{"name": "a b", "agent": "a1", "prompt": "x"}}, "name"},
		{[]map[string]any{{"name": "a", "agent": "lead", "prompt": "x"}}, "is you"},
		{[]map[string]any{{"name": "a", "agent": "a1", "prompt": " "}}, "empty prompt"},
	} {
		if got := lead.callErr("create_workflow", map[string]any{"steps": tc.steps}); !strings.Contains(got, tc.want) {
			t.Errorf("%v: %q, want %q", tc.steps, got, tc.want)
		}
	}
	if len(tm.tmux.Received("agent-t-a1")) != 0 {
		t.Error("an invalid workflow sent tasks")
	}
}

// At most maxWaits wait_for_message calls are open at once per server; one
// more is refused at once, saying why, and a slot freed is used again.
func TestWaitsAreBounded(t *testing.T) {
	t.Parallel()
	tm := newTeam(t)
	ana := &client{t: t, cs: connectServer(t, newServer(tm.deps("ana"), false, 2))}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var open sync.WaitGroup
	for range 2 {
		// Each holds a slot, taking it again whenever a probe below got
		// it first.
		open.Go(func() {
			for ctx.Err() == nil {
				res, err := ana.raw(ctx, "wait_for_message", map[string]any{"from": "nobody", "timeout_seconds": 60})
				if err == nil && !res.IsError {
					return
				}
			}
		})
	}
	deadline := time.Now().Add(10 * time.Second)
	var probe WaitOutput
	for !ana.tryWait(&probe) {
		if time.Now().After(deadline) {
			t.Fatal("a third wait was taken while two were open")
		}
	}
	res, err := ana.raw(context.Background(), "wait_for_message", nil)
	if err != nil || !res.IsError || !strings.Contains(text(res), "2 waits are open") {
		t.Fatalf("the third wait: %v %v", err, res)
	}
	cancel()
	open.Wait()
	for ana.tryWait(&probe) {
		if time.Now().After(deadline) {
			t.Fatal("the slots of cancelled waits were not freed")
		}
	}
	if !probe.TimedOut {
		t.Fatalf("a wait after the others ended: %+v", probe)
	}
}

// tryWait runs a short wait and reports whether it was refused.
func (c *client) tryWait(out *WaitOutput) bool {
	c.t.Helper()
	res, err := c.raw(context.Background(), "wait_for_message", map[string]any{"timeout_seconds": 0.05})
	if err != nil {
		c.t.Fatal(err)
	}
	if res.IsError {
		return true
	}
	decode(c.t, res, out)
	return false
}
