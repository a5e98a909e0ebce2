package cmd

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmsg/agentmsg/receipt"
)

func TestMergeClaudeHooks(t *testing.T) {
	claude := hookCLIs["claude"]
	cmds := hookCommands(claude, "/bin/agentmsg", "/state", "/state/receipts.log", "")
	old := []byte(`{"model": "opus", "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]}}`)
	merged, changed, err := mergeHooks(old, claude, cmds)
	if err != nil || !changed {
		t.Fatalf("merge: changed %v, %v", changed, err)
	}
	var got struct {
		Model string
		Hooks map[string][]struct {
			Hooks []struct{ Type, Command string }
		}
	}
	if err := json.Unmarshal(merged, &got); err != nil {
		t.Fatal(err)
	}
	if got.Model != "opus" {
		t.Errorf("other settings lost: %s", merged)
	}
	if stop := got.Hooks["Stop"]; len(stop) != 2 || stop[0].Hooks[0].Command != "notify-send done" || !strings.Contains(stop[1].Hooks[0].Command, "deliver") {
		t.Errorf("Stop hooks: %+v", stop)
	}
	if ups := got.Hooks["UserPromptSubmit"]; len(ups) != 1 || !strings.Contains(ups[0].Hooks[0].Command, "hook prompt-submit --receipts /state/receipts.log") {
		t.Errorf("UserPromptSubmit hooks: %+v", ups)
	}
	// Installing again changes nothing.
	again, changed, err := mergeHooks(merged, claude, cmds)
	if err != nil || changed || string(again) != string(merged) {
		t.Errorf("second install changed the file (%v, %v)", changed, err)
	}
	if _, _, err := mergeHooks([]byte("{not json"), claude, cmds); err == nil {
		t.Error("invalid JSON was overwritten")
	}
	if _, _, err := mergeHooks([]byte(`{"hooks": 3}`), claude, cmds); err == nil {
		t.Error(`"hooks": 3 was overwritten`)
	}
}

func TestMergeGeminiHooks(t *testing.T) {
	gemini := hookCLIs["gemini"]
	merged, changed, err := mergeHooks([]byte(`{"theme": "dark"}`), gemini, hookCommands(gemini, "/bin/agentmsg", "/state", "/state/r.log", "-S /tmp/s "))
	if err != nil || !changed {
		t.Fatal(changed, err)
	}
	var got struct {
		Theme string
		Hooks map[string][]struct {
			Hooks []struct{ Type, Command string }
		}
	}
	if err := json.Unmarshal(merged, &got); err != nil {
		t.Fatal(err)
	}
	before := got.Hooks["BeforeAgent"]
	after := got.Hooks["AfterAgent"]
	if got.Theme != "dark" || len(before) != 1 || len(after) != 1 ||
		!strings.HasSuffix(before[0].Hooks[0].Command, "--reply-json") ||
		!strings.Contains(after[0].Hooks[0].Command, "-S /tmp/s deliver") || !strings.HasSuffix(after[0].Hooks[0].Command, "echo '{}'") {
		t.Errorf("merged: %s", merged)
	}
}

// Gemini CLI parses the hook's stdout as JSON: the hook answers {} even
// when its input is not what it expects.
func TestHookPromptSubmitReplies(t *testing.T) {
	dir := t.TempDir()
	for _, in := range []string{`{"prompt": "MSG_ANA_0123abcd: hi"}`, "not json"} {
		f, out, _ := testFactory(nil)
		f.IO.In = strings.NewReader(in)
		if code := Run(context.Background(), f, []string{"hook", "prompt-submit", "--reply-json", "--receipts", dir + "/r.log"}); code != 0 {
			t.Fatalf("exit %d", code)
		}
		if strings.TrimSpace(out.String()) != "{}" {
			t.Errorf("stdout %q, want {}", out)
		}
	}
	if l := (&receipt.Log{Path: dir + "/r.log"}); !l.Has("MSG_ANA_0123abcd") {
		t.Error("no receipt recorded")
	}
}

// Receipts are proof of delivery: never written into a directory others
// can write to (where they could forge them), or through a symbolic link.
func TestHookRefusesReceiptsOthersControl(t *testing.T) {
	open := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	private := t.TempDir()
	victim := filepath.Join(t.TempDir(), "pwned")
	if err := os.Symlink(victim, filepath.Join(private, "r.log")); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{filepath.Join(open, "r.log"), filepath.Join(private, "r.log")} {
		f, _, errOut := testFactory(nil)
		f.IO.In = strings.NewReader(`{"prompt": "MSG_ANA_0123abcd: hi"}`)
		if code := Run(context.Background(), f, []string{"hook", "prompt-submit", "--receipts", path}); code != 0 {
			t.Fatalf("exit %d: a hook must never stand in the agent's way", code)
		}
		if errOut.Len() == 0 {
			t.Errorf("%s: nothing said on stderr", path)
		}
	}
	if _, err := os.Lstat(filepath.Join(open, "r.log")); err == nil {
		t.Error("a receipt was written into a world-writable directory")
	}
	if _, err := os.Lstat(victim); err == nil {
		t.Error("a receipt was written through a symbolic link")
	}
}
