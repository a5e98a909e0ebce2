package fakeapi

import (
	"encoding/json"
	"strings"
	"testing"
)

func geminiBody(jsonMode bool, contents ...any) string {
	req := map[string]any{"contents": contents}
	if jsonMode {
		req["generationConfig"] = map[string]any{"responseMimeType": "application/json",
			"responseJsonSchema": map[string]any{"properties": map[string]any{"complexity_score": map[string]any{"type": "integer"}}}}
	} else {
		req["tools"] = []any{map[string]any{"functionDeclarations": []any{
			map[string]any{"name": "read_file"},
			map[string]any{"name": "run_shell_command", "parametersJsonSchema": map[string]any{"type": "object",
				"properties": map[string]any{"command": map[string]any{"type": "string"}, "description": map[string]any{"type": "string"}}}},
		}}}
	}
	return mustJSON(req)
}

func userContent(text string) map[string]any {
	return map[string]any{"role": "user", "parts": []any{map[string]any{"text": text}}}
}

func TestGeminiClassifierIsInternalJSON(t *testing.T) {
	t.Parallel()
	s, hs := newServer(t, Config{Control: Control{Mode: ModeBash}})
	resp := post(t, hs.URL+"/v1beta/models/gemini-2.5-flash-lite:generateContent", geminiBody(true, userContent("MSG_1: hi")))
	var m struct {
		Candidates []struct {
			Content struct {
				Parts []struct{ Text string }
			}
			FinishReason string
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatal(err)
	}
	var ans struct {
		Score int `json:"complexity_score"`
	}
	if len(m.Candidates) != 1 || json.Unmarshal([]byte(m.Candidates[0].Content.Parts[0].Text), &ans) != nil || ans.Score < 1 || ans.Score > 100 {
		t.Fatalf("classifier answer %+v", m)
	}
	if r := s.Records(); len(r) != 1 || r[0].Kind != KindInternal || r[0].API != APIGemini || r[0].Model != "gemini-2.5-flash-lite" {
		t.Errorf("records = %+v", r)
	}
}

func TestGeminiStreamIsDataOnlyAndLogged(t *testing.T) {
	t.Parallel()
	s, hs := newServer(t, Config{})
	if err := s.Set(Control{Mode: ModeSlow, SlowSeconds: 0.2, Reply: "streamed in parts"}); err != nil {
		t.Fatal(err)
	}
	body := geminiBody(false, userContent("<session_context>setup</session_context>"),
		map[string]any{"role": "model", "parts": []any{map[string]any{"text": "Got it."}}},
		userContent("MSG_2: two\nlines"))
	evs := readSSE(t, post(t, hs.URL+"/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse", body))
	var text, finish string
	for _, e := range evs {
		if e.Name != "" {
			t.Errorf("an event name %q: Gemini streams data only", e.Name)
		}
		var m struct {
			Candidates []struct {
				Content      struct{ Parts []struct{ Text string } }
				FinishReason string
			}
		}
		if err := json.Unmarshal([]byte(e.Data), &m); err != nil || len(m.Candidates) != 1 {
			t.Fatalf("chunk %q: %v", e.Data, err)
		}
		for _, p := range m.Candidates[0].Content.Parts {
			text += p.Text
		}
		if finish != "" {
			t.Error("a chunk after the one with finishReason")
		}
		finish = m.Candidates[0].FinishReason
	}
	if len(evs) < 2 || text != "streamed in parts" || finish != "STOP" {
		t.Errorf("%d chunks, text %q, finish %q", len(evs), text, finish)
	}
	r := s.Records()
	if len(r) != 1 || r[0].Kind != KindPrompt || r[0].Text != "MSG_2: two\nlines" || r[0].Query != "alt=sse" || !r[0].Stream || r[0].Tools != 2 {
		t.Errorf("records = %+v", r)
	}
}

// Gemini CLI 0.61 sends its session context as the first part of the
// first prompt: the logged text is the person's part only.
func TestGeminiSessionContextIsNotPromptText(t *testing.T) {
	t.Parallel()
	s, hs := newServer(t, Config{})
	first := map[string]any{"role": "user", "parts": []any{
		map[string]any{"text": "<session_context>\nThis is the Gemini CLI.\n</session_context>"},
		map[string]any{"text": "MSG_9: hello"}}}
	readSSE(t, post(t, hs.URL+"/v1beta/models/gemini-3.8-flash:streamGenerateContent?alt=sse", geminiBody(false, first)))
	if p := s.Prompts(); len(p) != 1 || p[0] != "MSG_9: hello" {
		t.Errorf("Prompts() = %q", p)
	}
}

func TestGeminiBashModeCallsRunShellCommand(t *testing.T) {
	t.Parallel()
	s, hs := newServer(t, Config{Control: Control{Mode: ModeBash, BashCommand: "touch /tmp/z"}})
	evs := readSSE(t, post(t, hs.URL+"/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse", geminiBody(false, userContent("MSG_3: run"))))
	if len(evs) != 1 || !strings.Contains(evs[0].Data, `"functionCall":{"args":{"command":"touch /tmp/z","description":`) ||
		!strings.Contains(evs[0].Data, `"name":"run_shell_command"`) {
		t.Fatalf("events %v", evs)
	}
	fr := map[string]any{"role": "user", "parts": []any{map[string]any{"functionResponse": map[string]any{"name": "run_shell_command"}}}}
	evs = readSSE(t, post(t, hs.URL+"/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse", geminiBody(false, userContent("MSG_3: run"), fr)))
	if len(evs) != 1 || !strings.Contains(evs[0].Data, `"text":"done"`) {
		t.Errorf("after the function response: %v", evs)
	}
	if r := s.Records(); len(r) != 2 || r[1].Kind != KindToolResult {
		t.Errorf("records = %+v", r)
	}
	if p := s.Prompts(); len(p) != 1 || p[0] != "MSG_3: run" {
		t.Errorf("Prompts() = %q", p)
	}
}

func TestGeminiCountTokensAndModels(t *testing.T) {
	t.Parallel()
	_, hs := newServer(t, Config{})
	var m map[string]any
	if err := json.NewDecoder(post(t, hs.URL+"/v1beta/models/gemini-2.5-pro:countTokens", `{}`).Body).Decode(&m); err != nil || m["totalTokens"] == nil {
		t.Errorf("countTokens = %v (%v)", m, err)
	}
}
