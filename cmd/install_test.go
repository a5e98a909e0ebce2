package cmd

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// mcp install and hooks install behave alike (issue 10, item 20): by
// default each writes its settings file, keeping a backup of the old one
// and showing the change as a diff; --print only prints the file as it
// would be, writing nothing; a second run changes nothing.
func TestInstallCommandsWriteAlike(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string // after the directory flag
		file string   // under the directory
		want string   // in the written file
	}{
		{"mcp install claude", []string{"mcp", "install", "claude", "--command", "/opt/bin/agentmsg"}, ".mcp.json", `"/opt/bin/agentmsg"`},
		{"hooks install claude", []string{"hooks", "install", "claude"}, filepath.Join(".claude", "settings.json"), "hook prompt-submit"},
		{"hooks install codex", []string{"hooks", "install", "codex"}, filepath.Join(".codex", "hooks.json"), "hook prompt-submit"},
		{"hooks install qwen", []string{"hooks", "install", "qwen"}, filepath.Join(".qwen", "settings.json"), "hook prompt-submit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, tc.file)
			old := "{\n  \"zeta\": 1\n}\n"
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(old), 0o600); err != nil {
				t.Fatal(err)
			}
			home := t.TempDir()
			run := func(extra ...string) (string, string, int) {
				f, out, errOut := testFactory(map[string]string{"AGENTMSG_HOME": home})
				code := Run(context.Background(), f, append(append(append([]string{}, tc.args...), "--dir", dir), extra...))
				return out.String(), errOut.String(), code
			}
			backups := func() []string {
				m, _ := filepath.Glob(path + ".bak-*")
				return m
			}

			// --print: the merged file on stdout, nothing written.
			out, errOut, code := run("--print")
			if code != 0 || !strings.Contains(out, tc.want) || !strings.Contains(out, `"zeta"`) {
				t.Fatalf("--print: exit %d\n%s\n%s", code, out, errOut)
			}
			if data, _ := os.ReadFile(path); string(data) != old || len(backups()) != 0 {
				t.Fatalf("--print changed the file or made a backup: %s %v", data, backups())
			}

			// The default writes, with a backup and a diff.
			out, errOut, code = run()
			if code != 0 {
				t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
			}
			data, _ := os.ReadFile(path)
			if !strings.Contains(string(data), tc.want) || !strings.Contains(string(data), `"zeta"`) {
				t.Fatalf("written file:\n%s", data)
			}
			if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
				t.Errorf("mode %v, want the old file's 0600", fi.Mode().Perm())
			}
			b := backups()
			if len(b) != 1 {
				t.Fatalf("backups: %v\n%s", b, out)
			}
			if bd, _ := os.ReadFile(b[0]); string(bd) != old {
				t.Errorf("backup holds %q", bd)
			}
			if !strings.Contains(out, "--- "+path) || !strings.Contains(out, "+++ "+path) || !strings.Contains(out, "+") ||
				!strings.Contains(out, b[0]) {
				t.Errorf("no diff or backup shown:\n%s", out)
			}

			// Again: nothing to change, nothing written, no new backup.
			out, _, code = run()
			if code != 0 || len(backups()) != 1 || !strings.Contains(out, "nothing written") {
				t.Errorf("second run: exit %d, backups %v\n%s", code, backups(), out)
			}
			if again, _ := os.ReadFile(path); string(again) != string(data) {
				t.Errorf("second run changed the file")
			}

			// --json: one document that says what was done.
			if err := os.WriteFile(path, []byte(old), 0o600); err != nil {
				t.Fatal(err)
			}
			out, _, code = run("--json")
			var rep struct {
				Path    string `json:"path"`
				Changed bool   `json:"changed"`
				Written bool   `json:"written"`
				Backup  string `json:"backup"`
				Diff    string `json:"diff"`
			}
			if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 {
				t.Fatalf("--json: exit %d, %v\n%s", code, err, out)
			}
			if rep.Path != path || !rep.Changed || !rep.Written || rep.Backup == "" || !strings.Contains(rep.Diff, "+++ ") {
				t.Errorf("--json: %+v", rep)
			}
		})
	}
}

