package fakeapi

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// dataEvent is one SSE event: its name ("" when data only) and raw data.
type dataEvent struct {
	Name string
	Data string
}

func readSSE(t *testing.T, resp *http.Response) []dataEvent {
	t.Helper()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type = %q, want text/event-stream", ct)
	}
	var evs []dataEvent
	var name string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			evs = append(evs, dataEvent{name, strings.TrimPrefix(line, "data: ")})
			name = ""
		}
	}
	return evs
}

func decode(t *testing.T, data string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(data), &m); err != nil {
		t.Fatalf("bad data %q: %v", data, err)
	}
	return m
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// codexBody is a request the way Codex sends a turn: its own context
// messages, then the person's prompt, with its tools.
func codexBody(items ...any) string {
	input := []any{
		map[string]any{"type": "message", "role": "developer", "content": []any{map[string]any{"type": "input_text", "text": "<permissions instructions>"}}},
		map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": "<environment_context>\n  <cwd>/w</cwd>\n</environment_context>"}}},
	}
	return mustJSON(map[string]any{
		"model": "gpt-6.1-sol", "instructions": "You are Codex", "stream": true,
		"input": append(input, items...),
		"tools": []any{
			map[string]any{"type": "function", "name": "shell", "parameters": map[string]any{"type": "object",
				"properties": map[string]any{"command": map[string]any{"type": "array"}, "workdir": map[string]any{"type": "string"}}}},
			map[string]any{"type": "function", "name": "update_plan"},
		},
	})
}

func userItem(text string) map[string]any {
	return map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": text}}}
}

func TestResponsesStreamsTheEventsCodexReads(t *testing.T) {
	t.Parallel()
	s, hs := newServer(t, Config{})
	evs := readSSE(t, post(t, hs.URL+"/v1/responses", codexBody(userItem("MSG_1: hello\nsecond line"))))
	var got []string
	var text string
	for _, e := range evs {
		m := decode(t, e.Data)
		if m["type"] != e.Name {
			t.Fatalf("data type %v under event %q", m["type"], e.Name)
		}
		got = append(got, e.Name)
		if e.Name == "response.output_text.delta" {
			text += m["delta"].(string)
		}
		if e.Name == "response.completed" {
			resp := m["response"].(map[string]any)
			if resp["id"] == "" || resp["usage"] == nil || resp["status"] != "completed" {
				t.Errorf("completed without id or usage: %v", resp)
			}
		}
	}
	want := "response.created,response.in_progress,response.output_item.added,response.content_part.added," +
		"response.output_text.delta,response.output_text.done,response.content_part.done,response.output_item.done,response.completed"
	if strings.Join(got, ",") != want {
		t.Fatalf("events = %s\nwant     %s", strings.Join(got, ","), want)
	}
	if text != "ok" {
		t.Errorf("text = %q", text)
	}
	recs := s.Records()
	if len(recs) != 1 || recs[0].Kind != KindPrompt || recs[0].API != APIResponses || recs[0].Text != "MSG_1: hello\nsecond line" || recs[0].Model != "gpt-6.1-sol" {
		t.Errorf("records = %+v", recs)
	}
}

func TestResponsesTitleRequestIsInternal(t *testing.T) {
	t.Parallel()
	s, hs := newServer(t, Config{Control: Control{Mode: ModeSlow, SlowSeconds: 30}})
	body := mustJSON(map[string]any{
		"model": "gpt-6.1-sol", "stream": true, "input": []any{userItem("MSG_2: name this")},
		"tools":           []any{map[string]any{"type": "function", "name": "shell"}},
		"client_metadata": map[string]any{"x-codex-turn-metadata": `{"thread_source":"thread_title"}`},
	})
	start := time.Now()
	evs := readSSE(t, post(t, hs.URL+"/v1/responses", body))
	if time.Since(start) > 5*time.Second {
		t.Error("an internal call waited for slow mode")
	}
	var text string
	for _, e := range evs {
		if e.Name == "response.output_text.done" {
			text = decode(t, e.Data)["text"].(string)
		}
	}
	if text != `{"title":"ack"}` {
		t.Errorf("title answer %q", text)
	}
	if p := s.Prompts(); len(p) != 0 {
		t.Errorf("Prompts() = %q, want none", p)
	}
}

