package cmd

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestMergeClaudeHooks(t *testing.T) {
	cmds := claudeHookCommands("/bin/agentmsg", "/state", "/state/receipts.log", "")
	old := []byte(`{"model": "opus", "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]}}`)
	merged, changed, err := mergeClaudeHooks(old, cmds)
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
	again, changed, err := mergeClaudeHooks(merged, cmds)
	if err != nil || changed || string(again) != string(merged) {
		t.Errorf("second install changed the file (%v, %v)", changed, err)
	}
	if _, _, err := mergeClaudeHooks([]byte("{not json"), cmds); err == nil {
		t.Error("invalid JSON was overwritten")
	}
	if _, _, err := mergeClaudeHooks([]byte(`{"hooks": 3}`), cmds); err == nil {
		t.Error(`"hooks": 3 was overwritten`)
	}
}
