package serve

import (
	"strings"
	"testing"

	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
)

// seed puts a message from lead into t/to's inbox, its delivery in state.
func seed(t *testing.T, a *testAPI, to string, id message.ID, state mailbox.DeliveryState) {
	t.Helper()
	b, err := a.store.Box("t", to)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Append(mailbox.Envelope{ID: id, From: "lead", To: to, Type: mailbox.TypeText, Content: "hello " + string(id),
		Delivery: &mailbox.Delivery{State: state}}); err != nil {
		t.Fatal(err)
	}
}

// The log lists what the inboxes keep, or one message's history; wait
// answers the message waited for, or exit 7 when none comes in time.
func TestAPILogAndWait(t *testing.T) {
	a := newTestAPI(t, "a1")
	seed(t, a, "a1", "MSG_LEAD_0000000a", mailbox.StatePending)

	st, doc := a.do(t, "GET", "/v1/log?team=t&agent=a1", "")
	want(t, "log", st, doc, 200, 0)
	if msgs := doc["messages"].([]any); len(msgs) != 1 || msgs[0].(map[string]any)["id"] != "MSG_LEAD_0000000a" {
		t.Fatalf("log: %v", doc)
	}
	st, doc = a.do(t, "GET", "/v1/log?id=MSG_LEAD_0000000a", "")
	want(t, "log id", st, doc, 200, 0)
	if copies := doc["copies"].([]any); len(copies) != 1 || doc["id"] != "MSG_LEAD_0000000a" {
		t.Fatalf("log id: %v", doc)
	}
	for _, tt := range []struct {
		query        string
		status, exit int
	}{
		{"id=MSG_LEAD_0000000b", 404, 3},
		{"id=nonsense", 400, 2},
		{"agent=a1", 400, 2},
		{"team=nosuch", 404, 3},
	} {
		st, doc := a.do(t, "GET", "/v1/log?"+tt.query, "")
		want(t, tt.query, st, doc, tt.status, tt.exit)
	}

	st, doc = a.do(t, "POST", "/v1/wait", `{"team":"t","from":"a1","type":"claim","timeout":"20ms"}`)
	want(t, "wait for a claim", st, doc, 200, 7)
	if doc["error"] != "timed out: no message of type claim arrived within 20ms" {
		t.Fatalf("wait: %v", doc)
	}
	st, doc = a.do(t, "POST", "/v1/wait", `{"team":"t","from":"a1","sender":"lead","timeout":"1s"}`)
	want(t, "wait", st, doc, 200, 0)
	if doc["id"] != "MSG_LEAD_0000000a" || doc["content"] != "hello MSG_LEAD_0000000a" {
		t.Fatalf("wait: %v", doc)
	}
	for _, body := range []string{`{"team":"t","from":"a1","timeout":"1h"}`, `{"team":"t","from":"a1","timeout":"0s"}`,
		`{"team":"t","from":"a1","type":"Claim!"}`, `{"from":"a1"}`} {
		st, doc := a.do(t, "POST", "/v1/wait", body)
		want(t, body, st, doc, 400, 2)
	}
}

// A person settles a message: retry sends a failed one back to deliver,
// which types it at once; handled marks one never to be typed. A message
// already taken cannot be either (409).
func TestAPIHandledAndRetry(t *testing.T) {
	a := newTestAPI(t, "a1")
	seed(t, a, "a1", "MSG_LEAD_0000000a", mailbox.StateFailed)
	seed(t, a, "a1", "MSG_LEAD_0000000b", mailbox.StateDeferred)

	st, doc := a.do(t, "POST", "/v1/messages/MSG_LEAD_0000000a/retry", `{"team":"t","agent":"a1","ready_timeout":"1s"}`)
	want(t, "retry", st, doc, 200, 0)
	pass := doc["pass"].(map[string]any)
	if doc["delivery"].(map[string]any)["state"] != "pending" || pass["delivered"] != float64(2) {
		t.Fatalf("retry: %v; want it pending, then both typed by the pass", doc)
	}
	if got := a.tmux.Received("agent-t-a1"); len(got) != 2 || !strings.Contains(got[0], "MSG_LEAD_0000000a") {
		t.Fatalf("a1 received %q", got)
	}
	seed(t, a, "a1", "MSG_LEAD_0000000c", mailbox.StateDeferred)
	st, doc = a.do(t, "POST", "/v1/messages/MSG_LEAD_0000000c/handled", `{"team":"t","agent":"a1"}`)
	want(t, "handled", st, doc, 200, 0)
	if doc["delivery"].(map[string]any)["state"] != "handled" || doc["id"] != "MSG_LEAD_0000000c" {
		t.Fatalf("handled: %v", doc)
	}
	for _, tt := range []struct {
		path, body   string
		status, exit int
	}{
		{"MSG_LEAD_0000000a/handled", `{"team":"t","agent":"a1"}`, 409, 1}, // submitted
		{"MSG_LEAD_0000000c/retry", `{"team":"t","agent":"a1"}`, 409, 1},   // handled
		{"MSG_LEAD_0000000d/handled", `{"team":"t","agent":"a1"}`, 404, 3},
		{"MSG_LEAD_0000000a/handled", `{"team":"t"}`, 400, 2},
		{"nonsense/retry", `{"team":"t","agent":"a1"}`, 400, 2},
	} {
		st, doc := a.do(t, "POST", "/v1/messages/"+tt.path, tt.body)
		want(t, tt.path+" "+tt.body, st, doc, tt.status, tt.exit)
	}
}

