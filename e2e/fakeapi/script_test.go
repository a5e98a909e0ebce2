package fakeapi

import (
	"encoding/json"
	"strings"
	"testing"
)

// agentmsgScripts: a marker that sends a reply to the prompt's message and
// then checks the inbox.
var agentmsgScripts = []Script{{
	Marker: "PING-7",
	Calls: []Call{
		{Tool: "agentmsg__send_message", Args: map[string]any{"to": "ana", "content": "PONG-7", "reply_to": "$MSG_ID"}},
		{Tool: "agentmsg__check_messages"},
	},
	Reply: "all done",
}}

// claudeBody is a main-loop request offering Bash, Codex-like decoys and the
// agentmsg MCP tools, with messages msgs.
func claudeBody(msgs ...any) string {
	return mustJSON(map[string]any{
		"model": "claude-opus-4-8", "max_tokens": 64000, "stream": true,
		"tools": []any{map[string]any{"name": "Bash"}, map[string]any{"name": "send_message"},
			map[string]any{"name": "mcp__agentmsg__send_message"}, map[string]any{"name": "mcp__agentmsg__check_messages"}},
		"messages": msgs,
	})
}

func userMsg(content any) map[string]any { return map[string]any{"role": "user", "content": content} }

// toolUse reads the streamed tool_use: name, id and input.
func toolUse(t *testing.T, evs []event) (name, id string, input map[string]any) {
	t.Helper()
	var js string
	for _, e := range evs {
		switch e.Name {
		case "content_block_start":
			b := e.Data["content_block"].(map[string]any)
			if b["type"] == "tool_use" {
				name, id = b["name"].(string), b["id"].(string)
			}
		case "content_block_delta":
			if d := e.Data["delta"].(map[string]any); d["type"] == "input_json_delta" {
				js += d["partial_json"].(string)
			}
		}
	}
	if name != "" {
		if err := json.Unmarshal([]byte(js), &input); err != nil {
			t.Fatalf("tool input %q: %v", js, err)
		}
	}
	return name, id, input
}

func TestScriptMessagesCallsToolsInTurnAndLogsResults(t *testing.T) {
	t.Parallel()
	s, hs := newServer(t, Config{Control: Control{Scripts: agentmsgScripts}})
	prompt := userMsg([]any{map[string]any{"type": "text", "text": "<system-reminder>x</system-reminder>"},
		map[string]any{"type": "text", "text": "MSG_BOB_0123abcd: PING-7 from bob"}})
	name, id, in := toolUse(t, readEvents(t, post(t, hs.URL+"/v1/messages", claudeBody(prompt))))
	if name != "mcp__agentmsg__send_message" || in["to"] != "ana" || in["reply_to"] != "MSG_BOB_0123abcd" {
		t.Fatalf("first call %s %v", name, in)
	}
	use1 := map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": id, "name": name, "input": in}}}
	res1 := userMsg([]any{map[string]any{"type": "tool_result", "tool_use_id": id,
		"content": []any{map[string]any{"type": "text", "text": `{"delivered":true}`}}}})
	name2, id2, _ := toolUse(t, readEvents(t, post(t, hs.URL+"/v1/messages", claudeBody(prompt, use1, res1))))
	if name2 != "mcp__agentmsg__check_messages" {
		t.Fatalf("second call %q", name2)
	}
	// The second result comes with a prompt queued meanwhile.
	use2 := map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": id2, "name": name2, "input": map[string]any{}}}}
	res2 := userMsg([]any{map[string]any{"type": "tool_result", "tool_use_id": id2, "content": "PONG-7 arrived"},
		map[string]any{"type": "text", "text": "queued meanwhile"}})
	evs := readEvents(t, post(t, hs.URL+"/v1/messages", claudeBody(prompt, use1, res1, use2, res2)))
	if got := replyText(evs); got != "all done" {
		t.Errorf("final reply %q", got)
	}
	recs := s.Records()
	if kinds := kindsOf(recs); kinds != "prompt:,tool_result:mcp__agentmsg__send_message,tool_result:mcp__agentmsg__check_messages,prompt:" {
		t.Fatalf("records %v", kinds)
	}
	if recs[1].Result != `{"delivered":true}` || recs[2].Result != "PONG-7 arrived" || recs[3].Text != "queued meanwhile" {
		t.Errorf("results %q %q, prompt %q", recs[1].Result, recs[2].Result, recs[3].Text)
	}
	if !strings.HasPrefix(recs[0].Reply, "tool_use mcp__agentmsg__send_message: ") || recs[2].Reply != "all done" {
		t.Errorf("replies %q %q", recs[0].Reply, recs[2].Reply)
	}
	// A result that comes back twice (or one never asked for) is not a
	// scripted result any more.
	readEvents(t, post(t, hs.URL+"/v1/messages", claudeBody(prompt, use1, res1)))
	if r := s.Records(); r[len(r)-1].Kind != KindToolResult || r[len(r)-1].Tool != "" || r[len(r)-1].Reply != "done" {
		t.Errorf("replayed result: %+v", r[len(r)-1])
	}
}

