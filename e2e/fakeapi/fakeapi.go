// Package fakeapi is a loopback stand-in for the model APIs of the agent
// CLIs, good enough to run them offline:
//
//   - Anthropic Messages, POST /v1/messages (Claude Code);
//   - OpenAI Responses, POST /v1/responses (Codex; openai.go);
//   - OpenAI Chat Completions, POST /v1/chat/completions (Qwen Code);
//   - Gemini generateContent and streamGenerateContent?alt=sse, POST
//     /v1beta/models/MODEL:ACTION (Gemini CLI; gemini.go).
//
// It answers each with a reply in that API's own (streamed) format, answers
// any other path with something harmless, and appends one JSON line per
// request to a log file: the log is the ground truth of which prompts the
// agent really submitted.
//
// Its mode is switchable at run time, by POST /_control or by a mode file:
//
//   - instant: reply "ok" at once.
//   - slow: stream the reply over a few seconds, so that the agent is busy.
//   - bash: answer a prompt with a call of the agent's shell tool (Bash,
//     run_shell_command, shell, ...: a command that the agent must ask
//     permission for); once the tool result comes back, answer with plain
//     text.
//
// In any mode, Control.Scripts script tool calls: a prompt holding a
// script's marker is answered with calls of the named tools (an MCP
// server's, say), one after another, and each result is logged (see
// script.go).
//
// Only the requests that an agent makes for a person's prompt count as
// prompts (Kind "prompt"); its internal calls (title or topic generation,
// quota check, Gemini's routing classifier, ...) are logged as "internal"
// and always answered at once.
package fakeapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"
)

// Mode says how prompts are answered.
type Mode string

// The modes.
const (
	ModeInstant Mode = "instant"
	ModeSlow    Mode = "slow"
	ModeBash    Mode = "bash"
)

func (m Mode) valid() bool { return m == ModeInstant || m == ModeSlow || m == ModeBash }

// Kinds of logged requests.
const (
	KindPrompt     = "prompt"      // a person's prompt, the main loop's request
	KindToolResult = "tool_result" // the main loop returning a tool's result
	KindInternal   = "internal"    // title/topic generation, quota check, ...
	KindOther      = "other"       // any path but POST /v1/messages
	KindControl    = "control"     // a mode change through /_control
)

// The APIs, as logged in Record.API.
const (
	APIAnthropic = "anthropic" // Messages
	APIResponses = "responses" // OpenAI Responses
	APIChat      = "chat"      // OpenAI Chat Completions
	APIGemini    = "gemini"    // Gemini generateContent
)

// Defaults for Config's zero values.
const (
	DefaultReply       = "ok"
	DefaultSlowFor     = 5 * time.Second
	DefaultBashCommand = "touch /tmp/fakeapi-ran"
)

// Config sets up a Server. The zero value is usable: instant mode, no log.
type Config struct {
	// LogPath, if set, gets one JSON Record per line, appended.
	LogPath string
	// ModeFile, if set, is read before each prompt; if it exists, its
	// contents (a mode name, or a Control JSON document) override the mode.
	ModeFile string
	// Control is the initial setting; empty fields take the defaults.
	Control Control
	// DumpDir, if set, gets every request body as a file of its own
	// (NANOS-PATH.json): what a new CLI version sends, to read.
	DumpDir string
}

// Control is the run-time setting, the body of POST /_control. Empty or
// zero fields keep their current value.
type Control struct {
	Mode        Mode    `json:"mode,omitempty"`
	Reply       string  `json:"reply,omitempty"`        // text of a reply
	SlowSeconds float64 `json:"slow_seconds,omitempty"` // how long slow mode streams
	BashCommand string  `json:"bash_command,omitempty"` // the command bash mode asks to run
	// Scripts, when not nil, replace the scripted tool calls (script.go).
	Scripts []Script `json:"scripts,omitempty"`
}

