package serve

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/wire"
)

// Issue 31: what an app reads from the API alone is the truth.

// A GET never changes state: reading an inbox over GET leaves its
// messages unread for their agent (a dashboard's refresh took bob's mail).
func TestAPIInboxGetTakesNothing(t *testing.T) {
	a := newTestAPI(t, "a1")
	seed(t, a, "a1", "MSG_LEAD_0000000a", mailbox.StateInbox)
	for i := range 2 {
		st, doc := a.do(t, "GET", "/v1/inbox/t/a1", "")
		want(t, "inbox", st, doc, 200, 0)
		if msgs, _ := doc["messages"].([]any); len(msgs) != 1 {
			t.Fatalf("GET %d: %v; want the one message, unread", i+1, doc)
		}
	}
	b, err := a.store.Unread("t", "a1", "a1")
	if err != nil || len(b.Envelopes) != 1 {
		t.Fatalf("after two GETs a1 has %d unread (%v); want 1", len(b.Envelopes), err)
	}
}

// Each copy of a broadcast says its own current state, in its message
// document too (the top-level one was one copy's, and a copy's message
// stayed typing for ever).
func TestAPIMessageCopiesSayTheirOwnState(t *testing.T) {
	a := newTestAPI(t, "a1", "a2")
	a.tmux.SetDialog("agent-t-a2", true)
	st, doc := a.do(t, "POST", "/v1/broadcast", `{"team":"t","text":"all hands","from":"app","id":"MSG_APP_0000c0de","ready_timeout":"100ms"}`)
	want(t, "broadcast", st, doc, 200, 0)
	st, doc = a.do(t, "GET", "/v1/messages/MSG_APP_0000c0de", "")
	want(t, "message", st, doc, 200, 0)
	if top, ok := doc["message"].(map[string]any); ok && top["delivery"] != nil {
		t.Errorf("the top-level message carries one copy's delivery %v: a broadcast has one per copy", top["delivery"])
	}
	states := map[string]string{}
	for _, c := range doc["copies"].([]any) {
		c := c.(map[string]any)
		msg := c["message"].(map[string]any)
		cur := msg["delivery"].(map[string]any)["state"].(string)
		if recs, _ := c["delivery"].([]any); len(recs) > 0 {
			if last := recs[len(recs)-1].(map[string]any)["state"]; last != cur {
				t.Errorf("copy %s: message.delivery.state %s, its last record %s", c["inbox"], cur, last)
			}
		}
		states[c["inbox"].(string)] = cur
	}
	if states["a1"] != "submitted" || states["a2"] != "deferred" {
		t.Errorf("copies' states %v; want a1 submitted, a2 deferred", states)
	}
}

// A message id the app chose is one message on its server: the same id
// for another agent is 409; the same id and body again answers the first
// result and types nothing twice; another body is 409.
func TestAPIMessageIDsAreUniquePerPlace(t *testing.T) {
	a := newTestAPI(t, "a1", "a2")
	body := `{"team":"t","agent":"a1","text":"hi","from":"app","id":"MSG_APP_0000d00d","ready_timeout":"1s"}`
	st, doc := a.do(t, "POST", "/v1/send", body)
	want(t, "send", st, doc, 200, 0)
	st, doc = a.do(t, "POST", "/v1/send", strings.Replace(body, `"a1"`, `"a2"`, 1))
	if st != 409 {
		t.Errorf("the same id for another agent: %d %v; want 409", st, doc)
	}
	if got := a.tmux.Received("agent-t-a2"); len(got) != 0 {
		t.Errorf("a2 received %q under an id a1's message has", got)
	}
	st, doc = a.do(t, "POST", "/v1/send", body)
	if st != 200 || doc["id"] != "MSG_APP_0000d00d" || doc["stored"] != "submitted" {
		t.Errorf("the same send again: %d %v; want the first result, 200", st, doc)
	}
	if got := a.tmux.Received("agent-t-a1"); len(got) != 1 {
		t.Errorf("a1 received %q; want it once", got)
	}
	st, doc = a.do(t, "POST", "/v1/send", strings.Replace(body, `"hi"`, `"ho"`, 1))
	if st != 409 {
		t.Errorf("the same id with another text: %d %v; want 409", st, doc)
	}
	st, doc = a.do(t, "GET", "/v1/messages/MSG_APP_0000d00d", "")
	want(t, "message", st, doc, 200, 0)
	if n := len(doc["copies"].([]any)); n != 1 {
		t.Errorf("GET /v1/messages: %d copies; want 1", n)
	}
}

// A cursor past the end of the log (a state dir wiped or moved) is told
// at once to start again, rather than streamed nothing.
func TestAPIStreamCursorPastTheEndResets(t *testing.T) {
	a := newTestAPI(t, "a1")
	seed(t, a, "a1", "MSG_LEAD_0000000a", mailbox.StatePending)
	srv := httptest.NewServer(a.h)
	defer srv.Close()
	for _, how := range []string{"header", "query"} {
		req, _ := http.NewRequestWithContext(t.Context(), "GET", srv.URL+"/v1/events", nil)
		if how == "header" {
			req.Header.Set("Last-Event-ID", "99999999")
		} else {
			req.URL.RawQuery = "since=99999999"
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		lines := make(chan string, 16)
		go func() {
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		got := ""
		timeout := time.After(3 * time.Second)
	read:
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					break read
				}
				got += l + "\n"
				if strings.HasPrefix(l, "data:") {
					break read
				}
			case <-timeout:
				break read
			}
		}
		resp.Body.Close()
		if !strings.Contains(got, "event: reset") {
			t.Errorf("%s: a cursor past the end got %q within 3 s; want an event reset", how, got)
		}
	}
}

