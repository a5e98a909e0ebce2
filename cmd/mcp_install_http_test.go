package cmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmsg/agentmsg/identity"
)

// httpEnv is an environment whose config file says [serve] tcp (body ""
// for none), and whose mailbox is its own.
func httpEnv(t *testing.T, body string) map[string]string {
	t.Helper()
	cfg := t.TempDir()
	if err := os.MkdirAll(filepath.Join(cfg, "agentmsg"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfg, "agentmsg", "config.toml"), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return map[string]string{"XDG_CONFIG_HOME": cfg, "AGENTMSG_HOME": t.TempDir(), "HOME": t.TempDir()}
}

const serveTCP = "[serve]\ntcp = \"127.0.0.1:7676\"\ntoken_file = \"/t/token\"\n"

func TestMCPInstallHTTPUsage(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		config string
		args   []string
		want   string
	}{
		{"", []string{"mcp", "install", "claude", "--http"}, `[serve] tcp = "127.0.0.1:7676"`},
		{"", []string{"mcp", "install", "claude", "--http"}, "not on the daemon's Unix socket"},
		{serveTCP, []string{"mcp", "install", "claude", "--url", "http://127.0.0.1:1/mcp"}, "--url is for --http"},
		{serveTCP, []string{"mcp", "install", "claude", "--http", "--url", "127.0.0.1:1"}, "want the daemon's endpoint"},
		{serveTCP, []string{"--team", "alpha", "mcp", "install", "claude", "--http"}, "both --team and --from"},
		{serveTCP, []string{"--from", "ana", "mcp", "install", "codex", "--http"}, "AGENTMSG_MCP_TOKEN"},
	} {
		env := httpEnv(t, tc.config)
		f, _, errOut := testFactory(env)
		code := Run(t.Context(), f, append(tc.args, "--dir", dir, "--command", "/opt/bin/agentmsg"))
		if code != ExitUsage || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("%v: exit %d, want %d saying %q:\n%s", tc.args, code, ExitUsage, tc.want, errOut)
		}
		if _, err := os.Stat(filepath.Join(dir, ".mcp.json")); err == nil {
			t.Fatalf("%v: wrote .mcp.json", tc.args)
		}
	}
}

// With --team and --from, the entry holds a new token of that agent (the
// file is 0600 when made); installing again revokes the token the entry
// held. Without them, the entry refers to AGENTMSG_MCP_TOKEN. The output
// says the file holds a secret, and never shows the token.
func TestMCPInstallHTTPToken(t *testing.T) {
	env := httpEnv(t, serveTCP)
	tokens := &identity.Tokens{Path: identity.DefaultPath(env["AGENTMSG_HOME"])}
	dir := t.TempDir()
	path := filepath.Join(dir, ".mcp.json")
	entry := func() (url, auth string) {
		t.Helper()
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Servers map[string]struct {
				Type, URL string
				Headers   map[string]string
			} `json:"mcpServers"`
		}
		if err := json.Unmarshal(data, &doc); err != nil || doc.Servers["agentmsg"].Type != "http" {
			t.Fatalf("%v\n%s", err, data)
		}
		return doc.Servers["agentmsg"].URL, doc.Servers["agentmsg"].Headers["Authorization"]
	}
	run := func(args ...string) string {
		t.Helper()
		f, out, errOut := testFactory(env)
		if code := Run(t.Context(), f, append(args, "--dir", dir)); code != ExitOK {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		return out.String()
	}

	// --print issues nothing and writes nothing.
	out := run("--team", "alpha", "--from", "lead", "mcp", "install", "claude", "--http", "--print", "--orchestrator")
	if !strings.Contains(out, "<a new token of alpha/lead, made when written>") {
		t.Errorf("--print shows:\n%s", out)
	}
	if _, err := os.Stat(path); err == nil {
		t.Fatal("--print wrote the file")
	}
	if _, err := os.Stat(tokens.Path); err == nil {
		t.Fatal("--print issued a token")
	}

	out = run("--team", "alpha", "--from", "lead", "mcp", "install", "claude", "--http", "--orchestrator")
	url, auth := entry()
	first, ok := strings.CutPrefix(auth, "Bearer amt_")
	first = "amt_" + first
	if g, found := tokens.Lookup(first); !ok || !found || g.Team != "alpha" || g.Name != "lead" || !g.Orchestrator {
		t.Fatalf("Authorization %q: grant %+v %v", auth, g, found)
	}
	if url != "http://127.0.0.1:7676/mcp" {
		t.Errorf("url %q, want [serve] tcp's", url)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("new file's mode %o, want 0600", fi.Mode().Perm())
	}
	if strings.Contains(out, first) || !strings.Contains(out, path+" now holds alpha/lead's token, a secret") {
		t.Errorf("output shows the token or does not say the file holds one:\n%s", out)
	}

	out = run("--team", "alpha", "--from", "lead", "mcp", "install", "claude", "--http", "--url", "http://localhost:9/mcp")
	url, auth = entry()
	second := strings.TrimPrefix(auth, "Bearer ")
	if _, found := tokens.Lookup(first); found {
		t.Error("the replaced entry's token still works")
	}
	if g, found := tokens.Lookup(second); !found || g.Name != "lead" || g.Orchestrator || url != "http://localhost:9/mcp" {
		t.Errorf("second entry %q %q: %+v %v", url, auth, g, found)
	}
	if !strings.Contains(out, "revoked alpha/lead's token, which the replaced entry held") || strings.Contains(out, second) || strings.Contains(out, first) {
		t.Errorf("output:\n%s", out)
	}

	// Shared: the variable, and the last agent's token revoked.
	out = run("mcp", "install", "claude", "--http")
	if _, auth = entry(); auth != "Bearer ${AGENTMSG_MCP_TOKEN}" {
		t.Errorf("shared entry's Authorization %q", auth)
	}
	if _, found := tokens.Lookup(second); found || !strings.Contains(out, "AGENTMSG_MCP_TOKEN: agentmsg mcp token TEAM NAME makes one") {
		t.Errorf("token still works (%v), or output:\n%s", found, out)
	}
}

