package cmd

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/spf13/cobra"

	"github.com/agentmsg/agentmsg/integration"
	"github.com/agentmsg/agentmsg/service"
)

func TestMCPArgs(t *testing.T) {
	for _, tc := range []struct {
		args         []string
		orchestrator bool
		code         int
	}{
		{args: nil},
		{args: []string{"--orchestrator"}, orchestrator: true},
		{args: []string{"extra"}, code: ExitUsage},
		{args: []string{"--bogus"}, code: ExitUsage},
	} {
		var got *MCPOptions
		code := parse(func(f *Factory) *cobra.Command {
			return newCmdMCP(f, func(ctx context.Context, o *MCPOptions) error { got = o; return nil })
		}, tc.args...)
		if code != tc.code {
			t.Errorf("%v: exit %d, want %d", tc.args, code, tc.code)
			continue
		}
		if code == ExitOK && got.Orchestrator != tc.orchestrator {
			t.Errorf("%v: orchestrator %v", tc.args, got.Orchestrator)
		}
	}
}

// agentmsg mcp serves as the caller AGENTMSG_FROM of AGENTMSG_TEAM, through
// the MCP server main hands in (main_test.go runs the real one), and puts
// the caller on its team's board.
func TestMCPServesTheCaller(t *testing.T) {
	home := t.TempDir()
	f, _, errOut := testFactory(map[string]string{"AGENTMSG_HOME": home, "AGENTMSG_TEAM": "alpha", "AGENTMSG_FROM": "ana"})
	var got service.Service
	var orchestrator bool
	f.ServeMCP = func(_ context.Context, svc *service.Service, orch bool, _ io.Reader, _ io.Writer) error {
		got, orchestrator = *svc, orch
		return nil
	}
	if code := Run(context.Background(), f, []string{"mcp", "--orchestrator"}); code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if got.Team != "alpha" || got.Name != "ana" || got.Sender != "ANA" || !orchestrator || got.Store == nil || got.Lifecycle == nil {
		t.Errorf("served with %+v, orchestrator %v", got, orchestrator)
	}
	board, _ := storeAt(home).Board("alpha")
	if len(board) != 1 || board[0].Agent != "ana" {
		t.Errorf("board: %+v", board)
	}
}

func TestMCPNeedsTeam(t *testing.T) {
	f, _, errOut := testFactory(map[string]string{"AGENTMSG_HOME": t.TempDir(), "AGENTMSG_FROM": "ana"})
	if code := Run(context.Background(), f, []string{"mcp"}); code != ExitUsage || !strings.Contains(errOut.String(), "which team") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}

// install runs agentmsg [global...] mcp install args... with a fixed
// --command and returns stdout.
func install(t *testing.T, env map[string]string, args ...string) (string, int) {
	t.Helper()
	f, out, errOut := testFactory(env)
	full := append(args, "--command", "/opt/bin/agentmsg")
	code := Run(context.Background(), f, full)
	if code != 0 {
		t.Logf("stderr: %s", errOut)
	}
	return out.String(), code
}

