package serve

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/app"
	"github.com/agentmsg/agentmsg/config"
	"github.com/agentmsg/agentmsg/courier"
	"github.com/agentmsg/agentmsg/delivery"
	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/eventlog"
	"github.com/agentmsg/agentmsg/lifecycle"
	"github.com/agentmsg/agentmsg/lock"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/tmux/tmuxtest"
)

// testAPI is the daemon's API over a fake tmux server (its agent sessions
// in team t) and a temp mailbox.
type testAPI struct {
	h     http.Handler
	tmux  *tmuxtest.Server
	store *mailbox.Store
	d     *Daemon
	log   *eventlog.Log // the event log every change goes to
}

func newTestAPI(t *testing.T, agents ...string) *testAPI {
	t.Helper()
	root := t.TempDir()
	lookup := func(k string) (string, bool) {
		if k == "AGENTMSG_HOME" {
			return root, true
		}
		return "", false
	}
	cfg, err := config.Load(lookup, filepath.Join(root, "config.toml"))
	if err != nil {
		t.Fatal(err)
	}
	srv := tmuxtest.New()
	for _, a := range agents {
		if _, _, err := srv.NewSession(t.Context(), "agent-t-"+a, "", nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	sock := srv.Server().Socket
	if err := cfg.Set("socket", sock, config.Source("test")); err != nil {
		t.Fatal(err)
	}
	store := mailbox.New(filepath.Join(root, "mail"))
	store.PollInterval = 2 * time.Millisecond
	store.CheckTransitions = true
	log := &eventlog.Log{Dir: filepath.Join(root, "mail", "events")}
	store.Events = log
	store.Place = mailbox.Place{Socket: srv.Server().Socket} // what every event names
	opts := delivery.DefaultOptions()
	opts.ReadyTimeout, opts.ConfirmTimeout = 150*time.Millisecond, time.Second
	opts.Settle, opts.Poll = time.Millisecond, time.Millisecond
	locks := lock.Dir{Path: t.TempDir()}
	disp := &dispatch.Dispatcher{Tmux: srv, Locks: locks, Clock: tmuxtest.Clock{}, Opts: opts, Concurrency: 4}
	cour := &courier.Courier{Store: store, Dispatch: disp, Locks: locks}
	b := newBackend(app.Env{LookupEnv: lookup, Config: cfg}, "test", false)
	life := &lifecycle.Manager{Tmux: srv, Dispatch: disp, Courier: cour, Store: store}
	b.places[sock] = &app.Wiring{
		Mailbox:    func() (*mailbox.Store, error) { return store, nil },
		Dispatcher: func() (*dispatch.Dispatcher, error) { return disp, nil },
		Courier:    func() (*courier.Courier, error) { return cour, nil },
		Lifecycle:  func() (*lifecycle.Manager, error) { return life, nil },
	}
	d := &Daemon{env: b.env, backend: b, ctx: t.Context(), log: log, hub: newHub(log), passes: map[string]bool{}}
	go d.hub.follow(t.Context())
	mux := http.NewServeMux()
	d.routes(mux)
	// Every answer is held to the schema its operation declares.
	return &testAPI{h: checked(t, mux), tmux: srv, store: store, d: d, log: log}
}

// do sends body ("" for none) and returns the status and the answer.
func (a *testAPI) do(t *testing.T, method, path, body string) (int, map[string]any) {
	t.Helper()
	w := httptest.NewRecorder()
	a.h.ServeHTTP(w, httptest.NewRequest(method, path, strings.NewReader(body)))
	var doc map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &doc); err != nil {
		t.Fatalf("%s %s: %d, not JSON: %v\n%s", method, path, w.Code, err, w.Body)
	}
	return w.Code, doc
}

// want checks an answer's HTTP status and exit_code.
func want(t *testing.T, what string, status int, doc map[string]any, wantStatus, wantExit int) {
	t.Helper()
	if status != wantStatus || doc["exit_code"] != float64(wantExit) {
		t.Fatalf("%s: %d %v; want %d with exit_code %d", what, status, doc, wantStatus, wantExit)
	}
}

func strs(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

// A request goes to the rest of the team; of two claims at once exactly
// one wins (exit 0) and the other is told who has it (200, exit 8).
func TestAPIRequestAndClaim(t *testing.T) {
	a := newTestAPI(t, "a1", "a2")
	st, req := a.do(t, "POST", "/v1/request", `{"team":"t","from":"lead","description":"review PR 12","timeout":"1h"}`)
	want(t, "request", st, req, 200, 0)
	if got := strings.Join(strs(req["notified"]), ","); got != "a1,a2" || req["from"] != "lead" || req["expires"] == nil {
		t.Fatalf("request: %v", req)
	}
	id := req["request_id"].(string)

	docs := make([]map[string]any, 2)
	var wg sync.WaitGroup
	for i, name := range []string{"a1", "a2"} {
		wg.Go(func() {
			w := httptest.NewRecorder()
			a.h.ServeHTTP(w, httptest.NewRequest("POST", "/v1/claim", strings.NewReader(`{"team":"t","from":"`+name+`","request_id":"`+id+`"}`)))
			_ = json.Unmarshal(w.Body.Bytes(), &docs[i])
		})
	}
	wg.Wait()
	won, lost := docs[0], docs[1]
	if won["exit_code"] != float64(0) {
		won, lost = lost, won
	}
	if won["exit_code"] != float64(0) || won["claimed"] != true || lost["exit_code"] != float64(8) || lost["claimed"] != false ||
		lost["claimed_by"] != won["claimed_by"] || !strings.Contains(lost["error"].(string), "already claimed") {
		t.Fatalf("two claims at once: %v and %v; want one won, one lost to it (exit 8)", docs[0], docs[1])
	}

	for _, tt := range []struct {
		body         string
		status, exit int
	}{
		{`{"team":"t","from":"a1","request_id":"REQ_00000000"}`, 404, 3},
		{`{"team":"t","from":"a1"}`, 400, 2},
		{`{"team":"nosuch","from":"a1","request_id":"` + id + `"}`, 404, 3},
		{`{"from":"a1","request_id":"` + id + `"}`, 400, 2}, // no team, and the daemon has none
	} {
		st, doc := a.do(t, "POST", "/v1/claim", tt.body)
		want(t, tt.body, st, doc, tt.status, tt.exit)
	}
	for _, body := range []string{`{"team":"t","description":"  "}`, `{"description":"x"}`, `{"team":"t","description":"x","timeout":"-1s"}`} {
		st, doc := a.do(t, "POST", "/v1/request", body)
		want(t, body, st, doc, 400, 2)
	}
}

// The requests list says each request's state; nudge tells the team
// about an expired one once.
func TestAPIRequestsAndNudge(t *testing.T) {
	a := newTestAPI(t, "a1")
	_, req := a.do(t, "POST", "/v1/request", `{"team":"t","from":"lead","description":"soon gone","timeout":"1ms"}`)
	id := req["request_id"].(string)
	deadline := time.Now().Add(5 * time.Second)
	for {
		st, doc := a.do(t, "GET", "/v1/requests?team=t", "")
		want(t, "requests", st, doc, 200, 0)
		reqs := doc["requests"].([]any)
		if len(reqs) != 1 || reqs[0].(map[string]any)["id"] != id {
			t.Fatalf("requests: %v", doc)
		}
		if reqs[0].(map[string]any)["state"] == "expired" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the request did not expire: %v", doc)
		}
		time.Sleep(5 * time.Millisecond)
	}
	for i, wantNudged := range []string{id, ""} {
		st, doc := a.do(t, "POST", "/v1/requests/nudge", `{"team":"t","from":"lead"}`)
		want(t, "nudge", st, doc, 200, 0)
		if got := strings.Join(strs(doc["nudged"]), ","); got != wantNudged {
			t.Fatalf("nudge %d: nudged %q, want %q", i+1, got, wantNudged)
		}
	}
	st, doc := a.do(t, "GET", "/v1/requests?team=nosuch", "")
	want(t, "requests of no team", st, doc, 404, 3)
}

// A status sets only what it gives; the board shows it; a heartbeat is
// recorded in the registry.
func TestAPIStatusBoardHeartbeat(t *testing.T) {
	a := newTestAPI(t, "a1")
	st, doc := a.do(t, "POST", "/v1/status", `{"team":"t","from":"a1","mission":"ship it","state":"working","next":["x","y"]}`)
	want(t, "status", st, doc, 200, 0)
	st, doc = a.do(t, "POST", "/v1/status", `{"team":"t","from":"a1","working_on":"the cursor"}`)
	want(t, "status", st, doc, 200, 0)
	if doc["team"] != "t" || doc["agent"] != "a1" || doc["mission"] != "ship it" || doc["working_on"] != "the cursor" ||
		strings.Join(strs(doc["next"]), ",") != "x,y" {
		t.Fatalf("status: %v; want the second update on top of the first", doc)
	}
	st, doc = a.do(t, "GET", "/v1/board?team=t", "")
	want(t, "board", st, doc, 200, 0)
	if agents := doc["agents"].([]any); len(agents) != 1 || agents[0].(map[string]any)["working_on"] != "the cursor" {
		t.Fatalf("board: %v", doc)
	}
	for _, body := range []string{`{"team":"t","from":"a1"}`, `{"team":"t","from":"a1","state":"napping"}`, `{"team":"t","from":"a1","stat":"idle"}`} {
		st, doc := a.do(t, "POST", "/v1/status", body)
		want(t, body, st, doc, 400, 2)
	}

	st, doc = a.do(t, "POST", "/v1/heartbeat", `{"team":"t","from":"a1"}`)
	want(t, "heartbeat", st, doc, 200, 0)
	rec, err := a.store.RegisteredAgent("t", "a1")
	if err != nil || rec.Heartbeat.IsZero() || doc["agent"] != "a1" || doc["at"] == nil {
		t.Fatalf("heartbeat: %v; registry %+v %v", doc, rec, err)
	}
	st, doc = a.do(t, "POST", "/v1/heartbeat", `{"from":"a1"}`)
	want(t, "heartbeat without a team", st, doc, 400, 2)
}

// spawn, shutdown (unanswered: 7; deferred: 9), kill, and their refusals.
func TestAPILifecycle(t *testing.T) {
	a := newTestAPI(t, "a1", "lead")
	dir := t.TempDir()
	body := `{"team":"t","agent":"sp","dir":"` + dir + `","command":["sleep","600"]}`
	st, doc := a.do(t, "POST", "/v1/spawn", body)
	want(t, "spawn", st, doc, 200, 0)
	if doc["session"] != "agent-t-sp" || doc["dir"] != dir || doc["socket"] != "/fake/sock" {
		t.Fatalf("spawn: %v", doc)
	}
	if _, ok := a.tmux.Started("agent-t-sp"); !ok {
		t.Fatal("no session agent-t-sp")
	}
	for _, tt := range []struct {
		body         string
		status, exit int
	}{
		{body, 409, 1}, // there already
		{`{"team":"t","agent":"sq","dir":"rel","command":["sleep","1"]}`, 400, 2},
		{`{"team":"t","agent":"sq","command":[]}`, 400, 2},
		{`{"team":"t","agent":"sq","kind":"nosuchcli","command":["sleep","1"]}`, 400, 2},
		{`{"team":"t","agent":"Bad Name","command":["sleep","1"]}`, 400, 2},
	} {
		st, doc := a.do(t, "POST", "/v1/spawn", tt.body)
		want(t, tt.body, st, doc, tt.status, tt.exit)
	}

	st, doc = a.do(t, "POST", "/v1/shutdown", `{"team":"t","agent":"a1","from":"lead","wait":true,"timeout":"50ms"}`)
	want(t, "shutdown unanswered", st, doc, 200, 7)
	if doc["verdict"] != "submitted" || doc["timed_out"] != true || doc["waited"] != true {
		t.Fatalf("shutdown: %v", doc)
	}
	// a1 defers the next one as soon as it has it: exit 9.
	first := doc["request_id"].(string)
	answered := make(chan struct{})
	go func() {
		defer close(answered)
		req, err := a.store.Wait(t.Context(), "t", "a1", func(e mailbox.Envelope) bool {
			return e.Type == mailbox.TypeShutdownRequest && string(e.ID) != first
		}, mailbox.Position{})
		if err != nil {
			return
		}
		if box, err := a.store.Box("t", "lead"); err == nil {
			_ = box.Append(mailbox.Envelope{ID: "MSG_A1_0000000a", From: "a1", To: "lead", Type: mailbox.TypeShutdownResponse,
				ReplyTo: req.ID, Content: "ten more minutes", Metadata: map[string]string{"accept": "false"}})
		}
	}()
	st, doc = a.do(t, "POST", "/v1/shutdown", `{"team":"t","agent":"a1","from":"lead","wait":true,"timeout":"5s"}`)
	<-answered
	want(t, "shutdown deferred", st, doc, 200, 9)
	if doc["answered"] != true || doc["accepted"] != false || doc["reason"] != "ten more minutes" || doc["response_id"] != "MSG_A1_0000000a" {
		t.Fatalf("shutdown: %v", doc)
	}
	for _, body := range []string{
		`{"team":"t","agent":"a1","timeout":"1s"}`,
		`{"team":"t","agent":"a1","wait":true,"timeout":"1h"}`,
	} {
		st, doc := a.do(t, "POST", "/v1/shutdown", body)
		want(t, body, st, doc, 400, 2)
	}
	st, doc = a.do(t, "POST", "/v1/shutdown", `{"team":"t","agent":"nobody","from":"lead"}`)
	want(t, "shutdown of nobody", st, doc, 404, 3)

	st, doc = a.do(t, "POST", "/v1/kill", `{"team":"t","agent":"sp","grace":"1s"}`)
	want(t, "kill", st, doc, 200, 0)
	if _, ok := a.tmux.Started("agent-t-sp"); ok || doc["session"] != "agent-t-sp" {
		t.Fatalf("kill: %v; the session is still there", doc)
	}
	st, doc = a.do(t, "POST", "/v1/kill", `{"team":"t","agent":"sp"}`)
	want(t, "kill again", st, doc, 404, 3)
	st, doc = a.do(t, "POST", "/v1/kill", `{"team":"t","agent":"lead","from":"lead"}`)
	want(t, "kill yourself", st, doc, 400, 2)

	st, doc = a.do(t, "GET", "/v1/agents/status?team=t", "")
	want(t, "agents", st, doc, 200, 0)
	var names []string
	for _, x := range doc["agents"].([]any) {
		names = append(names, x.(map[string]any)["agent"].(string))
	}
	if strings.Join(names, ",") != "a1,lead" {
		t.Fatalf("agents: %v", doc)
	}
	// An agent whose program exited is reaped: its registry entry goes.
	st, doc = a.do(t, "POST", "/v1/spawn", `{"team":"t","agent":"dd","command":["sleep","600"]}`)
	want(t, "spawn", st, doc, 200, 0)
	a.tmux.SetDead("agent-t-dd")
	st, doc = a.do(t, "POST", "/v1/agents/reap", `{"team":"t"}`)
	want(t, "reap", st, doc, 200, 0)
	if reaped, _ := doc["reaped"].([]any); len(reaped) != 1 || reaped[0].(map[string]any)["agent"] != "dd" {
		t.Fatalf("reap: %v; want dd reaped", doc)
	}
	if _, err := a.store.RegisteredAgent("t", "dd"); err == nil {
		t.Error("dd is still registered after reap")
	}
}

// A broadcast with the app's own id, asked for again (its answer lost), is
// answered again for every copy (200), typed once; the same id with
// another text is 409. A copy its intent names and no inbox holds yet (a
// sender that died part way) is listed at GET /v1/messages/{id}, never
// hidden.
func TestAPIBroadcastRetry(t *testing.T) {
	a := newTestAPI(t, "a1", "a2")
	body := `{"team":"t","text":"all hands","from":"app","id":"MSG_APP_0000aaaa","ready_timeout":"1s"}`
	for try := range 2 {
		st, doc := a.do(t, "POST", "/v1/broadcast", body)
		want(t, "broadcast", st, doc, 200, 0)
		if doc["verdict"] != "delivered" || len(doc["results"].([]any)) != 2 {
			t.Fatalf("try %d: %v", try, doc)
		}
	}
	for _, s := range []string{"agent-t-a1", "agent-t-a2"} {
		if got := a.tmux.Received(s); len(got) != 1 {
			t.Errorf("%s received %q, want it once", s, got)
		}
	}
	st, doc := a.do(t, "POST", "/v1/broadcast", strings.Replace(body, "all hands", "other words", 1))
	want(t, "another text", st, doc, 409, 1)

	env := mailbox.Envelope{ID: "MSG_APP_0000bbbb", From: "app", To: mailbox.Broadcast, Type: mailbox.TypeText, Content: "late",
		Delivery: &mailbox.Delivery{State: mailbox.StatePending}}
	held, err := a.store.Intend(mailbox.Intent{Env: env, To: []mailbox.Inbox{{Team: "t", Agent: "a1"}, {Team: "t", Agent: "a2"}}})
	if err != nil {
		t.Fatal(err)
	}
	b1, _ := a.store.Box("t", "a1")
	if err := b1.Append(env); err != nil {
		t.Fatal(err)
	}
	held.Leave()
	st, doc = a.do(t, "GET", "/v1/messages/MSG_APP_0000bbbb", "")
	want(t, "a broadcast left part way", st, doc, 200, 0)
	copies := doc["copies"].([]any)
	if len(copies) != 2 || copies[1].(map[string]any)["inbox"] != "a2" || copies[1].(map[string]any)["unrecorded"] != true {
		t.Fatalf("copies: %v", copies)
	}
}
