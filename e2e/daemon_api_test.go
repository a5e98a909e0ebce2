package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/e2e/harness"
)

// The daemon's API runs every operation the CLI does and answers the
// document the CLI's --json prints for it, with the same verdicts and exit
// codes (issue 18: "every service operation").

// call sends body (none for "") to path with method and returns the HTTP
// status and the answer, or an error (safe from any goroutine).
func call(c *http.Client, method, path, body string) (int, []byte, error) {
	req, err := http.NewRequest(method, "http://agentmsg"+path, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, data, err
}

// answer is one front end's report of an operation: its exit code and
// its JSON document.
type answer struct {
	code int
	doc  []byte
}

// viaCLI runs agentmsg --json args... and returns its answer.
func viaCLI(s *harness.Server, args ...string) (answer, error) {
	res, err := s.Run(append([]string{"--json"}, args...)...)
	return answer{res.Code, []byte(res.Stdout)}, err
}

// viaAPI calls the API and returns its answer: exit_code, and the document
// without it (the CLI says it by its exit status where its document does
// not carry it); status is the HTTP status wanted.
func viaAPI(c *http.Client, method, path, body string, status int) (answer, error) {
	got, data, err := call(c, method, path, body)
	if err != nil {
		return answer{}, err
	}
	var doc struct {
		ExitCode *int `json:"exit_code"`
	}
	if err := json.Unmarshal(data, &doc); err != nil || doc.ExitCode == nil {
		return answer{}, fmt.Errorf("%s %s: %d, no exit_code in %s (%v)", method, path, got, data, err)
	}
	if got != status {
		return answer{}, fmt.Errorf("%s %s: HTTP %d, want %d:\n%s", method, path, got, status, data)
	}
	return answer{*doc.ExitCode, data}, nil
}

var (
	idText   = regexp.MustCompile(`(MSG_[A-Z0-9_]+|REQ)_[0-9a-f]{8}`)
	timeText = regexp.MustCompile(`\d{4}-\d\d-\d\d[T ][\d:.]+(Z|[+-]\d\d:?\d\d)?`)
)

// volatile are the fields that differ between two runs of one operation:
// ids, times, process numbers, panes, durations.
var volatile = map[string]bool{
	"id": true, "request_id": true, "message_id": true, "response_id": true,
	"posted": true, "expires": true, "claimed_at": true, "updated": true, "timestamp": true, "at": true,
	"elapsed_ms": true, "phases_ms": true, "took_ms": true, "pid": true, "pane": true, "spawned": true,
}

// normal is a document with what differs between two runs of one
// operation taken out: volatile fields stand for themselves, ids and times
// inside texts too, pids become their number, and names become their role
// (so that a1's winning claim reads like a2's).
func normal(v any, names map[string]string) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, x := range v {
			switch {
			case volatile[k]:
				out[k] = "<" + k + ">"
			case k == "pids" && reflect.TypeOf(x) == reflect.TypeOf([]any{}):
				out[k] = len(x.([]any))
			default:
				out[k] = normal(x, names)
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = normal(x, names)
		}
		return out
	case string:
		s := timeText.ReplaceAllString(idText.ReplaceAllString(v, "<id>"), "<time>")
		for name, role := range names {
			s = regexp.MustCompile(`\b`+regexp.QuoteMeta(name)+`\b`).ReplaceAllString(s, role)
		}
		return s
	}
	return v
}

// disagree says how the API's answer differs from the CLI's, or "": the
// same exit code, and the same document (but for exit_code, which the
// CLI's document may leave to its exit status) once normal.
func disagree(cli, api answer, names map[string]string) string {
	var c, a map[string]any
	if err := json.Unmarshal(cli.doc, &c); err != nil {
		return fmt.Sprintf("the CLI's document: %v\n%s", err, cli.doc)
	}
	if err := json.Unmarshal(api.doc, &a); err != nil {
		return fmt.Sprintf("the API's document: %v\n%s", err, api.doc)
	}
	// exit_code the CLI may leave to its exit status; as_of and
	// next_cursor are the API's own (a snapshot's event cursor, a page's).
	for _, apiOnly := range []string{"exit_code", "as_of", "next_cursor"} {
		if _, ok := c[apiOnly]; !ok {
			delete(a, apiOnly)
		}
	}
	if cli.code != api.code || !reflect.DeepEqual(normal(c, names), normal(a, names)) {
		return fmt.Sprintf("the CLI (exit %d):\n%s\nthe API (exit_code %d):\n%s", cli.code, cli.doc, api.code, api.doc)
	}
	return ""
}

// agree fails the test unless the API's answer is the CLI's.
func agree(t *testing.T, what string, cli, api answer, names map[string]string) {
	t.Helper()
	if d := disagree(cli, api, names); d != "" {
		t.Fatalf("%s: the API and the CLI disagree:\n%s", what, d)
	}
}

