package serve

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agentmsg/agentmsg/eventlog"
	"github.com/agentmsg/agentmsg/wire"
)

var update = flag.Bool("update", false, "write docs/openapi.json anew from the operations' declarations")

// Every operation declared in wire.Operations has a handler, and every
// handler an operation: the table is what the daemon serves.
func TestEveryOperationIsServed(t *testing.T) {
	declared := map[string]bool{}
	for _, op := range wire.Operations() {
		declared[op.ID] = true
		if handlers[op.ID] == nil {
			t.Errorf("operation %s (%s %s) has no handler", op.ID, op.Method, op.Path)
		}
	}
	for id := range handlers {
		if !declared[id] {
			t.Errorf("handler %s serves no declared operation", id)
		}
	}
}

// docs/openapi.json is the document the daemon serves (GET
// /v1/openapi.json), generated from the declarations: go test ./serve
// -run TestOpenAPIIsCurrent -update writes it anew.
func TestOpenAPIIsCurrent(t *testing.T) {
	doc, err := wire.OpenAPI("dev")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "docs", "openapi.json")
	if *update {
		if err := os.WriteFile(path, doc, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, doc) {
		t.Errorf("%s is not the document the declarations make: go test ./serve -run TestOpenAPIIsCurrent -update", path)
	}
	a := newTestAPI(t)
	w := httptest.NewRecorder()
	a.h.ServeHTTP(w, httptest.NewRequest("GET", "/v1/openapi.json", nil))
	var served struct {
		OpenAPI string `json:"openapi"`
		Paths   map[string]map[string]struct {
			OperationID string `json:"operationId"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &served); err != nil || !strings.HasPrefix(served.OpenAPI, "3.1") {
		t.Fatalf("GET /v1/openapi.json: %d %v %.200s", w.Code, err, w.Body)
	}
	n := 0
	for path, ops := range served.Paths {
		for method, op := range ops {
			n++
			if handlers[op.OperationID] == nil {
				t.Errorf("%s %s: operation %q has no handler", method, path, op.OperationID)
			}
		}
	}
	if n != len(wire.Operations()) {
		t.Errorf("the document describes %d operations; %d are declared", n, len(wire.Operations()))
	}
}

// schemaCache holds the resolved schema of each answer's types.
var schemaCache sync.Map // string -> *jsonschema.Resolved

func resolved(t *testing.T, types ...reflect.Type) *jsonschema.Resolved {
	t.Helper()
	key := fmt.Sprint(types)
	if rs, ok := schemaCache.Load(key); ok {
		return rs.(*jsonschema.Resolved)
	}
	s, err := wire.Schema(types...)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		t.Fatalf("the schema of %v: %v", types, err)
	}
	schemaCache.Store(key, rs)
	return rs
}

// holdToSchema checks an answer against the schema its operation declares
// for its status (every answer of the tests goes through it: see
// newTestAPI): a field the document does not promise, a value outside an
// enumeration, a missing required field or a null fails the test.
func holdToSchema(t *testing.T, pattern string, status int, body []byte) {
	t.Helper()
	var op *wire.Operation
	for _, o := range wire.Operations() {
		if o.Method+" "+o.Path == pattern {
			op = &o
			break
		}
	}
	types := []reflect.Type{reflect.TypeFor[wire.Error]()}
	if op != nil {
		types = nil
		for _, a := range op.Answers {
			if a.Status == status || a.Status == 0 && types == nil {
				types = a.AnyOf
				if a.Type != nil {
					types = []reflect.Type{a.Type}
				}
			}
		}
		if len(types) == 0 {
			return // not JSON the document describes by a type (the document itself)
		}
	}
	var doc any
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Errorf("%s answered %d, not JSON: %v\n%.300s", pattern, status, err, body)
		return
	}
	if err := resolved(t, types...).Validate(doc); err != nil {
		t.Errorf("%s answered %d with a document its schema (%v) does not describe: %v\n%.600s", pattern, status, types, err, body)
	}
}

// checked serves next, holding every JSON answer to its schema; a stream
// goes through as it is, each event held to the schema of a stream item.
func checked(t *testing.T, mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, pattern := mux.Handler(r)
		if pattern == "GET /v1/events" || pattern == "POST /v1/cli" {
			mux.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, r)
		if ct := rec.Header().Get("Content-Type"); strings.HasPrefix(ct, "application/json") && pattern != "GET /v1/openapi.json" {
			holdToSchema(t, pattern, rec.Code, rec.Body.Bytes())
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	})
}

// Every event the log holds after the tests here is one the document
// describes, of a type it lists.
func TestEventsAreDescribed(t *testing.T) {
	a := newTestAPI(t, "a1", "a2")
	a.tmux.SetDialog("agent-t-a2", true)
	a.do(t, "POST", "/v1/broadcast", `{"team":"t","text":"all hands","from":"app","ready_timeout":"50ms"}`)
	a.do(t, "POST", "/v1/send", `{"team":"t","agent":"a1","text":"hi","from":"app"}`)
	evs, _, err := a.log.Since(-1, 1000)
	if err != nil || len(evs) == 0 {
		t.Fatalf("events: %v %v", evs, err)
	}
	rs := resolved(t, reflect.TypeFor[eventlog.Event]())
	for _, e := range evs {
		if !eventlog.Known(e.Type) {
			t.Errorf("event %d: type %s is not in eventlog.Kinds", e.ID, e.Type)
		}
		b, _ := json.Marshal(e)
		var doc any
		_ = json.Unmarshal(b, &doc)
		if err := rs.Validate(doc); err != nil {
			t.Errorf("event %s: %v\n%s", e.Type, err, b)
		}
	}
	for _, c := range []any{wire.StreamDropped{Type: wire.StreamEventDropped, ResumeFrom: 4}, wire.StreamReset{Type: wire.StreamEventReset, Last: 3, ResumeFrom: 3}} {
		b, _ := json.Marshal(c)
		var doc any
		_ = json.Unmarshal(b, &doc)
		if err := resolved(t, reflect.TypeFor[wire.StreamItem]()).Validate(doc); err != nil {
			t.Errorf("%s: %v", b, err)
		}
	}
	if !slices.ContainsFunc(evs, func(e eventlog.Event) bool { return e.Type == eventlog.MessageDeferred }) {
		t.Error("no message.deferred among the events: the test did not reach what it checks")
	}
}