func TestMCPInstallPrints(t *testing.T) {
	out, code := install(t, nil, "--team", "alpha", "--from", "lead", "-S", "/tmp/s", "mcp", "install", "claude", "--orchestrator", "--print", "--dir", t.TempDir())
	if code != 0 {
		t.Fatal(code)
	}
	var doc struct {
		MCPServers map[string]integration.MCPServer `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	e := doc.MCPServers["agentmsg"]
	if e.Command != "/opt/bin/agentmsg" || strings.Join(e.Args, " ") != "-S /tmp/s mcp --orchestrator" ||
		e.Env["AGENTMSG_TEAM"] != "alpha" || e.Env["AGENTMSG_FROM"] != "lead" {
		t.Fatalf("entry: %+v", e)
	}
	if _, code := install(t, nil, "mcp", "install", "vscode", "--print"); code != ExitUsage {
		t.Errorf("unknown CLI: exit %d", code)
	}
}

func TestMCPInstallClaudeMerges(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ".mcp.json")
	old := `{"mcpServers": {"github": {"command": "gh-mcp", "args": []}, "agentmsg": {"command": "old"}}, "zeta": 1, "alpha": [1, 2]}`
	if err := os.WriteFile(path, []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	for range 2 { // twice: the second run replaces its own entry
		if _, code := install(t, nil, "mcp", "install", "claude", "--dir", dir); code != 0 {
			t.Fatal(code)
		}
	}
	data, _ := os.ReadFile(path)
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	servers := doc["mcpServers"].(map[string]any)
	if servers["github"].(map[string]any)["command"] != "gh-mcp" || doc["zeta"] != 1.0 || len(doc["alpha"].([]any)) != 2 {
		t.Fatalf("other entries changed:\n%s", data)
	}
	if a := servers["agentmsg"].(map[string]any); a["command"] != "/opt/bin/agentmsg" {
		t.Fatalf("agentmsg entry:\n%s", data)
	}
	// The members keep their order.
	s := string(data)
	if !(strings.Index(s, `"mcpServers"`) < strings.Index(s, `"zeta"`) && strings.Index(s, `"zeta"`) < strings.Index(s, `"alpha"`) &&
		strings.Index(s, `"github"`) < strings.Index(s, `"agentmsg"`)) {
		t.Errorf("order changed:\n%s", s)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", fi.Mode())
	}
}

func TestMCPInstallGeminiNewFile(t *testing.T) {
	home := t.TempDir()
	// --write, once needed, is still accepted.
	if _, code := install(t, nil, "mcp", "install", "gemini", "--write", "--home", home); code != 0 {
		t.Fatal(code)
	}
	data, err := os.ReadFile(filepath.Join(home, ".gemini", "settings.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		MCPServers map[string]integration.MCPServer `json:"mcpServers"`
	}
	if err := json.Unmarshal(data, &doc); err != nil || doc.MCPServers["agentmsg"].Args[0] != "mcp" {
		t.Fatalf("%v\n%s", err, data)
	}
}

func TestMCPInstallCodexMerges(t *testing.T) {
	home := t.TempDir()
	path := filepath.Join(home, ".codex", "config.toml")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	old := `# my settings
model = "o3"

[mcp_servers.agentmsg]
command = "old"
args = []

[mcp_servers.agentmsg.env]
X = "1"

[mcp_servers.docs]
command = "docs-mcp" # keep me
args = ["--fast"]
`
	if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, code := install(t, nil, "--team", "alpha", "mcp", "install", "codex", "--home", home); code != 0 {
			t.Fatal(code)
		}
	}
	data, _ := os.ReadFile(path)
	var doc struct {
		Model      string `toml:"model"`
		MCPServers map[string]struct {
			Command string            `toml:"command"`
			Args    []string          `toml:"args"`
			Env     map[string]string `toml:"env"`
			Timeout int               `toml:"tool_timeout_sec"`
			EnvVars []string          `toml:"env_vars"`
			Approve string            `toml:"default_tools_approval_mode"`
		} `toml:"mcp_servers"`
	}
	if _, err := toml.Decode(string(data), &doc); err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	a := doc.MCPServers["agentmsg"]
	if doc.Model != "o3" || doc.MCPServers["docs"].Command != "docs-mcp" || a.Command != "/opt/bin/agentmsg" ||
		a.Env["AGENTMSG_TEAM"] != "alpha" || a.Env["X"] != "" || a.Timeout < 120 {
		t.Fatalf("merged:\n%s", data)
	}
	// Codex passes an MCP server only what env_vars names, and asks before
	// each tool call unless approved (both seen live, e2e/mcplive).
	if !slices.Contains(a.EnvVars, "TMUX_PANE") || !slices.Contains(a.EnvVars, "AGENTMSG_HOME") || a.Approve != "approve" {
		t.Errorf("env_vars %q, default_tools_approval_mode %q:\n%s", a.EnvVars, a.Approve, data)
	}
	if !strings.Contains(string(data), "# my settings") || !strings.Contains(string(data), "# keep me") {
		t.Errorf("comments lost:\n%s", data)
	}
	if strings.Count(string(data), "[mcp_servers.agentmsg]") != 1 {
		t.Errorf("agentmsg twice:\n%s", data)
	}
}

// Every comment and blank line around agentmsg's table stays byte for
// byte (issue 17, item 12: the comment above the next table was deleted).
func TestMCPInstallCodexKeepsComments(t *testing.T) {
	home := t.TempDir()
	path := filepath.Join(home, ".codex", "config.toml")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	before := "# my settings\nmodel = \"o3\"\n\n[mcp_servers.agentmsg]\n"
	after := "\n# the docs server, keep it fast\n[mcp_servers.docs]\ncommand = \"docs-mcp\"\n\n# the end\n"
	if err := os.WriteFile(path, []byte(before+"command = \"old\"\nargs = []\n"+after), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, code := install(t, nil, "mcp", "install", "codex", "--home", home); code != 0 {
		t.Fatal(code)
	}
	data, _ := os.ReadFile(path)
	if !strings.HasPrefix(string(data), before) || !strings.HasSuffix(string(data), after) ||
		!strings.Contains(string(data), "command = \"/opt/bin/agentmsg\"") {
		t.Errorf("want agentmsg's table rewritten between\n%s\nand\n%s\ngot\n%s", before, after, data)
	}
}

func TestMCPInstallRefusesBadFile(t *testing.T) {
	home := t.TempDir()
	path := filepath.Join(home, ".gemini", "settings.json")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(`{"theme": `), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, code := install(t, nil, "mcp", "install", "gemini", "--home", home); code == 0 {
		t.Fatal("merged into a broken file")
	}
	if data, _ := os.ReadFile(path); string(data) != `{"theme": ` {
		t.Errorf("the broken file was changed: %s", data)
	}
}