// The smaller things an app trips on (issue 31, item 9).
func TestAPIAnswersAnAppCanRead(t *testing.T) {
	a := newTestAPI(t, "a1")
	check := func(what string, w *httptest.ResponseRecorder, status int) map[string]any {
		t.Helper()
		var doc map[string]any
		if w.Code != status || !strings.HasPrefix(w.Header().Get("Content-Type"), "application/json") || json.Unmarshal(w.Body.Bytes(), &doc) != nil || doc["exit_code"] == nil {
			t.Errorf("%s: %d %s %q; want %d, a JSON error with exit_code", what, w.Code, w.Header().Get("Content-Type"), w.Body.String(), status)
		}
		return doc
	}
	serve := func(method, path string, body []byte) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		a.h.ServeHTTP(w, httptest.NewRequest(method, path, bytes.NewReader(body)))
		return w
	}
	check("an unknown path", serve("GET", "/v1/nosuch", nil), 404)
	check("an unknown method", serve("DELETE", "/v1/send", nil), 405)
	if doc := check("an unknown message", serve("GET", "/v1/messages/MSG_LEAD_00000009", nil), 404); doc["exit_code"] != float64(3) {
		t.Errorf("an unknown message: exit_code %v; want 3, the CLI's", doc["exit_code"])
	}
	big := append([]byte(`{"team":"t","agent":"a1","from":"app","text":"`), bytes.Repeat([]byte("x"), 16<<20)...)
	check("a body over 16 MiB", serve("POST", "/v1/send", append(big, `"}`...)), 413)
	check("JSON after the body", serve("POST", "/v1/send", []byte(`{"team":"t","agent":"a1","from":"app","text":"x"} {"text":"y"}`)), 400)
	if got := a.tmux.Received("agent-t-a1"); len(got) != 0 {
		t.Errorf("a refused body typed %q", got)
	}
	doc := check("text a number", serve("POST", "/v1/send", []byte(`{"team":"t","agent":"a1","from":"app","text":5}`)), 400)
	if e, _ := doc["error"].(string); strings.Contains(e, "Go") || strings.Contains(e, "unmarshal") || !strings.Contains(e, "text") {
		t.Errorf("text a number: %q; want what is wrong with text, not Go's words", e)
	}

	// A send to no agent answers no id that cannot be looked up.
	st, doc := a.do(t, "POST", "/v1/send", `{"team":"t","agent":"nobody","text":"x","from":"app"}`)
	want(t, "send to nobody", st, doc, 404, 3)
	if id, _ := doc["id"].(string); id != "" {
		if st, _ := a.do(t, "GET", "/v1/messages/"+id, ""); st != 200 {
			t.Errorf("a send to nobody answered id %s, which GET /v1/messages/%s does not know (%d)", id, id, st)
		}
	}

	// A reply finds the replier's team from the message it answers.
	seed(t, a, "a1", "MSG_LEAD_0000000a", mailbox.StateSubmitted)
	st, doc = a.do(t, "POST", "/v1/reply", `{"reply_to":"MSG_LEAD_0000000a","from":"a1","text":"done"}`)
	want(t, "reply without team", st, doc, 200, 0)

	// spawn without dir says none, not "".
	st, doc = a.do(t, "POST", "/v1/spawn", `{"team":"t","agent":"sp","command":["sleep","600"]}`)
	want(t, "spawn", st, doc, 200, 0)
	if d, ok := doc["dir"]; ok && d == "" {
		t.Errorf(`spawn without dir answered "dir": ""`)
	}
}

// An app that sends to an agent and is answered is not an agent of the
// team.
func TestAPIAnAppAnsweredIsNoAgent(t *testing.T) {
	a := newTestAPI(t, "a1")
	st, doc := a.do(t, "POST", "/v1/send", `{"team":"t","agent":"a1","text":"status?","from":"app","ready_timeout":"1s"}`)
	want(t, "send", st, doc, 200, 0)
	st, doc = a.do(t, "POST", "/v1/reply", `{"team":"t","reply_to":"`+doc["id"].(string)+`","from":"a1","text":"fine"}`)
	want(t, "reply", st, doc, 200, 0)
	st, doc = a.do(t, "GET", "/v1/agents/status?team=t", "")
	want(t, "agents", st, doc, 200, 0)
	for _, x := range doc["agents"].([]any) {
		if x.(map[string]any)["agent"] == "app" {
			t.Errorf("app is listed as an agent of t: %v", x)
		}
	}
	svc, err := a.d.backend.service(Caller{From: "a1", Team: "t", Socket: a.tmux.Server().Socket})
	if err != nil {
		t.Fatal(err)
	}
	listed, err := svc.ListAgents(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range listed.Agents {
		if x.Agent == "app" {
			t.Errorf("app is listed as an agent of t (list_agents, agentmsg list): %+v", x)
		}
	}
	st, doc = a.do(t, "GET", "/v1/inbox/t/app", "")
	want(t, "the app's answers", st, doc, 200, 0)
	if msgs, _ := doc["messages"].([]any); len(msgs) != 1 {
		t.Errorf("the app's inbox: %v; want the answer", doc)
	}
}

// The document names every type of event the stream sends.
func TestOpenAPINamesEveryEventType(t *testing.T) {
	openapiDoc, err := wire.OpenAPI("dev")
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range []string{"message.recorded", "message.typing", "message.pending", "message.not_found", "message.handled", "dropped", "expired", "reset"} {
		if !bytes.Contains(openapiDoc, []byte(`"`+typ+`"`)) {
			t.Errorf("the OpenAPI document does not name event type %s", typ)
		}
	}
}