func TestResponsesBashModeCallsTheShellTool(t *testing.T) {
	t.Parallel()
	s, hs := newServer(t, Config{Control: Control{Mode: ModeBash, BashCommand: "touch /tmp/x/ran"}})
	evs := readSSE(t, post(t, hs.URL+"/v1/responses", codexBody(userItem("MSG_3: run"))))
	var item map[string]any
	for _, e := range evs {
		if e.Name == "response.output_item.done" {
			item = decode(t, e.Data)["item"].(map[string]any)
		}
	}
	if item["type"] != "function_call" || item["name"] != "shell" || item["call_id"] == "" {
		t.Fatalf("item = %v", item)
	}
	var args struct{ Command []string }
	if err := json.Unmarshal([]byte(item["arguments"].(string)), &args); err != nil ||
		strings.Join(args.Command, " ") != "bash -lc touch /tmp/x/ran" {
		t.Errorf("arguments %v (%v)", item["arguments"], err)
	}
	// The tool's output comes back: plain text, logged as tool_result.
	out := map[string]any{"type": "function_call_output", "call_id": item["call_id"], "output": "done"}
	readSSE(t, post(t, hs.URL+"/v1/responses", codexBody(userItem("MSG_3: run"), item, out)))
	recs := s.Records()
	if len(recs) != 2 || recs[1].Kind != KindToolResult || recs[1].Reply != "done" {
		t.Errorf("records = %+v", recs)
	}
}

// Codex 0.169 offers its tools in an input item, none in "tools", and asks
// for a title with a json_schema text format: only its thread_source tells
// the title request from a prompt.
func TestResponsesCodex0169Shapes(t *testing.T) {
	t.Parallel()
	s, hs := newServer(t, Config{})
	meta := func(src string) map[string]any {
		return map[string]any{"x-codex-turn-metadata": `{"request_kind":"turn","thread_source":"` + src + `"}`}
	}
	tools := map[string]any{"type": "additional_tools", "role": "developer", "tools": []any{
		map[string]any{"type": "namespace", "name": "functions", "tools": []any{
			map[string]any{"type": "custom", "name": "exec"}, map[string]any{"type": "function", "name": "wait"}}}}}
	prompt := mustJSON(map[string]any{"model": "gpt-6.1-sol", "stream": true, "tools": []any{}, "client_metadata": meta("user"),
		"input": []any{tools, userItem("<environment_context>x</environment_context>"), userItem("MSG_7: hi")}})
	title := mustJSON(map[string]any{"model": "gpt-6.1-sol", "stream": true, "tools": []any{}, "client_metadata": meta("thread_title"),
		"text":  map[string]any{"format": map[string]any{"type": "json_schema", "name": "codex_output_schema"}},
		"input": []any{tools, userItem("Generate a concise, single-line task title")}})
	readSSE(t, post(t, hs.URL+"/v1/responses", prompt))
	readSSE(t, post(t, hs.URL+"/v1/responses", title))
	r := s.Records()
	if len(r) != 2 || r[0].Kind != KindPrompt || r[0].Text != "MSG_7: hi" || r[0].Tools != 2 || r[1].Kind != KindInternal {
		t.Errorf("records = %+v", r)
	}
}

func TestResponsesText(t *testing.T) {
	t.Parallel()
	raw := func(v any) json.RawMessage { return json.RawMessage(mustJSON(v)) }
	tests := []struct {
		name  string
		input json.RawMessage
		want  string
		tool  bool
	}{
		{"a string", raw("hi"), "hi", false},
		{"context skipped", raw([]any{userItem("a"), userItem("<environment_context>x</environment_context>")}), "a", false},
		{"last user wins", raw([]any{userItem("a"), map[string]any{"type": "message", "role": "assistant"}, userItem("b")}), "b", false},
		{"tool output", raw([]any{userItem("a"), map[string]any{"type": "function_call_output", "output": "x"}}), "", true},
		{"two parts", raw([]any{map[string]any{"type": "message", "role": "user", "content": []any{
			map[string]any{"type": "input_text", "text": "one"}, map[string]any{"type": "input_text", "text": "two"}}}}), "one\ntwo", false},
	}
	for _, tt := range tests {
		got, tool := responsesText(tt.input)
		if got != tt.want || tool != tt.tool {
			t.Errorf("%s: %q, %v; want %q, %v", tt.name, got, tool, tt.want, tt.tool)
		}
	}
}

func chatBody(stream bool, msgs ...any) string {
	return mustJSON(map[string]any{
		"model": "qwen3-coder-plus", "stream": stream, "messages": msgs,
		"tools": []any{map[string]any{"type": "function", "function": map[string]any{"name": "run_shell_command",
			"parameters": map[string]any{"type": "object", "properties": map[string]any{
				"command": map[string]any{"type": "string"}, "description": map[string]any{"type": "string"}}}}}},
	})
}

func TestChatCompletionsStreamAndLog(t *testing.T) {
	t.Parallel()
	s, hs := newServer(t, Config{})
	if err := s.Set(Control{Mode: ModeSlow, SlowSeconds: 0.2, Reply: "a slow chat reply"}); err != nil {
		t.Fatal(err)
	}
	evs := readSSE(t, post(t, hs.URL+"/v1/chat/completions", chatBody(true,
		map[string]any{"role": "system", "content": "be brief"},
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "MSG_4: hi"}}})))
	if len(evs) < 3 || evs[len(evs)-1].Data != "[DONE]" {
		t.Fatalf("events = %v", evs)
	}
	var text, finish string
	for _, e := range evs[:len(evs)-1] {
		ch := decode(t, e.Data)["choices"].([]any)[0].(map[string]any)
		if c, ok := ch["delta"].(map[string]any)["content"].(string); ok {
			text += c
		}
		if f, ok := ch["finish_reason"].(string); ok {
			finish = f
		}
	}
	if text != "a slow chat reply" || finish != "stop" {
		t.Errorf("text %q, finish %q", text, finish)
	}
	if r := s.Records(); len(r) != 1 || r[0].API != APIChat || r[0].Kind != KindPrompt || r[0].Text != "MSG_4: hi" {
		t.Errorf("records = %+v", r)
	}
}

