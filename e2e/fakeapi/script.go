package fakeapi

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// Scripted tool calls: a prompt that holds a Script's marker is answered
// with a call of the script's first tool; each time that call's result
// comes back (logged as a tool_result Record with the result's text), the
// next tool is called, and after the last one the reply is plain text. It
// works in every mode, for the Anthropic Messages API (Claude Code) and the
// OpenAI Responses API (Codex); the other APIs ignore scripts.
//
// A tool is chosen by name from the tools the request offers, so that a
// tool the agent does not have shows up as a logged error (Record.Error,
// and a reply saying so) instead of a call the agent rejects:
//
//   - Claude Code offers an MCP server's tools as mcp__SERVER__TOOL;
//   - Claude Code 2.1.332 offers them only by name, in a message listing
//     its deferred tools, and loads one when the model calls its ToolSearch
//     tool with {"query": "select:NAME"}: the tool is offered from the next
//     request on. So a tool that is not offered, but named in the request
//     while ToolSearch is offered, is first searched for (a tool_result
//     Record for ToolSearch), then called;
//   - Codex 0.169 offers MCP tools only as "deferred tool namespaces" named
//     in its developer message (mcp__SERVER), callable from JavaScript
//     through its exec tool as tools.mcp__SERVER__TOOL(args): the call is
//     then an exec custom tool call whose script calls the tool and writes
//     its result, or says that the tool is missing.

// Script is one scripted exchange.
type Script struct {
	// Marker selects the prompts the script answers: those whose text
	// contains it. The first script whose marker matches wins.
	Marker string `json:"marker"`
	// Calls are made one after another, each once the previous one's
	// result came back.
	Calls []Call `json:"calls"`
	// Reply is the text answered after the last result (default "done").
	Reply string `json:"reply,omitempty"`
}

// Call is one tool call of a script.
type Call struct {
	// Tool is the tool's name or the end of it, matched as a suffix of the
	// offered names: "agentmsg__send_message" matches Claude Code's
	// mcp__agentmsg__send_message (and not Codex's own send_message).
	Tool string `json:"tool"`
	// Args are the call's arguments. In a string value, $MSG_ID becomes
	// the first message id (MSG_<SENDER>_<8 hex>) of the prompt's text.
	Args map[string]any `json:"args,omitempty"`
}

// Record.Kind of a scripted call's result is KindToolResult; its
// Record.Tool names the tool and Record.Result holds the result's text.

// messageID matches agentmsg's message ids.
var messageID = regexp.MustCompile(`MSG_[A-Z0-9_]+_[0-9a-f]{8}`)

// pending is a scripted call in flight: the script and the call's index.
type pending struct {
	script Script
	call   int
	msgID  string // the prompt's message id, for $MSG_ID
	tool   string // the name called
	// search is true for a ToolSearch call made to load the script's
	// call: once its result is back, that call is made, not the next.
	search bool
}

// toolSearch is Claude Code's tool that loads a deferred tool.
const toolSearch = "ToolSearch"

// scriptFor returns the first script whose marker text holds.
func scriptFor(scripts []Script, text string) (Script, bool) {
	for _, sc := range scripts {
		if sc.Marker != "" && len(sc.Calls) > 0 && strings.Contains(text, sc.Marker) {
			return sc, true
		}
	}
	return Script{}, false
}

// args is the call's arguments with $MSG_ID replaced.
func (c Call) args(msgID string) map[string]any {
	out := make(map[string]any, len(c.Args))
	for k, v := range c.Args {
		if s, ok := v.(string); ok {
			v = strings.ReplaceAll(s, "$MSG_ID", msgID)
		}
		out[k] = v
	}
	return out
}

func (sc Script) finalReply() string {
	if sc.Reply == "" {
		return "done"
	}
	return sc.Reply
}

// remember notes a call in flight under the id the agent will answer with.
func (s *Server) remember(id string, p pending) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inFlight == nil {
		s.inFlight = map[string]pending{}
	}
	s.inFlight[id] = p
}

// takePending returns and forgets the call in flight with id.
func (s *Server) takePending(id string) (pending, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.inFlight[id]
	delete(s.inFlight, id)
	return p, ok
}

// matchTool finds the offered name that ends with want; an error lists
// what is offered.
func matchTool(names []string, want string) (string, error) {
	for _, n := range names {
		if n == want {
			return n, nil
		}
	}
	for _, n := range names {
		if strings.HasSuffix(n, want) {
			return n, nil
		}
	}
	sorted := append([]string(nil), names...)
	sort.Strings(sorted)
	return "", fmt.Errorf("no tool matching %q among the %d offered: %s", want, len(names), strings.Join(sorted, ", "))
}

