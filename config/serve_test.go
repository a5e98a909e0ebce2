package config

import (
	"errors"
	"strings"
	"testing"
)

// [serve] tcp and token_file are where agentmsg serve listens for MCP
// clients when its flags do not say; a mistake in them is an error that
// names the file, the key and what to write instead.
func TestServeTable(t *testing.T) {
	t.Parallel()
	l, _, err := load(t, "[serve]\nauto = true\ntcp = \"127.0.0.1:7676\"\ntoken_file = \"/home/ana/.config/agentmsg/serve-token\"\n", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := (ServeSettings{Auto: true, TCP: "127.0.0.1:7676", TokenFile: "/home/ana/.config/agentmsg/serve-token"}); l.Serve != want {
		t.Errorf("got %+v, want %+v", l.Serve, want)
	}
	for _, ok := range []string{"[::1]:80", "localhost:7676", "127.0.0.2:1"} {
		if _, _, err := load(t, "[serve]\ntcp = \""+ok+"\"\ntoken_file = \"/t\"\n", nil, nil); err != nil {
			t.Errorf("tcp = %q: %v", ok, err)
		}
	}
	for _, tc := range []struct{ body, want string }{
		{"[serve]\ntcp = \"7676\"\ntoken_file = \"/t\"\n", `tcp = "7676": want HOST:PORT`},
		{"[serve]\ntcp = \"127.0.0.1:http\"\ntoken_file = \"/t\"\n", "want a port from 1 to 65535"},
		{"[serve]\ntcp = \"127.0.0.1:0\"\ntoken_file = \"/t\"\n", "want a port from 1 to 65535"},
		{"[serve]\ntcp = \"0.0.0.0:7676\"\ntoken_file = \"/t\"\n", "want a loopback address"},
		{"[serve]\ntcp = \"example.com:7676\"\ntoken_file = \"/t\"\n", "--allow-remote"},
		{"[serve]\ntcp = \"127.0.0.1:7676\"\n", "tcp needs token_file"},
		{"[serve]\ntcp = \"127.0.0.1:7676\"\ntoken_file = \"token\"\n", `token_file = "token": want an absolute path`},
		{"[serve]\ntcp = 7676\n", `tcp = "127.0.0.1:PORT"`},
		{"[serve]\nport = 7676\n", `unknown key "serve.port" in [serve]; known: auto, tcp, token_file`},
	} {
		_, path, err := load(t, tc.body, nil, nil)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%q: got %v, want an invalid-config error naming the file and saying %q", tc.body, err, tc.want)
		}
	}
}
