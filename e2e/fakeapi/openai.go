package fakeapi

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strings"
	"time"
)

// The OpenAI APIs: Responses (Codex) and Chat Completions (Qwen Code and
// other OpenAI-compatible clients). See ../../../shared/FIELD-NOTES.md for
// what Codex sends.

// plan is how to answer one request, whatever the API: a text (streamed
// over a while in slow mode) or a call of the agent's shell tool.
type plan struct {
	text    string
	command string // bash mode: the command the tool call asks to run
	over    time.Duration
}

func (p plan) tool() bool { return p.command != "" }

// planFor decides the answer to a request of kind under c; internal is the
// text an internal call gets.
func planFor(kind string, c Control, internal string) plan {
	switch {
	case kind == KindInternal:
		return plan{text: internal}
	case kind == KindPrompt && c.Mode == ModeBash:
		return plan{command: c.BashCommand}
	case kind == KindPrompt && c.Mode == ModeSlow:
		return plan{text: c.Reply, over: time.Duration(c.SlowSeconds * float64(time.Second))}
	case kind == KindToolResult:
		return plan{text: "done"}
	}
	return plan{text: c.Reply}
}

func (p plan) logged(tool string) string {
	if p.tool() {
		return "tool_use " + tool + ": " + p.command
	}
	return p.text
}

// internalJSON answers the JSON that agents' internal calls ask for (a
// title, Gemini's routing classifier, the next-speaker check), judged by
// the names the request's body mentions.
func internalJSON(body []byte) string {
	b := string(body)
	switch {
	case strings.Contains(b, "complexity_score"):
		return `{"complexity_score": 10, "complexity_reasoning": "a short request"}`
	case strings.Contains(b, "next_speaker"):
		return `{"next_speaker": "user", "reasoning": "the model answered"}`
	case strings.Contains(b, "thread_title") || strings.Contains(strings.ToLower(b), "title"):
		return `{"title":"ack"}`
	}
	return DefaultReply
}

// sse writes one server-sent event; event may be empty (data only).
type sse struct {
	w  http.ResponseWriter
	fl http.Flusher
}

func newSSE(w http.ResponseWriter) sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("Connection", "keep-alive")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	return sse{w, fl}
}

func (e sse) send(event string, data any) {
	b, _ := json.Marshal(data)
	if event != "" {
		fmt.Fprintf(e.w, "event: %s\n", event)
	}
	fmt.Fprintf(e.w, "data: %s\n\n", b)
	if e.fl != nil {
		e.fl.Flush()
	}
}

func (e sse) raw(line string) {
	fmt.Fprintf(e.w, "data: %s\n\n", line)
	if e.fl != nil {
		e.fl.Flush()
	}
}

// chunks cuts p's text for streaming and calls each with every piece after
// its share of p.over; false when the client went away.
func (p plan) chunks(r *http.Request, each func(string)) bool {
	parts := []string{p.text}
	if p.over > 0 {
		parts = split(p.text, 10)
	}
	step := p.over / time.Duration(len(parts))
	for _, c := range parts {
		if p.over > 0 {
			t := time.NewTimer(step)
			select {
			case <-r.Context().Done():
				t.Stop()
				return false
			case <-t.C:
			}
		}
		each(c)
	}
	return true
}

// shellArgs builds the arguments of a call of the shell tool named name
// from the tool's JSON schema: an array "command" (Codex's shell), a string
// "command" (shell_command, run_shell_command) or "cmd" (exec_command).
func shellArgs(params json.RawMessage, command string) map[string]any {
	var schema struct {
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
	}
	_ = json.Unmarshal(params, &schema)
	args := map[string]any{}
	if p, ok := schema.Properties["command"]; ok {
		if fmt.Sprint(p.Type) == "array" {
			args["command"] = []string{"bash", "-lc", command}
		} else {
			args["command"] = command
		}
	} else if _, ok := schema.Properties["cmd"]; ok {
		args["cmd"] = command
	} else {
		args["command"] = command
	}
	if _, ok := schema.Properties["description"]; ok {
		args["description"] = "Run the fake API's command"
	}
	// Droid's Execute wants a summary and a risk level; "medium" makes it
	// ask a person before it runs the command.
	if _, ok := schema.Properties["summary"]; ok {
		args["summary"] = "Run the fake API command"
	}
	if _, ok := schema.Properties["riskLevel"]; ok {
		args["riskLevel"], args["riskLevelReason"] = "medium", "It runs a shell command."
	}
	return args
}