// deferredName finds a name ending with want in a request's body, in any
// of its strings (Claude Code names its deferred tools in a message, not
// among the tools), or "".
func deferredName(body []byte, want string) string {
	re := regexp.MustCompile(`([A-Za-z0-9_-]*` + regexp.QuoteMeta(want) + `)(?:[^A-Za-z0-9_-]|$)`)
	var v any
	_ = json.Unmarshal(body, &v)
	var find func(v any) string
	find = func(v any) string {
		switch v := v.(type) {
		case string:
			if m := re.FindStringSubmatch(v); m != nil {
				return m[1]
			}
		case []any:
			for _, e := range v {
				if n := find(e); n != "" {
					return n
				}
			}
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(v)) { // the same answer every time
				if n := find(v[k]); n != "" {
					return n
				}
			}
		}
		return ""
	}
	return find(v)
}

// resultText is the text of a tool result's content: a string, or a list
// of blocks or parts with text (a ToolSearch's tool_reference blocks read
// "tool_reference NAME").
func resultText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		ToolName string `json:"tool_name"`
	}
	if json.Unmarshal(raw, &parts) == nil {
		var out []string
		for _, p := range parts {
			switch {
			case p.Text != "":
				out = append(out, p.Text)
			case p.Type == "tool_reference":
				out = append(out, "tool_reference "+p.ToolName)
			}
		}
		return strings.Join(out, "\n")
	}
	return string(raw)
}

// deferredNamespaces reads Codex's "Deferred tool namespaces:" list (lines
// "- NAME" or "- NAME: description") from the request body's text.
func deferredNamespaces(texts []string) []string {
	var out []string
	for _, t := range texts {
		_, rest, ok := strings.Cut(t, "Deferred tool namespaces:")
		if !ok {
			continue
		}
		for _, line := range strings.Split(rest, "\n") {
			line = strings.TrimSpace(line)
			if line == "" {
				continue
			}
			if !strings.HasPrefix(line, "- ") {
				break
			}
			name, _, _ := strings.Cut(strings.TrimPrefix(line, "- "), ":")
			out = append(out, strings.TrimSpace(name))
		}
	}
	return out
}

// execSource is the JavaScript that Codex's exec tool runs to call the
// nested tool name with args and write its result (or say it is missing).
func execSource(name string, args map[string]any) string {
	a, _ := json.Marshal(args)
	n, _ := json.Marshal(name)
	return fmt.Sprintf(`const name = %s;
const f = tools[name];
if (typeof f !== "function") {
  text("fakeapi: no tool " + name + "; ALL_TOOLS: " + ALL_TOOLS.map((t) => t.name).join(", "));
} else {
  const r = await f(%s);
  text(typeof r === "string" ? r : JSON.stringify(r));
}
`, n, a)
}

// ---- Messages (Claude Code) ----

// scriptMessages answers a request that returns a scripted call's result,
// or a prompt that holds a script's marker, and logs it; false when
// scripts have nothing to do with the request.
func (s *Server) scriptMessages(w http.ResponseWriter, r *http.Request, req request, rec Record, c Control) bool {
	text, _ := userText(req.Messages)
	var (
		p     pending
		found bool
		res   string
	)
	if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == "user" {
		for _, b := range blocks(req.Messages[n-1].Content) {
			if b.Type != "tool_result" {
				continue
			}
			if q, ok := s.takePending(b.ToolUseID); ok {
				p, found, res = q, true, resultText(b.Content)
				if b.IsError {
					res = "error: " + res
				}
			}
		}
	}
	var names []string
	for _, t := range req.Tools {
		names = append(names, t.Name)
	}
	var logs []Record
	var sc Script
	var msgID string
	next := 0
	switch {
	case found:
		tr := rec
		tr.Kind, tr.Text, tr.Tool, tr.Result = KindToolResult, "", p.tool, res
		logs = append(logs, tr)
		if text != "" {
			// A prompt that came with the result (queued while the call ran).
			pr := rec
			pr.Kind = KindPrompt
			logs = append(logs, pr)
		}
		sc, msgID, next = p.script, p.msgID, p.call+1
		if p.search {
			next = p.call
		}
	case rec.Kind == KindPrompt:
		var ok bool
		if sc, ok = scriptFor(c.Scripts, text); !ok {
			return false
		}
		msgID = messageID.FindString(text)
		logs = append(logs, rec)
	default:
		return false
	}
	rep := reply{text: sc.finalReply()}
	answer := rep.text
	var callErr string
	if next < len(sc.Calls) {
		call := pending{script: sc, call: next, msgID: msgID}
		// One search per call: a tool still missing after it is an error.
		searched := found && p.search
		var err error
		if rep, err = s.messagesCall(req, names, call, searched); err != nil {
			callErr = err.Error()
			rep = reply{text: "fakeapi: " + callErr}
			answer = rep.text
		} else {
			in, _ := json.Marshal(rep.toolInput)
			answer = "tool_use " + rep.toolName + ": " + string(in)
		}
	}
	for _, l := range logs {
		l.Reply = answer
		if l.Kind == KindPrompt || l.Kind == KindToolResult {
			l.Error = callErr
		}
		s.log(l)
	}
	s.answerMessages(w, r, req, rep)
	return true
}

