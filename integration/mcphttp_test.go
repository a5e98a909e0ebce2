package integration

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
)

// mcp install --http writes each CLI's own form of an HTTP server with a
// header, in place of the agentmsg entry a file held, keeping every other
// byte; it reports the token of the entry it replaced, so that it can be
// revoked, and makes a new file that holds a token 0600.
func TestInstallMCPHTTP(t *testing.T) {
	const url = "http://127.0.0.1:7676/mcp"
	for _, tc := range []struct {
		cli, file string
		// before and after surround agentmsg's entry, which held amt_old.
		before, old, after string
		// want is the entry with a token, shared with the variable.
		want, shared map[string]any
	}{
		{cli: "claude", file: ".mcp.json",
			before: "{\n  \"mcpServers\": {\n    \"github\": {\"command\": \"gh-mcp\"},\n    \"agentmsg\": ",
			old:    `{"type": "http", "url": "http://old/mcp", "headers": {"Authorization": "Bearer amt_old"}}`,
			after:  "\n  },\n  \"zeta\": [1, 2]\n}\n",
			want:   map[string]any{"type": "http", "url": url, "headers": map[string]any{"Authorization": "Bearer amt_new"}},
			shared: map[string]any{"type": "http", "url": url, "headers": map[string]any{"Authorization": "Bearer ${AGENTMSG_MCP_TOKEN}"}}},
		{cli: "gemini", file: ".gemini/settings.json",
			before: "{\n  // mine\n  \"theme\": \"dark\",\n  \"mcpServers\": {\n    \"agentmsg\": ",
			old:    `{"httpUrl": "http://old/mcp", "headers": {"Authorization": "Bearer amt_old"}}`,
			after:  " /* keep */\n  }\n}\n",
			want:   map[string]any{"httpUrl": url, "headers": map[string]any{"Authorization": "Bearer amt_new"}},
			shared: map[string]any{"httpUrl": url, "headers": map[string]any{"Authorization": "Bearer ${AGENTMSG_MCP_TOKEN}"}}},
		{cli: "qwen", file: ".qwen/settings.json",
			before: "{\n  \"mcpServers\": {\n    \"agentmsg\": ",
			old:    `{"command": "/old/agentmsg", "args": ["mcp"]}`,
			after:  ",\n    \"docs\": {\"httpUrl\": \"http://docs/mcp\"}\n  }\n}\n",
			want:   map[string]any{"httpUrl": url, "headers": map[string]any{"Authorization": "Bearer amt_new"}},
			shared: map[string]any{"httpUrl": url, "headers": map[string]any{"Authorization": "Bearer ${AGENTMSG_MCP_TOKEN}"}}},
		{cli: "codex", file: ".codex/config.toml",
			before: "# mine\nmodel = \"o3\"\n\n[mcp_servers.agentmsg]\n",
			old:    "url = \"http://old/mcp\"\nhttp_headers = { Authorization = \"Bearer amt_old\" }\n",
			after:  "\n# the docs server\n[mcp_servers.docs]\nurl = \"http://docs/mcp\"\n",
			want: map[string]any{"url": url, "http_headers": map[string]any{"Authorization": "Bearer amt_new"},
				"default_tools_approval_mode": "approve", "tool_timeout_sec": int64(180)},
			shared: map[string]any{"url": url, "bearer_token_env_var": "AGENTMSG_MCP_TOKEN",
				"default_tools_approval_mode": "approve", "tool_timeout_sec": int64(180)}},
	} {
		t.Run(tc.cli, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, filepath.FromSlash(tc.file))
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(tc.before+tc.old+tc.after), 0o640); err != nil {
				t.Fatal(err)
			}
			run := func(token string) MCPReport {
				t.Helper()
				rep, err := InstallMCP(MCPInstall{CLI: tc.cli, Dir: dir, Home: dir, Now: time.Now(),
					HTTP: &MCPHTTP{URL: url, Token: token, TokenEnv: "AGENTMSG_MCP_TOKEN"}})
				if err != nil {
					t.Fatal(err)
				}
				return rep
			}
			// A file that holds a token becomes its owner's alone (0600),
			// whatever it was, and stays so.
			check := func(want map[string]any) {
				t.Helper()
				data, _ := os.ReadFile(path)
				if !strings.HasPrefix(string(data), tc.before) || !strings.HasSuffix(string(data), tc.after) {
					t.Errorf("the rest of the file changed:\n%s", data)
				}
				if got := installedEntry(t, tc.cli, data); !reflect.DeepEqual(got, want) {
					t.Errorf("entry %#v\nwant %#v\n%s", got, want, data)
				}
				if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
					t.Errorf("mode %o, want 0600 (it was 0640, and held a token)", fi.Mode().Perm())
				}
			}

			rep := run("amt_new")
			check(tc.want)
			if wantOld := strings.Contains(tc.old, "amt_old"); !reflect.DeepEqual(rep.Replaced, map[bool][]string{true: {"amt_old"}}[wantOld]) {
				t.Errorf("replaced %q", rep.Replaced)
			}
			rep = run("")
			check(tc.shared)
			if !reflect.DeepEqual(rep.Replaced, []string{"amt_new"}) {
				t.Errorf("replaced %q, want amt_new", rep.Replaced)
			}
			if rep = run(""); rep.Written || rep.Replaced != nil {
				t.Errorf("a second install wrote (%v) or replaced %q", rep.Written, rep.Replaced)
			}

			// A new file: 0600 with a token in it, the usual 0644 without.
			for token, mode := range map[string]os.FileMode{"amt_x": 0o600, "": 0o644} {
				fresh := t.TempDir()
				if _, err := InstallMCP(MCPInstall{CLI: tc.cli, Dir: fresh, Home: fresh, Now: time.Now(),
					HTTP: &MCPHTTP{URL: url, Token: token, TokenEnv: "AGENTMSG_MCP_TOKEN"}}); err != nil {
					t.Fatal(err)
				}
				if fi, err := os.Stat(filepath.Join(fresh, filepath.FromSlash(tc.file))); err != nil || fi.Mode().Perm() != mode {
					t.Errorf("token %q: new file's mode %v (%v), want %o", token, fi.Mode().Perm(), err, mode)
				}
			}
		})
	}
}