// A tool offered in a request: Responses puts name and parameters at the
// top, Chat Completions under "function".
type oaTool struct {
	Type       string          `json:"type"`
	Name       string          `json:"name"`
	Parameters json.RawMessage `json:"parameters"`
	Function   *struct {
		Name       string          `json:"name"`
		Parameters json.RawMessage `json:"parameters"`
	} `json:"function"`
}

func (t oaTool) name() (string, json.RawMessage) {
	if t.Function != nil {
		return t.Function.Name, t.Function.Parameters
	}
	return t.Name, t.Parameters
}

// shellTool picks the shell tool among those offered (the first whose name
// is one of the known shell tools, else one that mentions shell or exec).
func shellTool(tools []oaTool) (string, json.RawMessage) {
	// Execute: Factory's Droid.
	for _, want := range []string{"shell", "shell_command", "exec_command", "run_shell_command", "local_shell", "Execute"} {
		for _, t := range tools {
			if n, p := t.name(); n == want {
				return n, p
			}
		}
	}
	for _, t := range tools {
		if n, p := t.name(); strings.Contains(n, "shell") || strings.Contains(n, "exec") {
			return n, p
		}
	}
	return "shell", nil
}

// ---- Responses ----

type responsesRequest struct {
	Model          string          `json:"model"`
	Stream         bool            `json:"stream"`
	Instructions   string          `json:"instructions"`
	Input          json.RawMessage `json:"input"`
	Tools          []oaTool        `json:"tools"`
	ClientMetadata json.RawMessage `json:"client_metadata"`
}

type responsesItem struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	Tools   []nestedTool    `json:"tools"`   // type additional_tools
	CallID  string          `json:"call_id"` // a *_call_output's
	Output  json.RawMessage `json:"output"`  // a *_call_output's
}

// nestedTool is a tool or a namespace of tools (Codex 0.169 groups them).
type nestedTool struct {
	oaTool
	Tools []nestedTool `json:"tools"`
}

// additionalTools lists the tools offered in "additional_tools" input items
// (Codex 0.169 offers them there, not in the request's tools), flattened.
func additionalTools(input json.RawMessage) []oaTool {
	var items []responsesItem
	_ = json.Unmarshal(input, &items)
	var out []oaTool
	var walk func([]nestedTool)
	walk = func(ts []nestedTool) {
		for _, t := range ts {
			if t.Type == "namespace" {
				walk(t.Tools)
				continue
			}
			out = append(out, t.oaTool)
		}
	}
	for _, it := range items {
		if it.Type == "additional_tools" {
			walk(it.Tools)
		}
	}
	return out
}

// codexContext marks the user messages Codex adds itself (environment,
// instructions), which are not a person's prompt.
var codexContext = []string{"<environment_context>", "<user_instructions>", "# AGENTS.md", "<permissions", "<user_shell_command>"}

// responsesText is the text of the last user message of input (a string,
// or a list of items) and whether the last item returns a tool's output.
func responsesText(input json.RawMessage) (text string, toolResult bool) {
	var s string
	if json.Unmarshal(input, &s) == nil {
		return s, false
	}
	var items []responsesItem
	_ = json.Unmarshal(input, &items)
	if n := len(items); n > 0 && strings.HasSuffix(items[n-1].Type, "_call_output") {
		return "", true
	}
	for i := len(items) - 1; i >= 0; i-- {
		it := items[i]
		if it.Role != "user" || (it.Type != "" && it.Type != "message") {
			continue
		}
		t := contentText(it.Content)
		if isCodexContext(t) {
			continue
		}
		return t, false
	}
	return "", false
}

func isCodexContext(t string) bool {
	t = strings.TrimSpace(t)
	for _, p := range codexContext {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}

// contentText joins the text parts of an OpenAI content: a string, or a list
// of parts with type input_text, output_text or text.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	var out []string
	for _, p := range parts {
		if p.Text != "" || strings.HasSuffix(p.Type, "text") {
			out = append(out, p.Text)
		}
	}
	return strings.Join(out, "\n")
}

