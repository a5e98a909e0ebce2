package integration

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/receipt"
)

func mustCLI(t *testing.T, name string) CLI {
	t.Helper()
	cli, ok := Lookup(name)
	if !ok {
		t.Fatalf("no %s in the registry", name)
	}
	return cli
}

func TestMergeClaudeHooks(t *testing.T) {
	claude := *mustCLI(t, "claude").Hooks
	cmds := claude.Commands("/bin/agentmsg", "/state", "/state/receipts.log", nil)
	old := []byte(`{"model": "opus", "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]}}`)
	merged, err := mergeHooks(old, claude, cmds)
	if err != nil || string(merged) == string(old) {
		t.Fatalf("merge: %s, %v", merged, err)
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
	again, err := mergeHooks(merged, claude, cmds)
	if err != nil || string(again) != string(merged) {
		t.Errorf("second install changed the file (%v):\n%s", err, again)
	}
	if _, err := mergeHooks([]byte("{not json"), claude, cmds); err == nil {
		t.Error("invalid JSON was overwritten")
	}
	if _, err := mergeHooks([]byte(`{"hooks": 3}`), claude, cmds); err == nil {
		t.Error(`"hooks": 3 was overwritten`)
	}
}

func TestMergeGeminiHooks(t *testing.T) {
	gemini := *mustCLI(t, "gemini").Hooks
	merged, err := mergeHooks([]byte(`{"theme": "dark"}`), gemini, gemini.Commands("/bin/agentmsg", "/state", "/state/r.log", []string{"-S", "/tmp/s"}))
	if err != nil {
		t.Fatal(err)
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

// Every CLI with hooks gets both of agentmsg's in its own file and format,
// once.
func TestInstallHooksEveryCLI(t *testing.T) {
	for _, name := range WithHooks() {
		t.Run(name, func(t *testing.T) {
			cli := mustCLI(t, name)
			dir := t.TempDir()
			r := HookInstall{CLI: name, Dir: dir, Exe: "/bin/agentmsg", Root: "/st", Receipts: "/st/r.log", Server: []string{"-S", "/tmp/my s"}, Now: time.Now()}
			rep, err := InstallHooks(r)
			if err != nil || !rep.Written || rep.Backup != "" {
				t.Fatalf("%+v, %v", rep, err)
			}
			if want := filepath.Join(dir, filepath.FromSlash(cli.Hooks.File.Path)); rep.Path != want {
				t.Errorf("path %s, want %s", rep.Path, want)
			}
			if name == "codex" && !strings.Contains(rep.Note, `"Trust all and continue"`) {
				t.Errorf("Codex runs hooks only once trusted; the note says %q", rep.Note)
			}
			data, _ := os.ReadFile(rep.Path)
			var got struct {
				Hooks map[string][]struct {
					Hooks []struct{ Type, Command string }
				}
			}
			if err := json.Unmarshal(data, &got); err != nil {
				t.Fatal(err)
			}
			submit, turnEnd := got.Hooks[cli.Hooks.Submit], got.Hooks[cli.Hooks.TurnEnd]
			if len(submit) != 1 || submit[0].Hooks[0].Type != "command" ||
				!strings.HasPrefix(submit[0].Hooks[0].Command, "/bin/agentmsg hook prompt-submit --receipts /st/r.log") {
				t.Errorf("%s: %+v", cli.Hooks.Submit, submit)
			}
			if len(turnEnd) != 1 || !strings.Contains(turnEnd[0].Hooks[0].Command, "AGENTMSG_HOME=/st /bin/agentmsg -S '/tmp/my s' deliver") {
				t.Errorf("%s: %+v", cli.Hooks.TurnEnd, turnEnd)
			}
			if rep, err := InstallHooks(r); err != nil || rep.Changed || rep.Written {
				t.Errorf("second install: %+v, %v", rep, err)
			}
		})
	}
	if _, err := InstallHooks(HookInstall{CLI: "aider", Dir: t.TempDir()}); !errors.Is(err, ErrUnknownCLI) {
		t.Errorf("aider: %v", err)
	}
}

func TestLocate(t *testing.T) {
	env := func(kv ...string) func(string) (string, bool) {
		return func(k string) (string, bool) {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1], true
				}
			}
			return "", false
		}
	}
	codex := *mustCLI(t, "codex").MCP
	for _, tc := range []struct {
		f         File
		dir, home string
		env       func(string) (string, bool)
		want      string
		err       error
	}{
		{f: codex, env: env("HOME", "/h"), want: "/h/.codex/config.toml"},
		{f: codex, env: env("HOME", "/h", "CODEX_HOME", "/c"), want: "/c/config.toml"},
		{f: codex, home: "/g", env: env("CODEX_HOME", "/c"), want: "/g/.codex/config.toml"},
		{f: codex, env: env(), err: ErrNoHome},
		{f: *mustCLI(t, "claude").MCP, dir: "/p", env: env(), want: "/p/.mcp.json"},
		{f: *mustCLI(t, "claude").MCP, env: env(), err: ErrNoProject},
	} {
		got, err := tc.f.Locate(tc.dir, tc.home, tc.env)
		if got != tc.want || !errors.Is(err, tc.err) {
			t.Errorf("%+v: %q, %v; want %q, %v", tc.f, got, err, tc.want, tc.err)
		}
	}
}

// The prompt-submit hook records only the id a prompt starts with.
func TestRecordPrompt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.log")
	at := receipt.Recipient{Pane: "%3", ServerPID: 99, Socket: "/tmp/s"}
	for _, in := range []string{
		`{"prompt": "MSG_ANA_0123abcd: hi", "hook_event_name": "UserPromptSubmit"}`,
		`{"prompt": "please read MSG_BOB_89abcdef: it"}`,
	} {
		if err := RecordPrompt(strings.NewReader(in), path, at); err != nil {
			t.Fatal(err)
		}
	}
	if err := RecordPrompt(strings.NewReader("not json"), path, at); err == nil {
		t.Error("no error for input that is not JSON")
	}
	l := &receipt.Log{Path: path}
	if !l.Has("MSG_ANA_0123abcd", at) || l.Has("MSG_BOB_89abcdef", at) {
		t.Error("receipts wrong")
	}
}

// The turn-end hook runs deliver --turn-end: bounded in time, one pass per
// team at a time (a deliver per turn end piled up), in the background.
func TestTurnEndHookTakesTurns(t *testing.T) {
	for _, name := range WithHooks() {
		cli, _ := Lookup(name)
		cmd := cli.Hooks.Commands("/bin/agentmsg", "/st", "/st/r.log", []string{"-S", "/tmp/s"})[cli.Hooks.TurnEnd]
		if !strings.Contains(cmd, "/bin/agentmsg -S /tmp/s deliver --turn-end >/dev/null 2>&1 &)") {
			t.Errorf("%s: turn-end hook %q", name, cmd)
		}
	}
}