// Record is one line of the request log.
type Record struct {
	T      time.Time `json:"t"`
	Method string    `json:"method"`
	Path   string    `json:"path"`
	Kind   string    `json:"kind"`
	API    string    `json:"api,omitempty"`
	Mode   Mode      `json:"mode,omitempty"`
	Model  string    `json:"model,omitempty"`
	Stream bool      `json:"stream,omitempty"`
	// Text is the text of the last user message (tool results excluded).
	Text string `json:"text,omitempty"`
	// Tools is how many tools the request offers; the main loop offers many.
	Tools     int    `json:"tools,omitempty"`
	MaxTokens int    `json:"max_tokens,omitempty"`
	Messages  int    `json:"messages,omitempty"`
	System    string `json:"system,omitempty"` // the system prompt's start, for internal calls
	Reply     string `json:"reply,omitempty"`  // what was answered: text or tool_use
	// Tool and Result: a scripted call's tool (as called) and, in its
	// tool_result record, the text of the result that came back.
	Tool   string `json:"tool,omitempty"`
	Result string `json:"result,omitempty"`
	Body   string `json:"body,omitempty"` // the start of the body, for unknown paths
	Query  string `json:"query,omitempty"`
	Error  string `json:"error,omitempty"`
}

// Server is the fake API. Create it with New, then Start it or use it as an
// http.Handler (with httptest, say).
type Server struct {
	cfg Config

	mu      sync.Mutex
	control Control
	records []Record
	logFile *os.File
	nextID  int
	// inFlight are the scripted calls whose results have not come back,
	// by tool_use id / call_id.
	inFlight map[string]pending

	ln   net.Listener
	srv  *http.Server
	done chan struct{}
}

// New makes a Server; it opens the log file, if any.
func New(cfg Config) (*Server, error) {
	s := &Server{cfg: cfg, control: Control{
		Mode:        ModeInstant,
		Reply:       DefaultReply,
		SlowSeconds: DefaultSlowFor.Seconds(),
		BashCommand: DefaultBashCommand,
	}}
	if err := s.apply(cfg.Control); err != nil {
		return nil, err
	}
	if cfg.LogPath != "" {
		f, err := os.OpenFile(cfg.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, fmt.Errorf("fakeapi: opening the log: %w", err)
		}
		s.logFile = f
	}
	return s, nil
}

// Start listens on 127.0.0.1 at a free port and serves in the background.
func (s *Server) Start() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("fakeapi: listen: %w", err)
	}
	s.ln = ln
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	s.done = make(chan struct{})
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln)
	}()
	return nil
}

// URL is the base URL to put in ANTHROPIC_BASE_URL ("" before Start).
func (s *Server) URL() string {
	if s.ln == nil {
		return ""
	}
	return "http://" + s.ln.Addr().String()
}

// Close stops serving (streams in progress are cut) and closes the log.
func (s *Server) Close() error {
	var err error
	if s.srv != nil {
		err = s.srv.Close()
		<-s.done
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.logFile != nil {
		if cerr := s.logFile.Close(); err == nil {
			err = cerr
		}
		s.logFile = nil
	}
	return err
}

// Set changes the run-time setting, as POST /_control does.
func (s *Server) Set(c Control) error { return s.apply(c) }

// Current returns the run-time setting (the mode file not considered).
func (s *Server) Current() Control {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.control
}

// Records returns a copy of every request logged so far.
func (s *Server) Records() []Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Record(nil), s.records...)
}

// Prompts returns the texts of the logged prompts, in order.
func (s *Server) Prompts() []string {
	var out []string
	for _, r := range s.Records() {
		if r.Kind == KindPrompt {
			out = append(out, r.Text)
		}
	}
	return out
}