// Every merge keeps the user's file as it was, byte for byte, and only adds
// (issue 12, item 6): keys in their unsorted order, the file's own
// indentation (four spaces here, a tab there), its spacing; the added text
// follows that indentation.
func TestInstallKeepsOrderAndFormatting(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string // the directory flag and DIR follow
		file string   // under DIR
		old  string
		want string // in the added text
	}{
		{"hooks install claude", []string{"hooks", "install", "claude", "--dir"}, ".claude/settings.json",
			"{\n    \"zeta\": {\n        \"b\": 1,\n        \"a\": [1,2]\n    },\n    \"model\":   \"opus\"\n}\n", "\n    \"hooks\": {\n        \"UserPromptSubmit\": [\n"},
		{"hooks install gemini (tabs)", []string{"hooks", "install", "gemini", "--dir"}, ".gemini/settings.json",
			"{\n\t\"theme\": \"dark\",\n\t\"alpha\": true\n}\n", "\n\t\"hooks\": {\n\t\t\"BeforeAgent\": [\n"},
		{"mcp install claude", []string{"mcp", "install", "claude", "--command", "/opt/bin/agentmsg", "--dir"}, ".mcp.json",
			"{\n    \"zeta\": 1,\n    \"mcpServers\": {\n        \"github\": {\"command\": \"gh-mcp\"}\n    },\n    \"alpha\": [ 1, 2 ]\n}\n",
			",\n        \"agentmsg\": {\n            \"command\": \"/opt/bin/agentmsg\",\n"},
		{"mcp install gemini", []string{"mcp", "install", "gemini", "--command", "/opt/bin/agentmsg", "--home"}, ".gemini/settings.json",
			"{\n  \"ui\": {\"theme\": \"dark\"},\n  \"general\": {\"vimMode\": true}\n}", ",\n  \"mcpServers\": {\n    \"agentmsg\": {\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, tc.file)
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(tc.old), 0o644); err != nil {
				t.Fatal(err)
			}
			f, out, errOut := testFactory(map[string]string{"AGENTMSG_HOME": t.TempDir()})
			if code := Run(context.Background(), f, append(append([]string{}, tc.args...), dir)); code != 0 {
				t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
			}
			data, _ := os.ReadFile(path)
			got := string(data)
			if !json.Valid(data) {
				t.Fatalf("not valid JSON:\n%s", got)
			}
			// One insertion, nothing else changed: the old file is a
			// prefix and a suffix of the new one around the added text.
			p := 0
			for p < len(tc.old) && p < len(got) && tc.old[p] == got[p] {
				p++
			}
			s := 0
			for s < len(tc.old)-p && s < len(got)-p && tc.old[len(tc.old)-1-s] == got[len(got)-1-s] {
				s++
			}
			if p+s != len(tc.old) {
				t.Fatalf("the old text was changed, not only added to:\nold:\n%s\nnew:\n%s", tc.old, got)
			}
			if added := got[p : len(got)-s]; !strings.HasPrefix(strings.TrimPrefix(added, ","), strings.TrimPrefix(tc.want, ",")) {
				t.Errorf("added text does not follow the file's indentation; want it to start %q:\n%s", tc.want, added)
			}
		})
	}
}

// Codex runs a hook only once a person has trusted it: the install says so.
func TestHooksInstallSaysWhatIsLeft(t *testing.T) {
	dir := t.TempDir()
	f, out, _ := testFactory(map[string]string{"AGENTMSG_HOME": t.TempDir()})
	if code := Run(context.Background(), f, []string{"hooks", "install", "codex", "--dir", dir}); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if !strings.Contains(out.String(), `"Trust all and continue"`) || !strings.Contains(out.String(), "UserPromptSubmit and Stop") {
		t.Errorf("output:\n%s", out)
	}
	for _, args := range [][]string{{"hooks", "install", "aider"}, {"hooks", "install"}, {"mcp", "install", "aider"}} {
		f, _, errOut := testFactory(nil)
		if code := Run(context.Background(), f, args); code != ExitUsage || !strings.Contains(errOut.String(), "claude, codex, gemini or qwen") {
			t.Errorf("%v: exit %d, %s", args, code, errOut)
		}
	}
}