// installedEntry is agentmsg's entry in a CLI's settings, decoded.
func installedEntry(t *testing.T, cli string, data []byte) map[string]any {
	t.Helper()
	if cli == "codex" {
		var doc struct {
			Servers map[string]map[string]any `toml:"mcp_servers"`
		}
		if _, err := toml.Decode(string(data), &doc); err != nil {
			t.Fatalf("%v\n%s", err, data)
		}
		return doc.Servers["agentmsg"]
	}
	plain, err := blankComments(data)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Servers map[string]map[string]any `json:"mcpServers"`
	}
	if err := json.Unmarshal(plain, &doc); err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	return doc.Servers["agentmsg"]
}

// A token is never written where another user could read it or swap the
// file: through a link into a directory others may write to, or into a
// file that is another user's. Nothing is written then.
func TestInstallMCPHTTPRefusesAHomeOthersControl(t *testing.T) {
	url := "http://127.0.0.1:7676/mcp"
	install := func(dir string) error {
		_, err := InstallMCP(MCPInstall{CLI: "claude", Dir: dir, Home: dir, Now: time.Now(),
			HTTP: &MCPHTTP{URL: url, Token: "amt_secret", TokenEnv: "AGENTMSG_MCP_TOKEN"}})
		return err
	}
	open := t.TempDir()
	os.Chmod(open, 0o777)
	theirs := filepath.Join(open, "m.json")
	os.WriteFile(theirs, []byte("{}\n"), 0o666)
	proj := t.TempDir()
	os.Symlink(theirs, filepath.Join(proj, ".mcp.json"))
	if err := install(proj); !errors.Is(err, ErrNotYours) {
		t.Errorf("through a link into a directory others may write to: %v", err)
	}
	if b, _ := os.ReadFile(theirs); strings.Contains(string(b), "amt_secret") {
		t.Error("the token was written there")
	}
	if os.Geteuid() == 0 {
		proj := t.TempDir()
		path := filepath.Join(proj, ".mcp.json")
		os.WriteFile(path, []byte("{}\n"), 0o644)
		os.Chown(path, 65534, 65534)
		if err := install(proj); !errors.Is(err, ErrNotYours) || !strings.Contains(err.Error(), "uid 65534") {
			t.Errorf("another user's file: %v", err)
		}
	}
	if err := install(t.TempDir()); err != nil {
		t.Errorf("a directory of one's own: %v", err)
	}
}