func (s *Server) serveResponses(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	rec := Record{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, API: APIResponses}
	var req responsesRequest
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	if err != nil {
		s.badRequest(w, rec, body, err)
		return
	}
	text, toolResult := responsesText(req.Input)
	tools := append(req.Tools, additionalTools(req.Input)...)
	switch {
	// Codex asks for a thread title in a side request of its own; its
	// prompts offer their tools in an "additional_tools" input item.
	case strings.Contains(string(req.ClientMetadata), "thread_title"):
		rec.Kind = KindInternal
	case toolResult:
		rec.Kind = KindToolResult
	default:
		rec.Kind = KindPrompt
	}
	rec.Model, rec.Stream, rec.Text, rec.Tools = req.Model, req.Stream, text, len(tools)
	c := s.effective()
	rec.Mode = c.Mode
	var internal string
	if rec.Kind == KindInternal {
		rec.System = clip(req.Instructions, 200)
		internal = internalJSON(body)
	}
	p := planFor(rec.Kind, c, internal)
	tool, params := shellTool(tools)
	id, itemID, callID := s.newID("resp"), s.newID("msg"), s.newID("call")
	var item map[string]any
	scripted, final, handled := false, "", false
	if rec.Kind != KindInternal {
		item, final, handled = s.scriptResponses(req, tools, rec, c, itemID, callID)
	}
	if handled {
		scripted = item != nil
		if !scripted {
			p = plan{text: final}
		}
	} else {
		rec.Reply = p.logged(tool)
		s.log(rec)
	}
	switch {
	case scripted:
	case p.tool():
		args, _ := json.Marshal(shellArgs(params, p.command))
		item = map[string]any{"type": "function_call", "id": itemID, "call_id": callID, "name": tool,
			"arguments": string(args), "status": "completed"}
	default:
		item = map[string]any{"type": "message", "id": itemID, "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": p.text, "annotations": []any{}}}}
	}
	usage := map[string]any{"input_tokens": 10, "input_tokens_details": map[string]any{"cached_tokens": 0},
		"output_tokens": 5, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": 15}
	response := func(status string, output []any) map[string]any {
		m := map[string]any{"id": id, "object": "response", "created_at": time.Now().Unix(), "status": status,
			"model": req.Model, "output": output}
		if status == "completed" {
			m["usage"] = usage
		}
		return m
	}
	if !req.Stream {
		writeJSON(w, response("completed", []any{item}))
		return
	}
	ev := newSSE(w)
	seq := 0
	send := func(typ string, data map[string]any) {
		data["type"], data["sequence_number"] = typ, seq
		seq++
		ev.send(typ, data)
	}
	send("response.created", map[string]any{"response": response("in_progress", []any{})})
	send("response.in_progress", map[string]any{"response": response("in_progress", []any{})})
	if scripted || p.tool() {
		// A tool call streams its input: a custom tool's (Codex's exec) as
		// "input", a function's as "arguments".
		field, event := "arguments", "function_call_arguments"
		if item["type"] == "custom_tool_call" {
			field, event = "input", "custom_tool_call_input"
		}
		added := maps.Clone(item)
		added[field], added["status"] = "", "in_progress"
		send("response.output_item.added", map[string]any{"output_index": 0, "item": added})
		send("response."+event+".delta", map[string]any{"item_id": itemID, "output_index": 0, "delta": item[field]})
		send("response."+event+".done", map[string]any{"item_id": itemID, "output_index": 0, field: item[field]})
	} else {
		send("response.output_item.added", map[string]any{"output_index": 0, "item": map[string]any{
			"type": "message", "id": itemID, "role": "assistant", "status": "in_progress", "content": []any{}}})
		part := map[string]any{"type": "output_text", "text": "", "annotations": []any{}}
		send("response.content_part.added", map[string]any{"item_id": itemID, "output_index": 0, "content_index": 0, "part": part})
		if !p.chunks(r, func(c string) {
			send("response.output_text.delta", map[string]any{"item_id": itemID, "output_index": 0, "content_index": 0, "delta": c})
		}) {
			return
		}
		send("response.output_text.done", map[string]any{"item_id": itemID, "output_index": 0, "content_index": 0, "text": p.text})
		part["text"] = p.text
		send("response.content_part.done", map[string]any{"item_id": itemID, "output_index": 0, "content_index": 0, "part": part})
	}
	send("response.output_item.done", map[string]any{"output_index": 0, "item": item})
	send("response.completed", map[string]any{"response": response("completed", []any{item})})
}

// ---- Chat Completions ----

