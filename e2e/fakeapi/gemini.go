package fakeapi

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
)

// The Gemini API (Gemini CLI): POST /v1beta/models/MODEL:generateContent
// (one JSON answer; Gemini CLI's routing classifier and next-speaker check
// ask for JSON this way) and :streamGenerateContent?alt=sse (the
// conversation; data-only events, no event names).

// isGeminiPath reports a models/MODEL:generateContent or
// :streamGenerateContent path.
func isGeminiPath(path string) bool {
	return strings.Contains(path, "/models/") &&
		(strings.HasSuffix(path, ":generateContent") || strings.HasSuffix(path, ":streamGenerateContent"))
}

type geminiRequest struct {
	Contents []struct {
		Role  string       `json:"role"`
		Parts []geminiPart `json:"parts"`
	} `json:"contents"`
	Tools []struct {
		FunctionDeclarations []struct {
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
			Schema     json.RawMessage `json:"parametersJsonSchema"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
	GenerationConfig struct {
		ResponseMimeType string `json:"responseMimeType"`
	} `json:"generationConfig"`
	SystemInstruction json.RawMessage `json:"systemInstruction"`
}

type geminiPart struct {
	Text             string          `json:"text"`
	Thought          bool            `json:"thought"`
	FunctionCall     json.RawMessage `json:"functionCall"`
	FunctionResponse json.RawMessage `json:"functionResponse"`
}

// geminiText is the text of the last user content (without Gemini CLI's
// session context) and whether it returns a function's result.
func geminiText(req geminiRequest) (string, bool) {
	for i := len(req.Contents) - 1; i >= 0; i-- {
		c := req.Contents[i]
		if c.Role != "user" && c.Role != "" {
			continue
		}
		var parts []string
		for _, p := range c.Parts {
			if p.FunctionResponse != nil {
				return "", true
			}
			// Gemini CLI puts its <session_context> (date, OS, workspace)
			// in the first prompt's first part: not the person's text.
			if !p.Thought && p.Text != "" && !strings.HasPrefix(strings.TrimSpace(p.Text), "<session_context>") {
				parts = append(parts, p.Text)
			}
		}
		return strings.Join(parts, "\n"), false
	}
	return "", false
}

// geminiShellTool picks the shell tool among the function declarations.
func geminiShellTool(req geminiRequest) (string, json.RawMessage, int) {
	name, params, n := "run_shell_command", json.RawMessage(nil), 0
	for _, t := range req.Tools {
		for _, f := range t.FunctionDeclarations {
			n++
			if f.Name == "run_shell_command" || (params == nil && strings.Contains(f.Name, "shell")) {
				name, params = f.Name, f.Parameters
				if params == nil {
					params = f.Schema
				}
			}
		}
	}
	return name, params, n
}

func (s *Server) serveGemini(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	rec := Record{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, API: APIGemini}
	var req geminiRequest
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	if err != nil {
		s.badRequest(w, rec, body, err)
		return
	}
	model, action, _ := strings.Cut(r.URL.Path[strings.LastIndex(r.URL.Path, "/models/")+len("/models/"):], ":")
	stream := action == "streamGenerateContent"
	text, toolResult := geminiText(req)
	tool, params, tools := geminiShellTool(req)
	switch {
	// The routing classifier and the next-speaker check ask for JSON and
	// offer no tools; the conversation offers the agent's tools.
	case req.GenerationConfig.ResponseMimeType == "application/json" || tools == 0:
		rec.Kind = KindInternal
	case toolResult:
		rec.Kind = KindToolResult
	default:
		rec.Kind = KindPrompt
	}
	rec.Model, rec.Stream, rec.Text, rec.Tools, rec.Messages = model, stream, text, tools, len(req.Contents)
	c := s.effective()
	rec.Mode = c.Mode
	var internal string
	if rec.Kind == KindInternal {
		internal = internalJSON(body)
		rec.System = clip(systemInstruction(req.SystemInstruction), 200)
	}
	p := planFor(rec.Kind, c, internal)
	rec.Reply = p.logged(tool)
	s.log(rec)

	usage := map[string]any{"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}
	answer := func(parts []any, finish string) map[string]any {
		cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
		if finish != "" {
			cand["finishReason"] = finish
		}
		return map[string]any{"candidates": []any{cand}, "usageMetadata": usage, "modelVersion": model,
			"responseId": s.newID("gem")}
	}
	var whole []any
	if p.tool() {
		whole = []any{map[string]any{"functionCall": map[string]any{"name": tool, "args": shellArgs(params, p.command)}}}
	} else {
		whole = []any{map[string]any{"text": p.text}}
	}
	if !stream {
		writeJSON(w, answer(whole, "STOP"))
		return
	}
	ev := newSSE(w)
	if p.tool() {
		ev.send("", answer(whole, "STOP"))
		return
	}
	// Each piece is its own candidate chunk; the last carries finishReason.
	var pieces []string
	if !p.chunks(r, func(c string) {
		if len(pieces) > 0 {
			ev.send("", answer([]any{map[string]any{"text": pieces[len(pieces)-1]}}, ""))
		}
		pieces = append(pieces, c)
	}) {
		return
	}
	ev.send("", answer([]any{map[string]any{"text": pieces[len(pieces)-1]}}, "STOP"))
}

func systemInstruction(raw json.RawMessage) string {
	var c struct {
		Parts []geminiPart `json:"parts"`
	}
	if json.Unmarshal(raw, &c) != nil {
		var s string
		_ = json.Unmarshal(raw, &s)
		return s
	}
	var out []string
	for _, p := range c.Parts {
		out = append(out, p.Text)
	}
	return strings.Join(out, "\n")
}