// A settings file kept in a dotfiles folder behind a symbolic link is
// written there, and the link stays (issue 17, item 12); a link to nothing
// is refused and nothing is made.
func TestInstallWritesThroughALink(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string // the directory flag and DIR follow
		file string   // under DIR
		old  string
		want string // in the written file
	}{
		{"hooks install claude", []string{"hooks", "install", "claude", "--dir"}, ".claude/settings.json", "{\"model\": \"opus\"}\n", "hook prompt-submit"},
		{"mcp install codex", []string{"mcp", "install", "codex", "--command", "/opt/bin/agentmsg", "--home"}, ".codex/config.toml", "model = \"o3\"\n", "[mcp_servers.agentmsg]"},
		{"mcp install gemini", []string{"mcp", "install", "gemini", "--command", "/opt/bin/agentmsg", "--home"}, ".gemini/settings.json", "{\"theme\": \"dark\"}\n", `"agentmsg"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, tc.file)
			real := filepath.Join(dir, "dotfiles", filepath.Base(tc.file))
			if err := os.MkdirAll(filepath.Dir(real), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join("..", "dotfiles", filepath.Base(tc.file)), path); err != nil {
				t.Fatal(err)
			}
			run := func() (string, string, int) {
				f, out, errOut := testFactory(map[string]string{"AGENTMSG_HOME": t.TempDir()})
				code := Run(context.Background(), f, append(append([]string{}, tc.args...), dir))
				return out.String(), errOut.String(), code
			}

			// The link leads nowhere yet: refused, nothing made.
			out, errOut, code := run()
			if code != ExitError || !strings.Contains(errOut, real+", which does not exist") {
				t.Errorf("dangling link: exit %d\n%s\n%s", code, out, errOut)
			}
			if _, err := os.Lstat(real); !os.IsNotExist(err) {
				t.Errorf("the link's target was made: %v", err)
			}

			if err := os.WriteFile(real, []byte(tc.old), 0o600); err != nil {
				t.Fatal(err)
			}
			out, errOut, code = run()
			if code != 0 {
				t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
			}
			if fi, err := os.Lstat(path); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Fatalf("%s is no longer a link: %v", path, err)
			}
			data, _ := os.ReadFile(real)
			if !strings.Contains(string(data), tc.want) || !strings.Contains(string(data), strings.TrimSpace(tc.old)[1:6]) {
				t.Errorf("the linked file holds:\n%s", data)
			}
			if fi, _ := os.Stat(real); fi.Mode().Perm() != 0o600 {
				t.Errorf("mode %v, want 0600", fi.Mode().Perm())
			}
			if !strings.Contains(out, "symbolic link") || !strings.Contains(out, real) {
				t.Errorf("the output does not say which file was written:\n%s", out)
			}
		})
	}
}

// A save another program (the agent CLI) makes while an install writes
// the file is never lost (issue 17, item 12): the install merges into it,
// or the save comes after and stands. The save comes a random moment after
// the install has read the file (its backup is there); only how often the
// two overlap depends on timing.
func TestInstallKeepsASaveMadeMeanwhile(t *testing.T) {
	for _, tc := range []struct {
		name       string
		args       []string // the directory flag and DIR follow
		file       string   // under DIR
		old, saved string
	}{
		{"hooks install claude", []string{"hooks", "install", "claude", "--dir"}, ".claude/settings.json", "{}\n", "{\"model\": \"sonnet\"}\n"},
		{"mcp install codex", []string{"mcp", "install", "codex", "--command", "/opt/bin/agentmsg", "--home"}, ".codex/config.toml", "", "model = \"sonnet\"\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for round := range 100 {
				dir := t.TempDir()
				path := filepath.Join(dir, tc.file)
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(tc.old), 0o644); err != nil {
					t.Fatal(err)
				}
				saved := make(chan error)
				go func() {
					for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); {
						if m, _ := filepath.Glob(path + ".bak-*"); len(m) > 0 {
							break
						}
					}
					for range rand.IntN(20000) {
						runtime.Gosched()
					}
					if err := os.WriteFile(path+".new", []byte(tc.saved), 0o644); err != nil {
						saved <- err
						return
					}
					saved <- os.Rename(path+".new", path)
				}()
				f, out, errOut := testFactory(map[string]string{"AGENTMSG_HOME": t.TempDir()})
				code := Run(context.Background(), f, append(append([]string{}, tc.args...), dir))
				if err := <-saved; err != nil {
					t.Fatal(err)
				}
				if code != 0 {
					t.Fatalf("round %d: exit %d\n%s\n%s", round, code, out, errOut)
				}
				if data, _ := os.ReadFile(path); !strings.Contains(string(data), strings.TrimSpace(strings.Trim(tc.saved, "{}\n"))) {
					t.Fatalf("round %d: the other program's save is lost; the file holds:\n%s", round, data)
				}
			}
		})
	}
}

// Gemini CLI and Qwen Code allow comments in settings.json: the installs
// merge into such a file and keep every comment and blank line byte for
// byte (issue 17, item 12; they refused the file before).
func TestInstallKeepsJSONComments(t *testing.T) {
	const old = "// my Gemini settings\n{\n  /* the look */\n  \"ui\": {\"theme\": \"dark\"}, // dark, always\n\n  \"general\": {\n    \"vimMode\": true // of course\n  } // general\n  // more to come\n}\n"
	for _, tc := range []struct {
		name string
		args []string // the directory flag and DIR follow
		file string   // under DIR
		want string   // where the added text starts
	}{
		{"hooks install gemini", []string{"hooks", "install", "gemini", "--dir"}, ".gemini/settings.json", "  }, // general\n  \"hooks\": {\n"},
		{"mcp install qwen", []string{"mcp", "install", "qwen", "--command", "/opt/bin/agentmsg", "--home"}, ".qwen/settings.json", "  }, // general\n  \"mcpServers\": {\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, tc.file)
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
				t.Fatal(err)
			}
			f, out, errOut := testFactory(map[string]string{"AGENTMSG_HOME": t.TempDir()})
			if code := Run(context.Background(), f, append(append([]string{}, tc.args...), dir)); code != 0 {
				t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
			}
			data, _ := os.ReadFile(path)
			got := string(data)
			// All of the old text up to the comma after "general", all of
			// it after that comma's comment, and agentmsg's entry between.
			cut := strings.Index(old, "  } // general")
			if !strings.HasPrefix(got, old[:cut]+"  }, // general\n") || !strings.HasSuffix(got, "\n  // more to come\n}\n") ||
				!strings.Contains(got, tc.want) {
				t.Errorf("comments or blank lines changed; got:\n%s", got)
			}
		})
	}
}