func TestScriptMissingToolIsALoggedError(t *testing.T) {
	t.Parallel()
	s, hs := newServer(t, Config{Control: Control{Scripts: []Script{{Marker: "go", Calls: []Call{{Tool: "agentmsg__wait_for_message"}}}}}})
	evs := readEvents(t, post(t, hs.URL+"/v1/messages", claudeBody(userMsg("go now"))))
	if got := replyText(evs); !strings.Contains(got, `no tool matching "agentmsg__wait_for_message"`) {
		t.Errorf("reply %q", got)
	}
	r := s.Records()
	if len(r) != 1 || r[0].Kind != KindPrompt || !strings.Contains(r[0].Error, "mcp__agentmsg__send_message") {
		t.Errorf("records %+v", r)
	}
	// A prompt without a marker is answered as before.
	if got := replyText(readEvents(t, post(t, hs.URL+"/v1/messages", claudeBody(userMsg("hello"))))); got != DefaultReply {
		t.Errorf("plain prompt answered %q", got)
	}
}

// claudeDeferredBody is a Claude Code 2.1.332 main-loop request: the MCP
// tools are named in a system message after the first prompt, not offered,
// until ToolSearch loads them; loaded are those tools offered as well
// (defer_loading true).
func claudeDeferredBody(loaded []string, prompt any, msgs ...any) string {
	tools := []any{map[string]any{"name": "Bash"}, map[string]any{"name": "DeferredToolPlaceholder", "defer_loading": true},
		map[string]any{"name": "ToolSearch"}}
	for _, n := range loaded {
		tools = append(tools, map[string]any{"name": n, "defer_loading": true})
	}
	listing := map[string]any{"role": "system", "content": []any{map[string]any{"type": "text", "text": "# Environment\n...\n" +
		"The following deferred tools are now available via ToolSearch. Their schemas are NOT loaded — calling them directly will fail " +
		"with InputValidationError. Use ToolSearch with query \"select:<name>[,<name>...]\" to load tool schemas before calling them:\n" +
		"CronCreate\nmcp__agentmsg__check_messages\nmcp__agentmsg__send_message\n"}}}
	return mustJSON(map[string]any{
		"model": "claude-opus-5-5", "max_tokens": 64000, "stream": true, "tools": tools,
		"messages": append([]any{prompt, listing}, msgs...),
	})
}

