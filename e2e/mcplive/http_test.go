package mcplive

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	claudeharness "github.com/agentmsg/agentmsg/e2e/claude"
	clisharness "github.com/agentmsg/agentmsg/e2e/clis"
	"github.com/agentmsg/agentmsg/e2e/fakeapi"
	"github.com/agentmsg/agentmsg/e2e/harness"
)

// Real agent CLIs reach the daemon's MCP endpoint over TCP with the entry
// `agentmsg mcp install --http` wrote, and each is the agent its token
// says, whatever its session or environment claim:
//
//   - Claude Code with the entry of one agent (--team mcp --from ana: its
//     token in the header), in session agent-mcp-carol, with
//     AGENTMSG_FROM=mallory in its environment, calls send_message: bob
//     (a stand-in) gets it from ana;
//   - Codex with the shared entry (bearer_token_env_var) and dan's token
//     in AGENTMSG_MCP_TOKEN, in session agent-mcp-erin: bob gets it from
//     dan;
//   - Gemini CLI and Qwen Code with the shared entry (${AGENTMSG_MCP_TOKEN}
//     in the header): `mcp list` connects with dan's token, and not with
//     a made-up one (the fake API cannot script their tool calls).
func TestMCPOverHTTPFromRealCLIs(t *testing.T) {
	claude, codex := executables(t)
	s := harness.NewTestServer(t)
	addr, err := s.ServeTCP()
	if err != nil {
		t.Fatal(err)
	}
	endpoint := "http://" + addr + "/mcp"
	bob := s.StartAgent("agent-" + team + "-bob")
	root, err := os.MkdirTemp("", "amh")
	must(t, err)
	t.Cleanup(func() { _ = harness.RemoveSettled(root) })
	n := nonce(t)

	// Claude Code: the entry holds ana's token.
	claudeAPI := startAPI(t, root, "claude")
	kick, fromAna := "KICK-"+n, "FROM-ANA-"+n
	must(t, claudeAPI.Set(fakeapi.Control{Scripts: []fakeapi.Script{{Marker: kick,
		Calls: []fakeapi.Call{{Tool: "agentmsg__send_message", Args: map[string]any{"to": "bob", "content": fromAna}}}, Reply: "sent"}}}))
	anaRoot := filepath.Join(root, "ana")
	anaWork := filepath.Join(anaRoot, "work")
	must(t, os.MkdirAll(filepath.Join(anaWork, ".claude"), 0o755))
	must(t, os.WriteFile(filepath.Join(anaWork, ".claude", "settings.json"),
		[]byte(`{"enabledMcpjsonServers": ["agentmsg"], "permissions": {"allow": ["mcp__agentmsg"]}}`+"\n"), 0o644))
	res := s.Run("--team", team, "--from", "ana", "mcp", "install", "claude", "--http", "--dir", anaWork)
	if res.Code != 0 || !strings.Contains(res.Stdout, "now holds mcp/ana's token") {
		t.Fatalf("mcp install claude --http: %s", res)
	}
	entry, _ := os.ReadFile(filepath.Join(anaWork, ".mcp.json"))
	t.Logf(".mcp.json:\n%s", regexp.MustCompile(`amt_[0-9a-f]+`).ReplaceAll(entry, []byte("amt_…")))
	impostor := script(t, root, "claude.sh", "export AGENTMSG_FROM=mallory AGENTMSG_TEAM=evil\nexec "+q(claude)+` "$@"`)
	carol, err := claudeharness.Start(claudeharness.Options{Claude: impostor, Socket: s.Socket, Root: anaRoot,
		APIURL: claudeAPI.URL(), Session: "agent-" + team + "-carol", StartTimeout: startTimeout})
	must(t, err)
	t.Cleanup(func() { _ = carol.Close() })

	// Codex: the shared entry, dan's token in its environment.
	res = s.Run("mcp", "token", team, "dan")
	if res.Code != 0 {
		t.Fatalf("mcp token: %s", res)
	}
	dan := strings.TrimSpace(res.Stdout)
	codexAPI := startAPI(t, root, "codex")
	kick2, fromDan := "KICK2-"+n, "FROM-DAN-"+n
	must(t, codexAPI.Set(fakeapi.Control{Scripts: []fakeapi.Script{{Marker: kick2,
		Calls: []fakeapi.Call{{Tool: "agentmsg__send_message", Args: map[string]any{"to": "bob", "content": fromDan}}}, Reply: "sent"}}}))
	// The harness writes config.toml as it starts Codex: the pane's
	// command adds agentmsg's entry, then runs Codex.
	install := filepath.Join(root, "codex-install.log")
	codexExe := script(t, root, "codex.sh", fmt.Sprintf(`%s mcp install codex --http --url %s --home "$HOME" >%s 2>&1 || exit 1
export AGENTMSG_MCP_TOKEN=%s AGENTMSG_FROM=mallory AGENTMSG_TEAM=evil
exec %s "$@"`, q(s.Bins.Agentmsg), q(endpoint), q(install), q(dan), q(codex)))
	erin, err := clisharness.Start(clisharness.Options{CLI: clisharness.Codex, Exe: codexExe, Socket: s.Socket,
		Root: filepath.Join(root, "erin"), APIURL: codexAPI.URL(), Session: "agent-" + team + "-erin", StartTimeout: startTimeout})
	if err != nil {
		log, _ := os.ReadFile(install)
		t.Fatalf("%v\nmcp install codex:\n%s", err, log)
	}
	t.Cleanup(func() { _ = erin.Close() })
	cfg, _ := os.ReadFile(filepath.Join(root, "erin", "home", ".codex", "config.toml"))
	t.Logf("config.toml:\n%s", cfg)

	sendTo := func(to, text string) {
		t.Helper()
		if res := s.Run("send", team, to, text); res.Code != 0 {
			t.Fatalf("send %s: %s", to, res)
		}
	}
	sendTo("carol", kick)
	anaID := field(t, waitToolResult(t, claudeAPI, "mcp__agentmsg__send_message").Result, "message_id")
	sendTo("erin", kick2)
	danID := field(t, waitToolResult(t, codexAPI, "mcp__agentmsg__send_message").Result, "message_id")

	got := bob.WaitReceived(2, stepTimeout)
	want := map[string]string{anaID + ": " + fromAna: "ana", danID + ": " + fromDan: "dan"}
	for _, prompt := range got {
		if _, ok := want[prompt]; !ok {
			t.Errorf("bob received %q, want only %q", prompt, want)
		}
	}
	for prompt, from := range want {
		if !strings.HasPrefix(prompt, "MSG_"+strings.ToUpper(from)+"_") {
			t.Errorf("message %q is not from %s", prompt, from)
		}
	}
	if len(got) != 2 {
		t.Errorf("bob received %d messages, want 2: %q", len(got), got)
	}

	for _, cli := range []string{clisharness.Gemini, clisharness.Qwen} {
		t.Run(cli+" mcp list", func(t *testing.T) { mcpList(t, s, cli, dan) })
	}
}