func (s *Server) apply(c Control) error {
	if c.Mode != "" && !c.Mode.valid() {
		return fmt.Errorf("fakeapi: unknown mode %q (want instant, slow or bash)", c.Mode)
	}
	if c.SlowSeconds < 0 {
		return errors.New("fakeapi: slow_seconds must not be negative")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	merge(&s.control, c)
	return nil
}

func merge(dst *Control, c Control) {
	if c.Mode != "" {
		dst.Mode = c.Mode
	}
	if c.Reply != "" {
		dst.Reply = c.Reply
	}
	if c.SlowSeconds > 0 {
		dst.SlowSeconds = c.SlowSeconds
	}
	if c.BashCommand != "" {
		dst.BashCommand = c.BashCommand
	}
	if c.Scripts != nil {
		dst.Scripts = c.Scripts
	}
}

// effective is the setting for one request: the control merged with the
// mode file, if there is one.
func (s *Server) effective() Control {
	c := s.Current()
	if s.cfg.ModeFile == "" {
		return c
	}
	b, err := os.ReadFile(s.cfg.ModeFile)
	if err != nil {
		return c
	}
	if fc, err := ParseControl(b); err == nil {
		merge(&c, fc)
	}
	return c
}

// ParseControl reads a mode file or control body: a bare mode name
// ("slow"), or a Control JSON document.
func ParseControl(b []byte) (Control, error) {
	t := strings.TrimSpace(string(b))
	var c Control
	if strings.HasPrefix(t, "{") {
		if err := json.Unmarshal([]byte(t), &c); err != nil {
			return c, fmt.Errorf("fakeapi: control: %w", err)
		}
	} else {
		c.Mode = Mode(t)
	}
	if c.Mode != "" && !c.Mode.valid() {
		return c, fmt.Errorf("fakeapi: unknown mode %q (want instant, slow or bash)", c.Mode)
	}
	return c, nil
}

func (s *Server) log(r Record) {
	if r.T.IsZero() {
		r.T = time.Now()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.records = append(s.records, r)
	if s.logFile != nil {
		b, _ := json.Marshal(r)
		// One write on an O_APPEND file: a reader never sees half a line.
		_, _ = s.logFile.Write(append(b, '\n'))
	}
}

func (s *Server) newID(prefix string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	return fmt.Sprintf("%s_fake%06d", prefix, s.nextID)
}

// ServeHTTP routes: POST /v1/messages, /v1/responses,
// /v1/chat/completions, /v1beta/models/M:generateContent (and its stream),
// /_control, anything else.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.cfg.DumpDir != "" && r.Body != nil {
		b, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
		name := strings.NewReplacer("/", "_", ":", "_").Replace(r.URL.Path)
		_ = os.WriteFile(filepath.Join(s.cfg.DumpDir, fmt.Sprintf("%d%s.json", time.Now().UnixNano(), name)), b, 0o644)
		r.Body = io.NopCloser(bytes.NewReader(b))
	}
	post := r.Method == http.MethodPost
	switch {
	case r.URL.Path == "/_control":
		s.serveControl(w, r)
	case post && r.URL.Path == "/v1/messages":
		s.serveMessages(w, r)
	case post && strings.HasSuffix(r.URL.Path, "/responses"):
		s.serveResponses(w, r)
	case post && strings.HasSuffix(r.URL.Path, "/chat/completions"):
		s.serveChat(w, r)
	case post && isGeminiPath(r.URL.Path):
		s.serveGemini(w, r)
	default:
		s.serveOther(w, r)
	}
}

func (s *Server) serveControl(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<16))
		c, err := ParseControl(b)
		if err == nil {
			err = s.apply(c)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.log(Record{Method: r.Method, Path: r.URL.Path, Kind: KindControl, Mode: s.Current().Mode, Body: string(b)})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(s.Current())
}

// serveOther answers any unknown path harmlessly and logs it. The count
// tokens endpoint gets a plausible answer.
func (s *Server) serveOther(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	rec := Record{Method: r.Method, Path: r.URL.Path, Kind: KindOther, Query: r.URL.RawQuery, Body: clip(string(b), 300)}
	s.log(rec)
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.URL.Path == "/v1/messages/count_tokens":
		_, _ = io.WriteString(w, `{"input_tokens":10}`)
		return
	case strings.HasSuffix(r.URL.Path, ":countTokens"):
		_, _ = io.WriteString(w, `{"totalTokens":10}`)
		return
	case strings.HasSuffix(r.URL.Path, "/models"):
		_, _ = io.WriteString(w, `{"object":"list","data":[],"models":[]}`)
		return
	}
	_, _ = io.WriteString(w, `{}`)
}

// request is the part of a Messages API request body that matters here.
type request struct {
	Model     string          `json:"model"`
	MaxTokens int             `json:"max_tokens"`
	Stream    bool            `json:"stream"`
	System    json.RawMessage `json:"system"`
	Messages  []message       `json:"messages"`
	Tools     []struct {
		Name string `json:"name"`
	} `json:"tools"`
	body []byte // the whole body, where Claude Code names deferred tools
}

type message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Content   json.RawMessage `json:"content"`
	ToolUseID string          `json:"tool_use_id"` // of a tool_result
	IsError   bool            `json:"is_error"`    // of a tool_result
}

// blocks reads a content that is a string or a list of blocks.
func blocks(raw json.RawMessage) []block {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []block{{Type: "text", Text: s}}
	}
	var bs []block
	_ = json.Unmarshal(raw, &bs)
	return bs
}

// toolLoaded is the note Claude Code 2.1.332 sends with a ToolSearch
// result (its own pattern, from its bundle).
var toolLoaded = regexp.MustCompile(`^Tool loaded\.(?:\n\[id:[^\]\n]+\])*\n?$`)