// A task carries the agent's unread messages in front of it; a workflow
// answers every step's outcome, done (exit 0) or timed out (exit 7).
func TestAPITaskAndWorkflow(t *testing.T) {
	a := newTestAPI(t, "a1")
	seed(t, a, "a1", "MSG_LEAD_0000000a", mailbox.StatePending)
	st, doc := a.do(t, "POST", "/v1/tasks", `{"team":"t","agent":"a1","from":"lead","task":"fix the flaky test","task_id":"T1"}`)
	want(t, "task", st, doc, 200, 0)
	if doc["verdict"] != "submitted" || strings.Join(strs(doc["injected"]), ",") != "MSG_LEAD_0000000a" {
		t.Fatalf("task: %v", doc)
	}
	if got := a.tmux.Received("agent-t-a1"); len(got) != 1 || !strings.Contains(got[0], "fix the flaky test") {
		t.Fatalf("a1 received %q", got)
	}

	// a1 reports the step as soon as its task is there.
	go func() {
		task, err := a.store.Wait(t.Context(), "t", "a1", func(e mailbox.Envelope) bool { return e.Metadata["step"] == "build" }, mailbox.Position{})
		if err != nil {
			return
		}
		if box, err := a.store.Box("t", "lead"); err == nil {
			_ = box.Append(mailbox.Envelope{ID: "MSG_A1_0000000a", From: "a1", To: "lead", Type: mailbox.TypeStatus, ReplyTo: task.ID,
				Content: "built", Metadata: map[string]string{"state": "complete", "step": "build"}})
		}
	}()
	st, doc = a.do(t, "POST", "/v1/workflows", `{"team":"t","from":"lead","steps":[{"name":"build","agent":"a1","prompt":"build it"}],"timeout":"5s"}`)
	want(t, "workflow", st, doc, 200, 0)
	if doc["completed"] != true || doc["outputs"].(map[string]any)["build"] != "built" {
		t.Fatalf("workflow: %v", doc)
	}
	st, doc = a.do(t, "POST", "/v1/workflows", `{"team":"t","from":"lead","steps":[{"name":"test","agent":"a1","prompt":"test it"}],"timeout":"30ms"}`)
	want(t, "workflow timed out", st, doc, 200, 7)
	if steps := doc["steps"].([]any); doc["timed_out"] != true || steps[0].(map[string]any)["state"] != "timed_out" {
		t.Fatalf("workflow: %v", doc)
	}
	for path, body := range map[string]string{
		"/v1/workflows": `{"team":"t","from":"lead","steps":[]}`,
		"/v1/tasks":     `{"team":"t","agent":"a1","from":"lead","task":"  "}`,
	} {
		st, doc := a.do(t, "POST", path, body)
		want(t, body, st, doc, 400, 2)
	}
	st, doc = a.do(t, "POST", "/v1/workflows", `{"team":"t","from":"lead","steps":[{"name":"x","agent":"a1","prompt":"p"}],"timeout":"2h"}`)
	want(t, "a workflow of 2h", st, doc, 400, 2)
}

// team clean says what it would remove (400, exit 2, as the CLI) until
// yes; a team with nothing stored is no error.
func TestAPICleanTeam(t *testing.T) {
	a := newTestAPI(t, "a1")
	seed(t, a, "a1", "MSG_LEAD_0000000a", mailbox.StatePending)
	st, doc := a.do(t, "POST", "/v1/teams/t/clean", `{}`)
	want(t, "clean without yes", st, doc, 400, 2)
	if doc["removed"] != false || strings.Join(strs(doc["inboxes"]), ",") != "a1" || !strings.Contains(doc["error"].(string), "yes") {
		t.Fatalf("clean: %v", doc)
	}
	st, doc = a.do(t, "POST", "/v1/teams/t/clean", `{"yes":true}`)
	want(t, "clean", st, doc, 200, 0)
	if doc["removed"] != true {
		t.Fatalf("clean: %v", doc)
	}
	st, doc = a.do(t, "POST", "/v1/teams/t/clean", `{"yes":true}`)
	want(t, "clean again", st, doc, 200, 0)
	if doc["removed"] != false {
		t.Fatalf("clean again: %v", doc)
	}
	st, doc = a.do(t, "POST", "/v1/teams/Bad!/clean", `{}`)
	want(t, "clean a bad name", st, doc, 400, 2)
}

// A mailbox_only message to a name with no session, inbox or board entry
// is refused as the CLI refuses it (a typo gets no inbox), unless create
// says the inbox is meant to start.
func TestAPIMailboxOnlyToAnUnknownNameNeedsCreate(t *testing.T) {
	a := newTestAPI(t, "a1")
	st, doc := a.do(t, "POST", "/v1/send", `{"team":"t","agent":"nobodyhere","text":"hi","from":"app","mailbox_only":true}`)
	want(t, "mailbox_only to a typo", st, doc, 404, 3)
	if _, err := a.store.Read("t", "nobodyhere"); err == nil {
		if b, _ := a.store.Read("t", "nobodyhere"); len(b.Envelopes) > 0 {
			t.Fatalf("the typo got an inbox: %v", b.Envelopes)
		}
	}
	st, doc = a.do(t, "POST", "/v1/send", `{"team":"t","agent":"nobodyhere","text":"hi","from":"app","mailbox_only":true,"create":true}`)
	want(t, "mailbox_only with create", st, doc, 200, 0)
}
