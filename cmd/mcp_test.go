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
	"time"

	"github.com/BurntSushi/toml"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/agentmsg/agentmsg/integration"
	"github.com/agentmsg/agentmsg/mailbox"
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

// agentmsg mcp serves the tools on its stdin and stdout, as the caller
// AGENTMSG_FROM of AGENTMSG_TEAM, and ends when the client closes stdin.
func TestMCPServesStdio(t *testing.T) {
	home := t.TempDir()
	store := mailbox.New(home)
	f, _, errOut := testFactory(map[string]string{"AGENTMSG_HOME": home, "AGENTMSG_TEAM": "alpha", "AGENTMSG_FROM": "ana"})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	f.IO.In, f.IO.Out = inR, outW
	done := make(chan int, 1)
	go func() {
		code := Run(context.Background(), f, []string{"mcp"})
		outW.Close()
		done <- code
	}()

	b, err := store.Box("alpha", "ana")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Append(mailbox.Envelope{ID: "MSG_LEAD_0000aaaa", From: "lead", To: "ana", Type: mailbox.TypeText, Content: "hello"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).
		Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "check_messages", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("check_messages: %v %+v", err, res)
	}
	raw, _ := json.Marshal(res.StructuredContent)
	if !strings.Contains(string(raw), `"content":"hello"`) || !strings.Contains(string(raw), `"message_id":"MSG_LEAD_0000aaaa"`) {
		t.Fatalf("check_messages: %s", raw)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 6 {
		t.Fatalf("agent mode lists %d tools (%v)", len(tools.Tools), err)
	}
	// The caller is on the board, so that others can message it by name.
	board, _ := store.Board("alpha")
	if len(board) != 1 || board[0].Agent != "ana" {
		t.Errorf("board: %+v", board)
	}
	cs.Close()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d; stderr: %s", code, errOut)
		}
	case <-ctx.Done():
		t.Fatal("agentmsg mcp did not end when its stdin closed")
	}
}

// A malformed line gets a JSON-RPC error and the server reads on; when
// stdin ends right after the requests, each is answered before agentmsg
// mcp exits (issue 10, item 14).
func TestMCPMalformedLinesAndEarlyEOF(t *testing.T) {
	lines := []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`garbage`,
		`{`,
		`{}`,
		"\xff\xfe\x00",
		`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`,
		`[{"jsonrpc":"2.0","id":7,"method":"ping"}]`,
		`[]`,
		`   `,
		`{"jsonrpc":"2.0","id":null,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`,
		`{"jsonrpc":"1.0","id":"v","method":"ping"}`,
		`{"jsonrpc":"2.0","id":"p","method":"tools/list","params":"x"}`,
		`{"jsonrpc":"2.0","id":"m","method":5}`,
		`{"jsonrpc":"2.0","id":"r"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}` + "\r",
		`{"jsonrpc":"2.0","id":"s","method":"ping"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"check_messages","arguments":{}}}`,
	}
	f, out, errOut := testFactory(map[string]string{"AGENTMSG_HOME": t.TempDir(), "AGENTMSG_TEAM": "alpha", "AGENTMSG_FROM": "ana"})
	f.IO.In = strings.NewReader(strings.Join(lines, "\n") + "\n")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if code := Run(ctx, f, []string{"mcp"}); code != 0 || ctx.Err() != nil {
		t.Fatalf("exit %d (%v); stderr: %s", code, ctx.Err(), errOut)
	}
	type reply struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	byID := map[string]reply{}
	var anonymous []int
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var r reply
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("not a JSON-RPC reply: %q", l)
		}
		if string(r.ID) == "null" {
			if r.Error == nil {
				t.Fatalf("a reply without id and error: %q", l)
			}
			anonymous = append(anonymous, r.Error.Code)
			continue
		}
		byID[string(r.ID)] = r
	}
	want := []int{-32700, -32700, -32600, -32700, -32600, -32600, -32600, -32600, -32600}
	if !slices.Equal(anonymous, want) {
		t.Errorf("errors without an id: %v, want %v", anonymous, want)
	}
	for id, code := range map[string]int{`"v"`: -32600, `"p"`: -32600, `"m"`: -32600, `"r"`: -32600} {
		if r := byID[id]; r.Error == nil || r.Error.Code != code {
			t.Errorf("request %s: %+v, want error %d", id, r, code)
		}
	}
	for _, id := range []string{"1", "2", `"s"`, "3"} {
		if r, ok := byID[id]; !ok || r.Error != nil || len(r.Result) == 0 {
			t.Errorf("request %s was not answered with a result: %+v", id, r)
		}
	}
	if tools := string(byID["2"].Result); !strings.Contains(tools, `"wait_for_message"`) {
		t.Errorf("tools/list: %s", tools)
	}
	if len(byID) != 8 {
		t.Errorf("%d replies with an id, want 8:\n%s", len(byID), out)
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
	if !strings.Contains(string(data), "# my settings") || !strings.Contains(string(data), "# keep me") {
		t.Errorf("comments lost:\n%s", data)
	}
	if strings.Count(string(data), "[mcp_servers.agentmsg]") != 1 {
		t.Errorf("agentmsg twice:\n%s", data)
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
