package fakeapi

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// event is one server-sent event.
type event struct {
	Name string
	Data map[string]any
}

func newServer(t *testing.T, cfg Config) (*Server, *httptest.Server) {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(func() {
		hs.Close()
		_ = s.Close()
	})
	return s, hs
}

// mainLoopBody is a request the way Claude Code's main loop sends one: many
// tools (Bash among them) and a user message with system reminders.
func mainLoopBody(text string) string {
	b, _ := json.Marshal(map[string]any{
		"model": "claude-opus-4-8", "max_tokens": 64000, "stream": true,
		"system": []any{map[string]any{"type": "text", "text": "You are Claude Code"}},
		"tools":  []any{map[string]any{"name": "Bash"}, map[string]any{"name": "Read"}},
		"messages": []any{map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "text", "text": "<system-reminder>\nstuff\n</system-reminder>"},
			map[string]any{"type": "text", "text": text},
		}}},
	})
	return string(b)
}

func toolResultBody() string {
	b, _ := json.Marshal(map[string]any{
		"model": "claude-opus-4-8", "max_tokens": 64000, "stream": true,
		"tools": []any{map[string]any{"name": "Bash"}},
		"messages": []any{
			map[string]any{"role": "user", "content": "MSG: run"},
			map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": map[string]any{}}}},
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "toolu_1", "content": "done"}}},
		},
	})
	return string(b)
}

func titleBody(text string) string {
	b, _ := json.Marshal(map[string]any{
		"model": "claude-haiku-4-5-20251001", "max_tokens": 32000, "stream": true,
		"system":   "You are Claude Code.\nGenerate a concise, sentence-case title (3-7 words)",
		"messages": []any{map[string]any{"role": "user", "content": "<session>\n" + text + "\n</session>"}},
	})
	return string(b)
}

func post(t *testing.T, url, body string) *http.Response {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func readEvents(t *testing.T, resp *http.Response) []event {
	t.Helper()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type = %q, want text/event-stream", ct)
	}
	var evs []event
	var name string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var d map[string]any
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &d); err != nil {
				t.Fatalf("bad data line %q: %v", line, err)
			}
			if d["type"] != name {
				t.Fatalf("data type %v under event %q", d["type"], name)
			}
			evs = append(evs, event{name, d})
		}
	}
	return evs
}

func names(evs []event) string {
	var n []string
	for _, e := range evs {
		n = append(n, e.Name)
	}
	return strings.Join(n, ",")
}

// replyText joins the text deltas.
func replyText(evs []event) string {
	var b strings.Builder
	for _, e := range evs {
		if e.Name == "content_block_delta" {
			d := e.Data["delta"].(map[string]any)
			if d["type"] == "text_delta" {
				b.WriteString(d["text"].(string))
			}
		}
	}
	return b.String()
}

func TestInstantStreamsOK(t *testing.T) {
	t.Parallel()
	log := filepath.Join(t.TempDir(), "api.jsonl")
	s, hs := newServer(t, Config{LogPath: log})
	evs := readEvents(t, post(t, hs.URL+"/v1/messages?beta=true", mainLoopBody("MSG_1: hello")))
	want := "message_start,content_block_start,content_block_delta,content_block_stop,message_delta,message_stop"
	if got := names(evs); got != want {
		t.Fatalf("events = %s\nwant     %s", got, want)
	}
	if got := replyText(evs); got != "ok" {
		t.Errorf("reply = %q, want ok", got)
	}
	md := evs[4].Data["delta"].(map[string]any)
	if md["stop_reason"] != "end_turn" {
		t.Errorf("stop_reason = %v", md["stop_reason"])
	}
	if got := s.Prompts(); len(got) != 1 || got[0] != "MSG_1: hello" {
		t.Errorf("Prompts() = %q", got)
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("log %q: %v", b, err)
	}
	if r.Kind != KindPrompt || r.Text != "MSG_1: hello" || r.Model != "claude-opus-4-8" || r.Path != "/v1/messages" || r.Tools != 2 {
		t.Errorf("logged %+v", r)
	}
}