// userText is the text of the last user message, without the
// <system-reminder> blocks and other notes Claude Code adds, and whether
// that message holds a tool result.
func userText(msgs []message) (text string, toolResult bool) {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != "user" {
			continue
		}
		var parts []string
		for _, b := range blocks(msgs[i].Content) {
			switch b.Type {
			case "tool_result":
				toolResult = true
			case "text":
				t := strings.TrimSpace(b.Text)
				if strings.HasPrefix(t, "<system-reminder>") || strings.HasPrefix(t, "[Request interrupted") ||
					toolResult && toolLoaded.MatchString(b.Text) {
					continue // the CLI's own notes, not a person's words
				}
				parts = append(parts, unwrapPastes(b.Text))
			}
		}
		return strings.Join(parts, "\n"), toolResult
	}
	return "", false
}

// pastedOpen starts the wrapper Claude Code 2.1.332 puts around a folded
// paste's text, which it appends to the typed text:
// "\n\n<pasted_content id=\"N\">\nTEXT\n</pasted_content id=\"N\">\n".
var pastedOpen = regexp.MustCompile(`\n*<pasted_content id="([^"]*)">\n`)

// unwrapPastes gives the text as the box held it: each wrapped paste's text
// right after what precedes it, as 2.1.197 sent a paste at the cursor.
func unwrapPastes(text string) string {
	for {
		m := pastedOpen.FindStringSubmatchIndex(text)
		if m == nil {
			return text
		}
		closing := "\n</pasted_content id=\"" + text[m[2]:m[3]] + "\">"
		end := strings.Index(text[m[1]:], closing)
		if end < 0 {
			return text
		}
		rest := strings.TrimPrefix(text[m[1]+end+len(closing):], "\n")
		text = text[:m[0]] + text[m[1]:m[1]+end] + rest
	}
}

func systemText(raw json.RawMessage) string {
	var parts []string
	for _, b := range blocks(raw) {
		parts = append(parts, b.Text)
	}
	return strings.Join(parts, "\n")
}

// classify tells a person's prompt from Claude Code's internal calls: the
// main loop offers tools (Bash among them); title generation, quota checks
// and the like offer none.
func classify(req request, text string, toolResult bool) string {
	hasBash := false
	for _, t := range req.Tools {
		if t.Name == "Bash" {
			hasBash = true
		}
	}
	switch {
	case !hasBash:
		return KindInternal
	case toolResult && text == "":
		// A tool result with a prompt (a person's next words after they
		// refused the tool, say) is a prompt.
		return KindToolResult
	default:
		return KindPrompt
	}
}

func (s *Server) serveMessages(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	rec := Record{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, API: APIAnthropic}
	var req request
	if err == nil {
		err = json.Unmarshal(body, &req)
		req.body = body
	}
	if err != nil {
		rec.Kind, rec.Error, rec.Body = KindOther, err.Error(), clip(string(body), 300)
		s.log(rec)
		writeError(w, http.StatusBadRequest, "invalid_request_error", "fakeapi: "+err.Error())
		return
	}
	text, toolResult := userText(req.Messages)
	rec.Kind = classify(req, text, toolResult)
	rec.Model, rec.Stream, rec.Text = req.Model, req.Stream, text
	rec.Tools, rec.MaxTokens, rec.Messages = len(req.Tools), req.MaxTokens, len(req.Messages)

	c := s.effective()
	rec.Mode = c.Mode
	if rec.Kind != KindInternal && s.scriptMessages(w, r, req, rec, c) {
		return
	}
	var rep reply
	switch {
	case rec.Kind == KindInternal:
		rec.System = clip(systemText(req.System), 200)
		rep = reply{text: internalReply(req)}
	case rec.Kind == KindPrompt && c.Mode == ModeBash:
		rep = reply{toolName: "Bash", toolInput: map[string]any{
			"command":     c.BashCommand,
			"description": "Run the fake API's command",
		}}
	case rec.Kind == KindPrompt && c.Mode == ModeSlow:
		rep = reply{text: c.Reply, over: time.Duration(c.SlowSeconds * float64(time.Second))}
	case rec.Kind == KindToolResult:
		rep = reply{text: "done"}
	default:
		rep = reply{text: c.Reply}
	}
	if rep.toolName != "" {
		rec.Reply = "tool_use " + rep.toolName + ": " + c.BashCommand
	} else {
		rec.Reply = rep.text
	}
	// Log before answering: the log says the prompt reached the API.
	s.log(rec)
	rep.toolID = s.newID("toolu")
	s.answerMessages(w, r, req, rep)
}