// mcpList checks that cli, with the shared entry mcp install --http
// writes, connects to the daemon's MCP endpoint with token in
// AGENTMSG_MCP_TOKEN, and not with a made-up one.
func mcpList(t *testing.T, s *harness.TestServer, cli, token string) {
	exe, err := clisharness.Find(cli)
	if err != nil {
		t.Skip(err)
	}
	home := filepath.Join(t.TempDir(), "home")
	work := filepath.Join(filepath.Dir(home), "work")
	must(t, os.MkdirAll(work, 0o755))
	if res := s.Run("mcp", "install", cli, "--http", "--home", home); res.Code != 0 {
		t.Fatalf("mcp install %s --http: %s", cli, res)
	}
	// Gemini CLI connects to no server of an untrusted folder's.
	must(t, os.MkdirAll(filepath.Join(home, ".gemini"), 0o755))
	must(t, os.WriteFile(filepath.Join(home, ".gemini", "trustedFolders.json"), []byte(fmt.Sprintf("{%q: \"TRUST_FOLDER\"}\n", work)), 0o644))
	for tok, want := range map[string]string{token: "- Connected", "amt_madeup": "- Disconnected"} {
		ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
		cmd := exec.CommandContext(ctx, exe, "mcp", "list")
		cmd.Dir = work
		cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "TERM=dumb", "NO_COLOR=1", "AGENTMSG_MCP_TOKEN=" + tok}
		out, err := cmd.CombinedOutput()
		cancel()
		t.Logf("%s mcp list with token %.8s…: %v\n%s", cli, tok, err, out)
		if !strings.Contains(string(out), "agentmsg: http://") || !strings.Contains(string(out), want) {
			t.Errorf("%s mcp list with token %.8s…: want agentmsg %s", cli, tok, want)
		}
	}
}

// startAPI starts a fake model API that logs into dir.
func startAPI(t *testing.T, dir, name string) *fakeapi.Server {
	t.Helper()
	api, err := fakeapi.New(fakeapi.Config{LogPath: filepath.Join(dir, name+"-api.jsonl")})
	if err == nil {
		err = api.Start()
	}
	must(t, err)
	t.Cleanup(func() { _ = api.Close() })
	return api
}

// script writes an executable shell script into dir.
func script(t *testing.T, dir, name, body string) string {
	p := filepath.Join(dir, name)
	must(t, os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755))
	return p
}

// waitToolResult waits for the first result of a call of tool in api's log.
func waitToolResult(t *testing.T, api *fakeapi.Server, tool string) fakeapi.Record {
	t.Helper()
	for deadline := time.Now().Add(stepTimeout); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		for _, r := range api.Records() {
			if r.Kind == fakeapi.KindToolResult && r.Tool == tool {
				t.Logf("%s returned %s", tool, r.Result)
				return r
			}
		}
	}
	t.Fatalf("no result of %s within %v:\n%s", tool, stepTimeout, dump(api))
	return fakeapi.Record{}
}
