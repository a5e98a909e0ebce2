package cmd

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentmsg/agentmsg/app"
)

// agentmsg serve listens where [serve] tcp and token_file say, unless its
// flags say otherwise.
func TestServeTakesTCPFromConfig(t *testing.T) {
	cfg := t.TempDir()
	if err := os.MkdirAll(filepath.Join(cfg, "agentmsg"), 0o700); err != nil {
		t.Fatal(err)
	}
	body := "[serve]\ntcp = \"127.0.0.1:7676\"\ntoken_file = \"/cfg/token\"\n"
	if err := os.WriteFile(filepath.Join(cfg, "agentmsg", "config.toml"), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args           []string
		tcp, tokenFile string
	}{
		{nil, "127.0.0.1:7676", "/cfg/token"},
		{[]string{"--tcp", "127.0.0.1:9000"}, "127.0.0.1:9000", "/cfg/token"},
		{[]string{"--tcp", "[::1]:9000", "--token-file", "/flag/token"}, "[::1]:9000", "/flag/token"},
	} {
		f, _, errOut := testFactory(map[string]string{"XDG_CONFIG_HOME": cfg, "AGENTMSG_HOME": t.TempDir()})
		var got ServeOptions
		f.Serve = func(_ context.Context, _ app.Env, o ServeOptions) error { got = o; return nil }
		if code := Run(context.Background(), f, append([]string{"serve"}, tc.args...)); code != ExitOK {
			t.Fatalf("%v: exit %d: %s", tc.args, code, errOut)
		}
		if got.TCP != tc.tcp || got.TokenFile != tc.tokenFile {
			t.Errorf("%v: serving on %q with %q, want %q with %q", tc.args, got.TCP, got.TokenFile, tc.tcp, tc.tokenFile)
		}
	}
}