func TestChatCompletionsToolCallAndInternal(t *testing.T) {
	t.Parallel()
	s, hs := newServer(t, Config{Control: Control{Mode: ModeBash, BashCommand: "touch /tmp/y"}})
	resp := post(t, hs.URL+"/v1/chat/completions", chatBody(false, map[string]any{"role": "user", "content": "MSG_5: run"}))
	var m struct {
		Choices []struct {
			Message struct {
				ToolCalls []struct {
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			}
			FinishReason string `json:"finish_reason"`
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatal(err)
	}
	if len(m.Choices) != 1 || m.Choices[0].FinishReason != "tool_calls" || len(m.Choices[0].Message.ToolCalls) != 1 ||
		m.Choices[0].Message.ToolCalls[0].Function.Name != "run_shell_command" ||
		!strings.Contains(m.Choices[0].Message.ToolCalls[0].Function.Arguments, `"command":"touch /tmp/y"`) {
		t.Errorf("answer %+v", m)
	}
	// No tools: an internal call (a next-speaker check), answered in JSON.
	body := mustJSON(map[string]any{"model": "m", "messages": []any{map[string]any{"role": "user", "content": "who speaks next? next_speaker"}}})
	resp = post(t, hs.URL+"/v1/chat/completions", body)
	var a struct {
		Choices []struct{ Message struct{ Content string } }
	}
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil || !strings.Contains(a.Choices[0].Message.Content, `"next_speaker": "user"`) {
		t.Errorf("internal answer %+v (%v)", a, err)
	}
	if p := s.Prompts(); len(p) != 1 || p[0] != "MSG_5: run" {
		t.Errorf("Prompts() = %q", p)
	}
}

// Qwen Code 0.24: the prompt's message carries <system-reminder> parts
// first, and a memory-extraction subagent (with tools) runs after each turn.
func TestChatQwenShapes(t *testing.T) {
	t.Parallel()
	s, hs := newServer(t, Config{})
	prompt := chatBody(true, map[string]any{"role": "system", "content": "You are Qwen Code, an interactive CLI agent.\n\nUse the agent tool to start a subagent."},
		map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "text", "text": "<system-reminder>\nskills\n</system-reminder>"},
			map[string]any{"type": "text", "text": "MSG_8: hello"}}})
	memory := chatBody(true, map[string]any{"role": "system", "content": "You are now acting as the managed memory extraction subagent"},
		map[string]any{"role": "user", "content": "Managed memory has TWO directories."})
	suggest := chatBody(true, map[string]any{"role": "user", "content": "[SUGGESTION MODE: Suggest what the user might naturally type next.]"})
	readSSE(t, post(t, hs.URL+"/v1/chat/completions", prompt))
	readSSE(t, post(t, hs.URL+"/v1/chat/completions", memory))
	evs := readSSE(t, post(t, hs.URL+"/v1/chat/completions", suggest))
	if p := s.Prompts(); len(p) != 1 || p[0] != "MSG_8: hello" {
		t.Errorf("Prompts() = %q", p)
	}
	// The suggestion is empty, so nothing shows in the box.
	for _, e := range evs[:len(evs)-1] {
		ch := decode(t, e.Data)["choices"].([]any)[0].(map[string]any)
		if c, _ := ch["delta"].(map[string]any)["content"].(string); c != "" {
			t.Errorf("a suggestion %q", c)
		}
	}
}

// Bash mode finds each CLI's shell tool and fills what its schema asks:
// Droid's Execute wants a summary and a risk level besides the command.
func TestShellToolAndArgs(t *testing.T) {
	t.Parallel()
	var tools []oaTool
	if err := json.Unmarshal([]byte(`[{"type":"function","function":{"name":"Read","parameters":{}}},
		{"type":"function","function":{"name":"Execute","parameters":{"properties":{"command":{"type":"string"},
		"summary":{"type":"string"},"riskLevel":{"type":"string"},"riskLevelReason":{"type":"string"}}}}}]`), &tools); err != nil {
		t.Fatal(err)
	}
	name, params := shellTool(tools)
	if name != "Execute" {
		t.Fatalf("shell tool %q", name)
	}
	args := shellArgs(params, "touch /tmp/x")
	if args["command"] != "touch /tmp/x" || args["summary"] == nil || args["riskLevel"] != "medium" || args["riskLevelReason"] == nil {
		t.Errorf("args %v", args)
	}
}