type chatRequest struct {
	Model    string        `json:"model"`
	Stream   bool          `json:"stream"`
	Messages []chatMessage `json:"messages"`
	Tools    []oaTool      `json:"tools"`
}

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// chatText is the text of the last user message, without the
// <system-reminder> parts Qwen Code adds, and whether the last message
// returns a tool's result.
func chatText(msgs []chatMessage) (string, bool) {
	if n := len(msgs); n > 0 && msgs[n-1].Role == "tool" {
		return "", true
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != "user" {
			continue
		}
		var parts []struct {
			Text string `json:"text"`
		}
		if json.Unmarshal(msgs[i].Content, &parts) != nil {
			return contentText(msgs[i].Content), false
		}
		var out []string
		for _, p := range parts {
			if !strings.HasPrefix(strings.TrimSpace(p.Text), "<system-reminder>") {
				out = append(out, p.Text)
			}
		}
		return strings.Join(out, "\n"), false
	}
	return "", false
}

// Qwen Code's side requests made as prompts of the main loop: a suggested
// next prompt after each turn, and (in its auto approval mode) the
// classification of a tool call.
const (
	qwenSuggestion = "[SUGGESTION MODE:"
	qwenClassify   = "## Pending tool call to classify"
)

func qwenSide(text string) bool {
	t := strings.TrimSpace(text)
	return strings.HasPrefix(t, qwenSuggestion) || strings.HasPrefix(t, qwenClassify)
}

// chatSubagent reports a request of one of the agent's own subagents
// (Qwen Code's memory extraction runs after each turn, with tools): its
// system prompt's first sentence says so ("You are now acting as the
// managed memory extraction subagent"; the main prompt mentions subagents
// only further on).
func chatSubagent(msgs []chatMessage) bool {
	for _, m := range msgs {
		if m.Role != "system" {
			continue
		}
		first, _, _ := strings.Cut(contentText(m.Content), "\n")
		if strings.Contains(strings.ToLower(clip(first, 200)), "subagent") {
			return true
		}
	}
	return false
}

func (s *Server) serveChat(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	rec := Record{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, API: APIChat}
	var req chatRequest
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	if err != nil {
		s.badRequest(w, rec, body, err)
		return
	}
	text, toolResult := chatText(req.Messages)
	switch {
	case len(req.Tools) == 0 || chatSubagent(req.Messages) || qwenSide(text):
		rec.Kind = KindInternal // next-speaker checks, summaries, titles, memory subagents, suggestions
	case toolResult:
		rec.Kind = KindToolResult
	default:
		rec.Kind = KindPrompt
	}
	rec.Model, rec.Stream, rec.Text, rec.Tools, rec.Messages = req.Model, req.Stream, text, len(req.Tools), len(req.Messages)
	c := s.effective()
	rec.Mode = c.Mode
	var internal string
	if rec.Kind == KindInternal {
		internal = internalJSON(body)
		if strings.HasPrefix(text, qwenSuggestion) {
			// No suggestion: it would show in the box as if typed.
			internal = ""
		}
	}
	p := planFor(rec.Kind, c, internal)
	tool, params := shellTool(req.Tools)
	rec.Reply = p.logged(tool)
	s.log(rec)

	id := s.newID("chatcmpl")
	created := time.Now().Unix()
	var toolCalls []any
	finish := "stop"
	if p.tool() {
		args, _ := json.Marshal(shellArgs(params, p.command))
		toolCalls = []any{map[string]any{"index": 0, "id": s.newID("call"), "type": "function",
			"function": map[string]any{"name": tool, "arguments": string(args)}}}
		finish = "tool_calls"
	}
	usage := map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
	if !req.Stream {
		msg := map[string]any{"role": "assistant", "content": p.text}
		if toolCalls != nil {
			msg["content"], msg["tool_calls"] = nil, toolCalls
		}
		writeJSON(w, map[string]any{"id": id, "object": "chat.completion", "created": created, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": usage})
		return
	}
	ev := newSSE(w)
	chunk := func(delta map[string]any, finish any, usage any) {
		m := map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
		if usage != nil {
			m["usage"] = usage
		}
		ev.send("", m)
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil, nil)
	if toolCalls != nil {
		chunk(map[string]any{"tool_calls": toolCalls}, nil, nil)
	} else if !p.chunks(r, func(c string) { chunk(map[string]any{"content": c}, nil, nil) }) {
		return
	}
	chunk(map[string]any{}, finish, usage)
	ev.raw("[DONE]")
}

// badRequest logs and refuses a body that does not parse.
func (s *Server) badRequest(w http.ResponseWriter, rec Record, body []byte, err error) {
	rec.Kind, rec.Error, rec.Body = KindOther, err.Error(), clip(string(body), 300)
	s.log(rec)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"type": "invalid_request_error", "code": 400, "status": "INVALID_ARGUMENT", "message": "fakeapi: " + err.Error()}})
}