// claimants has two agents claim one request at once, through run, and
// returns the winner's answer and the loser's, and who won and lost.
func claimants(t *testing.T, run func(name string) (answer, error)) (won, lost answer, roles map[string]string) {
	t.Helper()
	names := []string{"a1", "a2"}
	got := make([]answer, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() { got[i], errs[i] = run(name) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	switch {
	case got[0].code == 0 && got[1].code == 8:
		return got[0], got[1], map[string]string{"a1": "<winner>", "a2": "<loser>"}
	case got[1].code == 0 && got[0].code == 8:
		return got[1], got[0], map[string]string{"a2": "<winner>", "a1": "<loser>"}
	}
	t.Fatalf("two claims at once: exit %d and %d, want one 0 and one 8:\n%s\n%s", got[0].code, got[1].code, got[0].doc, got[1].doc)
	return
}

// One scenario through both front ends: each operation once through the
// CLI, once through the API, and the answers compared. A request and its
// two claimants (exactly one wins, the other is told with exit 8), the
// requests, a status and the board, a spawn, a shutdown-request that
// nobody answers, a kill, and the log.
func TestDaemonAPIAgreesWithTheCLI(t *testing.T) {
	t.Parallel()
	s := daemonServer(t)
	s.StartAgents([]string{"agent-t-a1", "agent-t-a2"})
	c := api(s)
	must := func(a answer, err error) answer {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	same := map[string]string{}

	cliReq := must(viaCLI(s.Server, "--from", "lead", "request", "t", "review PR 12"))
	apiReq := must(viaAPI(c, "POST", "/v1/request", `{"team":"t","from":"lead","description":"review PR 12"}`, 200))
	agree(t, "request", cliReq, apiReq, same)

	var cliID, apiID struct {
		RequestID string `json:"request_id"`
	}
	_ = json.Unmarshal(cliReq.doc, &cliID)
	_ = json.Unmarshal(apiReq.doc, &apiID)
	cliWon, cliLost, cliRoles := claimants(t, func(name string) (answer, error) {
		return viaCLI(s.Server, "--from", name, "claim", "t", cliID.RequestID)
	})
	apiWon, apiLost, apiRoles := claimants(t, func(name string) (answer, error) {
		return viaAPI(c, "POST", "/v1/claim", fmt.Sprintf(`{"team":"t","from":%q,"request_id":%q}`, name, apiID.RequestID), 200)
	})
	for _, d := range []string{disagree(normalDoc(cliWon, cliRoles), normalDoc(apiWon, apiRoles), same),
		disagree(normalDoc(cliLost, cliRoles), normalDoc(apiLost, apiRoles), same)} {
		if d != "" {
			t.Fatalf("claim: the API and the CLI disagree:\n%s", d)
		}
	}

	agree(t, "requests", must(viaCLI(s.Server, "requests", "t")), must(viaAPI(c, "GET", "/v1/requests?team=t", "", 200)), same)

	agree(t, "status set",
		must(viaCLI(s.Server, "--from", "a1", "--team", "t", "status", "set", "--state", "working", "--working-on", "the cursor", "--next", "x")),
		must(viaAPI(c, "POST", "/v1/status", `{"team":"t","from":"a1","state":"working","working_on":"the cursor","next":["x"]}`, 200)), same)
	agree(t, "board", must(viaCLI(s.Server, "board", "t")), must(viaAPI(c, "GET", "/v1/board?team=t", "", 200)), same)

	// Each front end spawns an agent of its own (c1, p1), and kills it.
	spawned := map[string]string{"c1": "<spawned>", "p1": "<spawned>"}
	agree(t, "spawn", must(viaCLI(s.Server, "spawn", "t", "c1", "--cwd", s.Dir, "--", "sleep", "600")),
		must(viaAPI(c, "POST", "/v1/spawn", fmt.Sprintf(`{"team":"t","agent":"p1","dir":%q,"command":["sleep","600"]}`, s.Dir), 200)), spawned)

	// A shutdown-request to a1 (CLI) and a2 (API), submitted; nobody
	// answers within the wait: exit 7.
	shut := map[string]string{"a1": "<asked>", "a2": "<asked>"}
	cliShut := must(viaCLI(s.Server, "--from", "lead", "shutdown", "t", "a1", "--wait", "--timeout", "300ms"))
	apiShut := must(viaAPI(c, "POST", "/v1/shutdown", `{"team":"t","agent":"a2","from":"lead","wait":true,"timeout":"300ms"}`, 200))
	agree(t, "shutdown", cliShut, apiShut, shut)
	if cliShut.code != 7 {
		t.Fatalf("shutdown --wait with nobody answering: exit %d, want 7:\n%s", cliShut.code, cliShut.doc)
	}

	agree(t, "kill", must(viaCLI(s.Server, "kill", "t", "c1", "--grace", "2s")),
		must(viaAPI(c, "POST", "/v1/kill", `{"team":"t","agent":"p1","grace":"2s"}`, 200)), spawned)
	for _, session := range []string{"agent-t-c1", "agent-t-p1"} {
		if hasSession(t, s, session) {
			t.Errorf("%s is still there after kill", session)
		}
	}

	// The log of a1's inbox: the daemon may be typing what waits there
	// meanwhile, so both front ends read it until they read the same.
	var last string
	deadline := time.Now().Add(20 * time.Second)
	for {
		last = disagree(must(viaCLI(s.Server, "log", "t", "a1")), must(viaAPI(c, "GET", "/v1/log?team=t&agent=a1", "", 200)), same)
		if last == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("log: the API and the CLI disagree:\n%s", last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// normalDoc is a's document with names replaced by their roles, so that
// answers for different agents compare.
func normalDoc(a answer, roles map[string]string) answer {
	var doc any
	if err := json.Unmarshal(a.doc, &doc); err != nil {
		return a
	}
	out, _ := json.Marshal(normal(doc, roles))
	return answer{a.code, out}
}
