package serve

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
)

// What an app needs (issue 31): a send that answers at once with the id,
// snapshots that say the event they are current as of, filtered events,
// pages, and errors a program can read.

// A send with wait false answers 202 as soon as the message is recorded,
// while its agent is in a dialog; the message is typed later, and its
// id is what GET /v1/messages/{id} knows.
func TestAPIAsyncSend(t *testing.T) {
	a := newTestAPI(t, "a1")
	a.tmux.SetDialog("agent-t-a1", true)
	start := time.Now()
	st, doc := a.do(t, "POST", "/v1/send", `{"team":"t","agent":"a1","text":"when you can","from":"app","wait":false,"ready_timeout":"2s"}`)
	if st != http.StatusAccepted || doc["exit_code"] != float64(0) || doc["id"] == nil || doc["stored"] != "typing" {
		t.Fatalf("async send: %d %v; want 202 with the id, recorded typing", st, doc)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("async send answered after %s: it waited for the agent", took)
	}
	id := doc["id"].(string)
	st, doc = a.do(t, "GET", "/v1/messages/"+id, "")
	want(t, "the message", st, doc, 200, 0)
	a.tmux.SetDialog("agent-t-a1", false)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if got := a.tmux.Received("agent-t-a1"); len(got) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the message sent with wait false never arrived")
		}
		a.do(t, "POST", "/v1/deliver", `{"ready_timeout":"100ms"}`)
		time.Sleep(20 * time.Millisecond)
	}
	// A send with wait false to no agent says so, as a blocking one.
	st, doc = a.do(t, "POST", "/v1/send", `{"team":"t","agent":"nobody","text":"x","from":"app","wait":false}`)
	want(t, "async send to nobody", st, doc, 404, 3)
}

// A snapshot says the event it is current as of: following from it, a
// change made after it comes, and nothing before it.
func TestAPISnapshotAndCursor(t *testing.T) {
	a := newTestAPI(t, "a1")
	seed(t, a, "a1", "MSG_LEAD_0000000a", mailbox.StateInbox)
	for _, path := range []string{"/v1/agents", "/v1/log", "/v1/messages/MSG_LEAD_0000000a", "/v1/inbox/t/a1"} {
		st, doc := a.do(t, "GET", path, "")
		want(t, path, st, doc, 200, 0)
		last, _ := a.log.Last()
		if doc["as_of"] != float64(last) {
			t.Errorf("%s: as_of %v; the log's last event is %d", path, doc["as_of"], last)
		}
	}
	_, doc := a.do(t, "GET", "/v1/log", "")
	asOf := int64(doc["as_of"].(float64))
	seed(t, a, "a1", "MSG_LEAD_0000000b", mailbox.StateInbox)
	srv := httptest.NewServer(a.h)
	defer srv.Close()
	req, _ := http.NewRequestWithContext(t.Context(), "GET", srv.URL+"/v1/events?types=message.recorded&agent=a1", nil)
	req.Header.Set("Last-Event-ID", strconv.FormatInt(asOf, 10))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "data: ") {
			continue
		}
		if !strings.Contains(line, `"message.recorded"`) || !strings.Contains(line, "MSG_LEAD_0000000b") {
			t.Fatalf("from as_of, the first event is %s; want b's message.recorded (a's is before as_of, and types filters the rest)", line)
		}
		return
	}
	t.Fatal("the stream ended")
}

// The log and an inbox come a page at a time: limit, then next_cursor.
func TestAPIPages(t *testing.T) {
	a := newTestAPI(t, "a1")
	for _, id := range []string{"MSG_LEAD_0000000a", "MSG_LEAD_0000000b", "MSG_LEAD_0000000c"} {
		seed(t, a, "a1", message.ID(id), mailbox.StateInbox)
	}
	for _, base := range []string{"/v1/log?team=t&limit=2", "/v1/inbox/t/a1?limit=2"} {
		st, doc := a.do(t, "GET", base, "")
		want(t, base, st, doc, 200, 0)
		if n := len(doc["messages"].([]any)); n != 2 || doc["next_cursor"] == nil {
			t.Fatalf("%s: %d messages, next_cursor %v; want 2 and a cursor", base, n, doc["next_cursor"])
		}
		st, doc = a.do(t, "GET", base+"&cursor="+doc["next_cursor"].(string), "")
		want(t, base+" page 2", st, doc, 200, 0)
		msgs := doc["messages"].([]any)
		if len(msgs) != 1 || msgs[0].(map[string]any)["id"] != "MSG_LEAD_0000000c" || doc["next_cursor"] != nil {
			t.Fatalf("%s page 2: %v; want c alone, and no cursor", base, doc)
		}
	}
	st, doc := a.do(t, "GET", "/v1/log?cursor=nonsense", "")
	if st != 400 || doc["code"] != "bad_request" || doc["field"] != "cursor" {
		t.Errorf("a cursor that names nothing: %d %v", st, doc)
	}
}

// Errors carry code, a stable word, and the field they are about.
func TestAPIErrorsHaveCodes(t *testing.T) {
	a := newTestAPI(t, "a1")
	for _, tt := range []struct {
		method, path, body string
		status             int
		code, field        string
	}{
		{"POST", "/v1/send", `{"team":"t","agent":"a1","text":"x","ready_timeot":"1s"}`, 400, "unknown_field", "ready_timeot"},
		{"POST", "/v1/send", `{"team":"t","agent":"a1","text":["x"]}`, 400, "wrong_type", "text"},
		{"POST", "/v1/send", `{"team":"t","agent":"a1",`, 400, "bad_json", ""},
		{"POST", "/v1/send", `{"team":"t","agent":"Bad Name","text":"x"}`, 400, "invalid_name", ""},
		{"GET", "/v1/log?tema=t", "", 400, "unknown_field", "tema"},
		{"GET", "/v1/inbox/t/a1?limit=many", "", 400, "wrong_type", "limit"},
		{"GET", "/v1/events?types=message.nonsense", "", 400, "bad_request", "types"},
		{"GET", "/v1/messages/MSG_LEAD_00000009", "", 404, "not_found", ""},
		{"GET", "/v1/version?x=1", "", 400, "unknown_field", "x"},
		{"GET", "/v2/send", "", 404, "no_route", ""},
		{"PUT", "/v1/send", "", 405, "method_not_allowed", ""},
	} {
		st, doc := a.do(t, tt.method, tt.path, tt.body)
		field, _ := doc["field"].(string)
		if st != tt.status || doc["code"] != tt.code || field != tt.field {
			t.Errorf("%s %s %s: %d %v; want %d, code %s, field %q", tt.method, tt.path, tt.body, st, doc, tt.status, tt.code, tt.field)
		}
	}
}