// A file others could read is its owner's alone once it holds a token
// (0600; agentmsg keeps a file's mode otherwise), and the output says so.
func TestMCPInstallHTTPSaysWhoCanRead(t *testing.T) {
	env := httpEnv(t, serveTCP)
	path := filepath.Join(env["HOME"], ".gemini", "settings.json")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("{\"theme\": \"dark\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, out, errOut := testFactory(env)
	if code := Run(t.Context(), f, []string{"--team", "alpha", "--from", "ana", "mcp", "install", "gemini", "--http"}); code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 || !strings.Contains(out.String(), "its mode is 600: only you can read it") {
		t.Errorf("mode %o; output:\n%s", fi.Mode().Perm(), out)
	}
	data, _ := os.ReadFile(path)
	if !strings.Contains(string(data), `"httpUrl": "http://127.0.0.1:7676/mcp"`) || !strings.Contains(string(data), `"theme": "dark"`) {
		t.Errorf("file:\n%s", data)
	}
}

// Going back to a command entry revokes the token the HTTP entry held.
func TestMCPInstallStdioRevokesHTTPToken(t *testing.T) {
	env := httpEnv(t, serveTCP)
	tokens := &identity.Tokens{Path: identity.DefaultPath(env["AGENTMSG_HOME"])}
	home := t.TempDir()
	for _, args := range [][]string{
		{"--team", "alpha", "--from", "ana", "mcp", "install", "codex", "--http", "--home", home},
		{"mcp", "install", "codex", "--home", home, "--command", "/opt/bin/agentmsg"},
	} {
		f, out, errOut := testFactory(env)
		if code := Run(t.Context(), f, args); code != ExitOK {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		if args[len(args)-1] == "/opt/bin/agentmsg" && !strings.Contains(out.String(), "revoked alpha/ana's token") {
			t.Errorf("output:\n%s", out)
		}
	}
	if n, err := tokens.Revoke("alpha", "ana"); n != 0 || err != nil {
		t.Errorf("%d of ana's tokens were still there (%v)", n, err)
	}
}

// When the file cannot be merged, the token made for it is revoked, and
// the entry shown to add by hand says how to get one.
func TestMCPInstallHTTPRevokesTokenNotWritten(t *testing.T) {
	env := httpEnv(t, serveTCP)
	tokens := &identity.Tokens{Path: identity.DefaultPath(env["AGENTMSG_HOME"])}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ".mcp.json"), []byte(`{"theme": `), 0o600); err != nil {
		t.Fatal(err)
	}
	f, _, errOut := testFactory(env)
	if code := Run(t.Context(), f, []string{"--team", "alpha", "--from", "ana", "mcp", "install", "claude", "--http", "--dir", dir}); code == ExitOK {
		t.Fatal("merged into a broken file")
	}
	if !strings.Contains(errOut.String(), `"Authorization": "Bearer <the token agentmsg mcp token alpha ana prints>"`) || strings.Contains(errOut.String(), "amt_") {
		t.Errorf("stderr:\n%s", errOut)
	}
	if n, err := tokens.Revoke("alpha", "ana"); n != 0 || err != nil {
		t.Errorf("the token made for the file is still there (%d, %v)", n, err)
	}
}