// answerMessages sends rep (its toolID set when it calls a tool).
func (s *Server) answerMessages(w http.ResponseWriter, r *http.Request, req request, rep reply) {
	rep.id, rep.model = s.newID("msg"), req.Model
	if req.Stream {
		s.stream(w, r, rep)
	} else {
		writeJSON(w, rep.message())
	}
}

// internalReply answers an internal call. Title and topic generation ask
// for JSON; an answer that parses keeps Claude Code's log quiet.
func internalReply(req request) string {
	sys := strings.ToLower(systemText(req.System))
	switch {
	case strings.Contains(sys, "isnewtopic"):
		return `{"isNewTopic": false, "title": null}`
	case strings.Contains(sys, "title"):
		return `{"title": "Fake session"}`
	}
	return DefaultReply
}

// reply is one answer: text, or a tool_use; streamed over `over`.
type reply struct {
	id, toolID, model string
	text              string
	toolName          string
	toolInput         map[string]any
	over              time.Duration
}

func (rp reply) stopReason() string {
	if rp.toolName != "" {
		return "tool_use"
	}
	return "end_turn"
}

func (rp reply) usage(out int) map[string]any {
	return map[string]any{
		"input_tokens": 10, "output_tokens": out,
		"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
	}
}

func (rp reply) message() map[string]any {
	var content []any
	if rp.toolName != "" {
		content = append(content, map[string]any{"type": "tool_use", "id": rp.toolID, "name": rp.toolName, "input": rp.toolInput})
	} else {
		content = append(content, map[string]any{"type": "text", "text": rp.text})
	}
	return map[string]any{
		"id": rp.id, "type": "message", "role": "assistant", "model": rp.model,
		"content": content, "stop_reason": rp.stopReason(), "stop_sequence": nil,
		"usage": rp.usage(5),
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, code int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"type": "error", "error": map[string]any{"type": typ, "message": msg},
	})
}

// stream writes the reply as server-sent events. A text reply streamed
// over a duration is cut into up to ten deltas, each sent after an equal
// share of the duration (so nothing shows for a while at first); the stream
// stops early if the client goes away (Esc in Claude Code).
func (s *Server) stream(w http.ResponseWriter, r *http.Request, rp reply) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("Connection", "keep-alive")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	send := func(event string, data map[string]any) {
		data["type"] = event
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
		if fl != nil {
			fl.Flush()
		}
	}
	start := rp.message()
	start["content"] = []any{}
	start["stop_reason"] = nil
	start["usage"] = rp.usage(1)
	send("message_start", map[string]any{"message": start})

	if rp.toolName != "" {
		input, _ := json.Marshal(rp.toolInput)
		send("content_block_start", map[string]any{"index": 0, "content_block": map[string]any{
			"type": "tool_use", "id": rp.toolID, "name": rp.toolName, "input": map[string]any{},
		}})
		send("content_block_delta", map[string]any{"index": 0, "delta": map[string]any{
			"type": "input_json_delta", "partial_json": string(input),
		}})
	} else {
		send("content_block_start", map[string]any{"index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
		chunks := []string{rp.text}
		if rp.over > 0 {
			chunks = split(rp.text, 10)
		}
		step := rp.over / time.Duration(len(chunks))
		for _, c := range chunks {
			if rp.over > 0 {
				t := time.NewTimer(step)
				select {
				case <-r.Context().Done():
					t.Stop()
					return
				case <-t.C:
				}
			}
			send("content_block_delta", map[string]any{"index": 0, "delta": map[string]any{"type": "text_delta", "text": c}})
		}
	}
	send("content_block_stop", map[string]any{"index": 0})
	send("message_delta", map[string]any{
		"delta": map[string]any{"stop_reason": rp.stopReason(), "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": 5},
	})
	send("message_stop", map[string]any{})
}

// split cuts s into n pieces (fewer if s is shorter), on rune boundaries.
// Pieces may be empty strings only when s is empty.
func split(s string, n int) []string {
	rs := []rune(s)
	if len(rs) == 0 {
		return []string{""}
	}
	if len(rs) < n {
		n = len(rs)
	}
	out := make([]string, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, string(rs[i*len(rs)/n:(i+1)*len(rs)/n]))
	}
	return out
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