// messagesCall is the tool_use that makes call p (its tool offered under
// one of names), or the ToolSearch call that loads it, and remembers it.
func (s *Server) messagesCall(req request, names []string, p pending, searched bool) (reply, error) {
	want := p.script.Calls[p.call]
	name, err := matchTool(names, want.Tool)
	input := want.args(p.msgID)
	if err != nil {
		deferred := deferredName(req.body, want.Tool)
		if searched || deferred == "" || !slices.Contains(names, toolSearch) {
			return reply{}, err
		}
		name, p.search = toolSearch, true
		input = map[string]any{"query": "select:" + deferred, "max_results": 5}
	}
	p.tool = name
	rep := reply{toolName: name, toolInput: input, toolID: s.newID("toolu")}
	s.remember(rep.toolID, p)
	return rep, nil
}

// ---- Responses (Codex) ----

// scriptResponses works out the answer to a request that returns a
// scripted call's result, or a prompt that holds a script's marker, and
// logs it: the call's output item, or (item nil) the final text. handled
// is false when scripts have nothing to do with the request.
func (s *Server) scriptResponses(req responsesRequest, tools []oaTool, rec Record, c Control, itemID, callID string) (item map[string]any, final string, handled bool) {
	var items []responsesItem
	_ = json.Unmarshal(req.Input, &items)
	var (
		p     pending
		found bool
		res   string
		after = -1 // the index of the result's item
	)
	for i, it := range items {
		if !strings.HasSuffix(it.Type, "_call_output") {
			continue
		}
		if q, ok := s.takePending(it.CallID); ok {
			p, found, res, after = q, true, resultText(it.Output), i
		}
	}
	var logs []Record
	var sc Script
	var msgID string
	next := 0
	switch {
	case found:
		tr := rec
		tr.Kind, tr.Text, tr.Tool, tr.Result = KindToolResult, "", p.tool, res
		logs = append(logs, tr)
		// A prompt that came after the result (sent while the call ran).
		var texts []string
		for _, it := range items[after+1:] {
			if it.Role == "user" && (it.Type == "" || it.Type == "message") {
				if t := contentText(it.Content); !isCodexContext(t) {
					texts = append(texts, t)
				}
			}
		}
		if len(texts) > 0 {
			pr := rec
			pr.Kind, pr.Text = KindPrompt, strings.Join(texts, "\n")
			logs = append(logs, pr)
		}
		sc, msgID, next = p.script, p.msgID, p.call+1
	case rec.Kind == KindPrompt:
		var ok bool
		if sc, ok = scriptFor(c.Scripts, rec.Text); !ok {
			return nil, "", false
		}
		msgID = messageID.FindString(rec.Text)
		logs = append(logs, rec)
	default:
		return nil, "", false
	}
	final = sc.finalReply()
	answer := final
	var callErr string
	if next < len(sc.Calls) {
		call := sc.Calls[next]
		args := call.args(msgID)
		a, _ := json.Marshal(args)
		var direct []string
		for _, t := range tools {
			n, _ := t.name()
			direct = append(direct, n)
		}
		name, err := matchTool(direct, call.Tool)
		switch {
		case err == nil:
			item = map[string]any{"type": "function_call", "id": itemID, "call_id": callID, "name": name,
				"arguments": string(a), "status": "completed"}
			answer = "tool_use " + name + ": " + string(a)
		default:
			name, err = deferredTool(items, direct, call.Tool)
			if err != nil {
				callErr = err.Error()
				final = "fakeapi: " + callErr
				answer = final
				break
			}
			src := execSource(name, args)
			item = map[string]any{"type": "custom_tool_call", "id": itemID, "call_id": callID, "name": "exec",
				"input": src, "status": "completed"}
			answer = "tool_use exec " + name + ": " + string(a)
		}
		if item != nil {
			s.remember(callID, pending{script: sc, call: next, msgID: msgID, tool: name})
		}
	}
	for _, l := range logs {
		l.Reply, l.Error = answer, callErr
		s.log(l)
	}
	return item, final, true
}

// deferredTool finds want among Codex's deferred tool namespaces (an MCP
// server mcp__agentmsg holds mcp__agentmsg__TOOL), reachable through its
// exec tool; direct are the tools offered directly, for the error.
func deferredTool(items []responsesItem, direct []string, want string) (string, error) {
	var texts []string
	for _, it := range items {
		if it.Type == "" || it.Type == "message" {
			texts = append(texts, contentText(it.Content))
		}
	}
	namespaces := deferredNamespaces(texts)
	base := want
	if i := strings.LastIndex(want, "__"); i >= 0 {
		base = want[i+2:]
	}
	if slices.Contains(direct, "exec") {
		for _, ns := range namespaces {
			if name := ns + "__" + base; strings.HasSuffix(name, want) {
				return name, nil
			}
		}
	}
	_, err := matchTool(direct, want)
	return "", fmt.Errorf("%w; deferred namespaces (through exec): %s", err, strings.Join(namespaces, ", "))
}