func TestInternalCallsAreNotPrompts(t *testing.T) {
	t.Parallel()
	s, hs := newServer(t, Config{Control: Control{Mode: ModeBash}})
	evs := readEvents(t, post(t, hs.URL+"/v1/messages", titleBody("MSG_2")))
	if got := replyText(evs); !strings.Contains(got, `"title"`) {
		t.Errorf("title reply = %q, want JSON with a title", got)
	}
	recs := s.Records()
	if len(recs) != 1 || recs[0].Kind != KindInternal || !strings.Contains(recs[0].System, "title") {
		t.Errorf("records = %+v", recs)
	}
	if p := s.Prompts(); len(p) != 0 {
		t.Errorf("Prompts() = %q, want none", p)
	}
}

func TestNonStreaming(t *testing.T) {
	t.Parallel()
	_, hs := newServer(t, Config{})
	body := strings.Replace(mainLoopBody("x"), `"stream":true`, `"stream":false`, 1)
	resp := post(t, hs.URL+"/v1/messages", body)
	var m struct {
		Type    string `json:"type"`
		Content []struct {
			Type, Text string
		} `json:"content"`
		StopReason string `json:"stop_reason"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatal(err)
	}
	if m.Type != "message" || len(m.Content) != 1 || m.Content[0].Text != "ok" || m.StopReason != "end_turn" {
		t.Errorf("message = %+v", m)
	}
}

func TestBashModeToolUseThenText(t *testing.T) {
	t.Parallel()
	_, hs := newServer(t, Config{Control: Control{Mode: ModeBash, BashCommand: "touch /tmp/x/ran"}})
	evs := readEvents(t, post(t, hs.URL+"/v1/messages", mainLoopBody("MSG_3: go")))
	cb := evs[1].Data["content_block"].(map[string]any)
	if cb["type"] != "tool_use" || cb["name"] != "Bash" || !strings.HasPrefix(cb["id"].(string), "toolu_") {
		t.Fatalf("content_block = %v", cb)
	}
	d := evs[2].Data["delta"].(map[string]any)
	if d["type"] != "input_json_delta" {
		t.Fatalf("delta = %v", d)
	}
	var in map[string]string
	if err := json.Unmarshal([]byte(d["partial_json"].(string)), &in); err != nil || in["command"] != "touch /tmp/x/ran" {
		t.Fatalf("tool input %v (%v)", d["partial_json"], err)
	}
	if sr := evs[4].Data["delta"].(map[string]any)["stop_reason"]; sr != "tool_use" {
		t.Errorf("stop_reason = %v, want tool_use", sr)
	}
	// The tool result is answered with text, still in bash mode.
	evs = readEvents(t, post(t, hs.URL+"/v1/messages", toolResultBody()))
	if got := replyText(evs); got == "" {
		t.Error("no text after the tool result")
	}
}

func TestSlowModeTakesItsTime(t *testing.T) {
	t.Parallel()
	s, hs := newServer(t, Config{})
	if err := s.Set(Control{Mode: ModeSlow, SlowSeconds: 0.3, Reply: "a slow reply"}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	evs := readEvents(t, post(t, hs.URL+"/v1/messages", mainLoopBody("MSG_4")))
	if el := time.Since(start); el < 250*time.Millisecond {
		t.Errorf("slow reply took %v, want about 300ms", el)
	}
	if got := replyText(evs); got != "a slow reply" {
		t.Errorf("reply = %q", got)
	}
}

func TestSlowStreamStopsWhenClientLeaves(t *testing.T) {
	t.Parallel()
	s, hs := newServer(t, Config{Control: Control{Mode: ModeSlow, SlowSeconds: 30}})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, hs.URL+"/v1/messages", strings.NewReader(mainLoopBody("MSG_5")))
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		_, err = bufio.NewReader(resp.Body).ReadString(0) // until the cut
		resp.Body.Close()
	}
	if err == nil {
		t.Fatal("want the request cut by its deadline")
	}
	if time.Since(start) > 5*time.Second {
		t.Error("took too long")
	}
	if p := s.Prompts(); len(p) != 1 {
		t.Errorf("Prompts() = %q", p)
	}
}

func TestControlEndpoint(t *testing.T) {
	t.Parallel()
	s, hs := newServer(t, Config{})
	resp := post(t, hs.URL+"/_control", `{"mode":"slow","slow_seconds":7}`)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if c := s.Current(); c.Mode != ModeSlow || c.SlowSeconds != 7 || c.Reply != DefaultReply {
		t.Errorf("Current() = %+v", c)
	}
	if resp := post(t, hs.URL+"/_control", "bash"); resp.StatusCode != http.StatusOK || s.Current().Mode != ModeBash {
		t.Errorf("bare mode name: status %d, mode %s", resp.StatusCode, s.Current().Mode)
	}
	if resp := post(t, hs.URL+"/_control", `{"mode":"fast"}`); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("unknown mode: status %d, want 400", resp.StatusCode)
	}
	if s.Current().Mode != ModeBash {
		t.Errorf("a refused control changed the mode to %s", s.Current().Mode)
	}
	resp, err := http.Get(hs.URL + "/_control")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var c Control
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil || c.Mode != ModeBash {
		t.Errorf("GET /_control = %+v (%v)", c, err)
	}
}

func TestModeFileOverrides(t *testing.T) {
	t.Parallel()
	mf := filepath.Join(t.TempDir(), "mode")
	s, hs := newServer(t, Config{ModeFile: mf})
	readEvents(t, post(t, hs.URL+"/v1/messages", mainLoopBody("a")))
	if err := os.WriteFile(mf, []byte("bash\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	evs := readEvents(t, post(t, hs.URL+"/v1/messages", mainLoopBody("b")))
	if cb := evs[1].Data["content_block"].(map[string]any); cb["type"] != "tool_use" {
		t.Errorf("with mode file bash: content_block %v", cb)
	}
	recs := s.Records()
	if recs[0].Mode != ModeInstant || recs[1].Mode != ModeBash {
		t.Errorf("modes logged: %s, %s", recs[0].Mode, recs[1].Mode)
	}
}

func TestUnknownPathsAreHarmlessAndLogged(t *testing.T) {
	t.Parallel()
	s, hs := newServer(t, Config{})
	req, _ := http.NewRequest(http.MethodHead, hs.URL+"/", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("HEAD / = %d", resp.StatusCode)
	}
	resp = post(t, hs.URL+"/api/whatever?x=1", `{"a":1}`)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("POST unknown = %d", resp.StatusCode)
	}
	recs := s.Records()
	if len(recs) != 2 || recs[0].Method != "HEAD" || recs[1].Path != "/api/whatever" ||
		recs[1].Query != "x=1" || recs[1].Body != `{"a":1}` || recs[1].Kind != KindOther {
		t.Errorf("records = %+v", recs)
	}
}

func TestBadBodyIs400(t *testing.T) {
	t.Parallel()
	s, hs := newServer(t, Config{})
	if resp := post(t, hs.URL+"/v1/messages", "{not json"); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("status %d", resp.StatusCode)
	}
	if r := s.Records(); len(r) != 1 || r[0].Error == "" {
		t.Errorf("records = %+v", r)
	}
}

func TestUserText(t *testing.T) {
	t.Parallel()
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	tests := []struct {
		name     string
		msgs     []message
		want     string
		toolRslt bool
	}{
		{"string content", []message{{"user", raw(`"hi"`)}}, "hi", false},
		{"last user wins", []message{{"user", raw(`"a"`)}, {"assistant", raw(`"b"`)}, {"user", raw(`"c"`)}}, "c", false},
		{"reminders dropped", []message{{"user", raw(`[{"type":"text","text":"<system-reminder>x</system-reminder>"},{"type":"text","text":"MSG"}]`)}}, "MSG", false},
		{"tool result", []message{{"user", raw(`[{"type":"tool_result","tool_use_id":"t","content":"ok"}]`)}}, "", true},
		// Claude Code after a person refused a tool: the refusal, its
		// note, then the person's next prompt, in one user message.
		{"refused tool, then a prompt", []message{{"user", raw(`[{"type":"tool_result","tool_use_id":"t","content":"no","is_error":true},` +
			`{"type":"text","text":"[Request interrupted by user for tool use]"},{"type":"text","text":"MSG_2: next"}]`)}}, "MSG_2: next", true},
		{"none", nil, "", false},
		// Claude Code 2.1.332's note with a ToolSearch result.
		{"tool loaded", []message{{"user", raw(`[{"type":"tool_result","tool_use_id":"t","content":[{"type":"tool_reference","tool_name":"x"}]},` +
			`{"type":"text","text":"Tool loaded."}]`)}}, "", true},
		{"tool loaded, then a prompt", []message{{"user", raw(`[{"type":"tool_result","tool_use_id":"t","content":"x"},` +
			`{"type":"text","text":"Tool loaded.\n[id:abc]"},{"type":"text","text":"MSG_6"}]`)}}, "MSG_6", true},
		// Claude Code 2.1.332 sends a folded paste's text wrapped, after
		// the typed text.
		{"folded paste", []message{{"user", raw(`"\n\n<pasted_content id=\"5293\">\nMSG_3: long\nline 2\n</pasted_content id=\"5293\">\n"`)}}, "MSG_3: long\nline 2", false},
		{"typed text, then a folded paste", []message{{"user", raw(`"a draft\n\n<pasted_content id=\"1\">\nMSG_4\nx\n</pasted_content id=\"1\">\n"`)}}, "a draftMSG_4\nx", false},
		{"unclosed wrapper left as it is", []message{{"user", raw(`"<pasted_content id=\"1\">\nMSG_5"`)}}, "<pasted_content id=\"1\">\nMSG_5", false},
	}
	for _, tt := range tests {
		got, tr := userText(tt.msgs)
		if got != tt.want || tr != tt.toolRslt {
			t.Errorf("%s: userText = %q, %v; want %q, %v", tt.name, got, tr, tt.want, tt.toolRslt)
		}
	}
}

// A tool result alone continues a turn; with a person's words it is a
// prompt, logged as one.
func TestClassifyToolResultWithPrompt(t *testing.T) {
	t.Parallel()
	var req request
	if err := json.Unmarshal([]byte(`{"tools":[{"name":"Bash"}]}`), &req); err != nil {
		t.Fatal(err)
	}
	if got := classify(req, "", true); got != KindToolResult {
		t.Errorf("a tool result alone: %s", got)
	}
	if got := classify(req, "MSG_2: next", true); got != KindPrompt {
		t.Errorf("a tool result with a prompt: %s", got)
	}
}

func TestStartListensOnLoopback(t *testing.T) {
	t.Parallel()
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if s.URL() != "" {
		t.Errorf("URL before Start = %q", s.URL())
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !strings.HasPrefix(s.URL(), "http://127.0.0.1:") {
		t.Fatalf("URL = %q", s.URL())
	}
	resp, err := http.Post(s.URL()+"/v1/messages", "application/json", strings.NewReader(mainLoopBody("MSG_6")))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if p := s.Prompts(); len(p) != 1 || p[0] != "MSG_6" {
		t.Errorf("Prompts() = %q", p)
	}
}

func TestSplit(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "ok", "héllo wörld, a longer reply"} {
		parts := split(s, 10)
		if strings.Join(parts, "") != s || len(parts) > 10 || len(parts) == 0 {
			t.Errorf("split(%q) = %q", s, parts)
		}
	}
}