// toolTurn is the assistant's tool_use and the user's tool_result holding
// content.
func toolTurn(name, id string, input map[string]any, content any) []any {
	return []any{
		map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": id, "name": name, "input": input}}},
		userMsg([]any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": content}}),
	}
}

func TestScriptMessagesLoadsDeferredToolsThroughToolSearch(t *testing.T) {
	t.Parallel()
	s, hs := newServer(t, Config{Control: Control{Scripts: agentmsgScripts}})
	prompt := userMsg("MSG_BOB_0123abcd: PING-7 from bob")
	ask := func(loaded []string, msgs ...any) (string, string, map[string]any) {
		return toolUse(t, readEvents(t, post(t, hs.URL+"/v1/messages", claudeDeferredBody(loaded, prompt, msgs...))))
	}
	var msgs []any
	name, id, in := ask(nil)
	if name != "ToolSearch" || in["query"] != "select:mcp__agentmsg__send_message" {
		t.Fatalf("first call %s %v", name, in)
	}
	msgs = append(msgs, toolTurn(name, id, in, []any{map[string]any{"type": "tool_reference", "tool_name": "mcp__agentmsg__send_message"}})...)
	loaded := []string{"mcp__agentmsg__send_message"}
	name, id, in = ask(loaded, msgs...)
	if name != "mcp__agentmsg__send_message" || in["reply_to"] != "MSG_BOB_0123abcd" {
		t.Fatalf("call after the search %s %v", name, in)
	}
	msgs = append(msgs, toolTurn(name, id, in, `{"delivered":true}`)...)
	name, id, in = ask(loaded, msgs...)
	if name != "ToolSearch" || in["query"] != "select:mcp__agentmsg__check_messages" {
		t.Fatalf("second search %s %v", name, in)
	}
	// A search that loads nothing is not repeated: the call is an error.
	msgs = append(msgs, toolTurn(name, id, in, "No matching deferred tools found")...)
	evs := readEvents(t, post(t, hs.URL+"/v1/messages", claudeDeferredBody(loaded, prompt, msgs...)))
	if got := replyText(evs); !strings.Contains(got, `no tool matching "agentmsg__check_messages"`) {
		t.Errorf("reply after a vain search %q", got)
	}
	recs := s.Records()
	want := "prompt:,tool_result:ToolSearch,tool_result:mcp__agentmsg__send_message,tool_result:ToolSearch"
	if kinds := kindsOf(recs); kinds != want {
		t.Fatalf("records %v, want %v", kinds, want)
	}
	if recs[1].Result != "tool_reference mcp__agentmsg__send_message" || recs[3].Error == "" {
		t.Errorf("records %+v", recs)
	}
}

// codexMCPBody is a Codex 0.169 prompt: the exec tool in additional_tools
// and the MCP server as a deferred namespace in a developer message.
func codexMCPBody(items ...any) string {
	tools := map[string]any{"type": "additional_tools", "role": "developer", "tools": []any{
		map[string]any{"type": "namespace", "name": "functions", "tools": []any{
			map[string]any{"type": "custom", "name": "exec"},
			map[string]any{"type": "function", "name": "wait"}}},
		map[string]any{"type": "namespace", "name": "collaboration", "tools": []any{
			map[string]any{"type": "function", "name": "send_message"}}},
	}}
	dev := map[string]any{"type": "message", "role": "developer", "content": []any{
		map[string]any{"type": "input_text", "text": "<collaboration_mode>x</collaboration_mode>"},
		map[string]any{"type": "input_text", "text": "<tools>\nDeferred tool namespaces:\n- mcp__agentmsg: agentmsg: messages\n- mcp__codex_tui\n</tools>"}}}
	return codexBody(append([]any{tools, dev}, items...)...)
}

func outputItem(t *testing.T, evs []dataEvent) map[string]any {
	t.Helper()
	for _, e := range evs {
		if e.Name == "response.output_item.done" {
			return decode(t, e.Data)["item"].(map[string]any)
		}
	}
	t.Fatal("no response.output_item.done")
	return nil
}

func TestScriptResponsesCallsDeferredMCPToolsThroughExec(t *testing.T) {
	t.Parallel()
	s, hs := newServer(t, Config{Control: Control{Scripts: agentmsgScripts}})
	prompt := userItem("MSG_ANA_89abcdef: PING-7")
	evs := readSSE(t, post(t, hs.URL+"/v1/responses", codexMCPBody(prompt)))
	item := outputItem(t, evs)
	src, _ := item["input"].(string)
	if item["type"] != "custom_tool_call" || item["name"] != "exec" ||
		!strings.Contains(src, `const name = "mcp__agentmsg__send_message"`) || !strings.Contains(src, `"reply_to":"MSG_ANA_89abcdef"`) {
		t.Fatalf("item %v", item)
	}
	var sawDelta bool
	for _, e := range evs {
		sawDelta = sawDelta || e.Name == "response.custom_tool_call_input.delta"
	}
	if !sawDelta {
		t.Error("no custom_tool_call_input.delta event")
	}
	out := map[string]any{"type": "custom_tool_call_output", "call_id": item["call_id"],
		"output": []any{map[string]any{"type": "input_text", "text": `{"delivered":true}`}}}
	item2 := outputItem(t, readSSE(t, post(t, hs.URL+"/v1/responses", codexMCPBody(prompt, item, out))))
	if !strings.Contains(item2["input"].(string), "mcp__agentmsg__check_messages") {
		t.Fatalf("second item %v", item2)
	}
	// The second result comes with a message sent while the call ran.
	out2 := map[string]any{"type": "custom_tool_call_output", "call_id": item2["call_id"], "output": "inbox: PONG"}
	last := outputItem(t, readSSE(t, post(t, hs.URL+"/v1/responses", codexMCPBody(prompt, item, out, item2, out2, userItem("steered in")))))
	if last["type"] != "message" || !strings.Contains(mustJSON(last), "all done") {
		t.Errorf("last item %v", last)
	}
	recs := s.Records()
	if kinds := kindsOf(recs); kinds != "prompt:,tool_result:mcp__agentmsg__send_message,tool_result:mcp__agentmsg__check_messages,prompt:" {
		t.Fatalf("records %v", kinds)
	}
	if recs[1].Result != `{"delivered":true}` || recs[2].Result != "inbox: PONG" || recs[3].Text != "steered in" {
		t.Errorf("records %+v", recs)
	}
}

func TestScriptResponsesDirectFunctionAndMissingTool(t *testing.T) {
	t.Parallel()
	s, hs := newServer(t, Config{Control: Control{Scripts: []Script{
		{Marker: "direct", Calls: []Call{{Tool: "update_plan", Args: map[string]any{"plan": "x"}}}},
		{Marker: "missing", Calls: []Call{{Tool: "nothere__send_message"}}},
	}}})
	item := outputItem(t, readSSE(t, post(t, hs.URL+"/v1/responses", codexBody(userItem("direct")))))
	if item["type"] != "function_call" || item["name"] != "update_plan" || item["arguments"] != `{"plan":"x"}` {
		t.Errorf("direct item %v", item)
	}
	item = outputItem(t, readSSE(t, post(t, hs.URL+"/v1/responses", codexMCPBody(userItem("missing")))))
	if item["type"] != "message" || !strings.Contains(mustJSON(item), "no tool matching") {
		t.Errorf("missing tool item %v", item)
	}
	if r := s.Records(); len(r) != 2 || !strings.Contains(r[1].Error, "mcp__agentmsg") {
		t.Errorf("records %+v", r)
	}
}

func TestDeferredNamespaces(t *testing.T) {
	got := deferredNamespaces([]string{"a", "<tools>\nDeferred tool namespaces:\n- mcp__agentmsg: agentmsg: x\n- mcp__codex_tui\n</tools>"})
	if strings.Join(got, ",") != "mcp__agentmsg,mcp__codex_tui" {
		t.Errorf("got %q", got)
	}
}

// kindsOf lists the records' kinds and tools: "prompt:,tool_result:NAME".
func kindsOf(recs []Record) string {
	var kinds []string
	for _, r := range recs {
		kinds = append(kinds, r.Kind+":"+r.Tool)
	}
	return strings.Join(kinds, ",")
}
