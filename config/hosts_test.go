package config

import (
	"errors"
	"strings"
	"testing"
)

// [hosts] joins this machine to a bus; each mistake names the file, the
// key and what to write instead.
func TestHostsTable(t *testing.T) {
	t.Parallel()
	body := `[hosts]
name = "build-1"
nats = "tls://a:4222,tls://b:4222"
nkey_file = "/k/build-1.nk"
ca_file = "/k/ca.pem"
replicas = 3

[[hosts.tunnel]]
host = "box"
ssh = "me@box"
port = 14222
`
	l, _, err := load(t, body, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if h := l.Hosts; h.Name != "build-1" || h.Replicas != 3 || len(h.Tunnels) != 1 || h.Tunnels[0].Port != 14222 || h.Tunnels[0].SSH != "me@box" {
		t.Errorf("got %+v", h)
	}
	for _, tc := range []struct{ body, want string }{
		{"[hosts]\nname = \"Build.1\"\n", `name = "Build.1": want lower-case letters`},
		{"[hosts]\nnats = \"http://a:4222\"\n", "want nats://HOST:PORT or tls://HOST:PORT"},
		{"[hosts]\nnkey_file = \"k.nk\"\n", `nkey_file = "k.nk": want an absolute path`},
		{"[hosts]\nreplicas = 7\n", "want 1 to 5"},
		{"[hosts]\nport = 1\n", `unknown key "hosts.port" in [hosts]`},
		{"[hosts]\nnats = \"tls://a:4222\"\n[[hosts.tunnel]]\nhost = \"box\"\nssh = \"me@box\"\n", "want port = 1 to 65535"},
		{"[hosts]\nnats = \"tls://a:4222\"\n[[hosts.tunnel]]\nhost = \"box\"\nssh = \"-oProxyCommand=x\"\nport = 1\n", `want ssh = "user@box"`},
		{"[[hosts.tunnel]]\nhost = \"box\"\nssh = \"me@box\"\nport = 1\n", "needs [hosts] nats"},
	} {
		_, path, err := load(t, tc.body, nil, nil)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%q: got %v, want an invalid-config error naming the file and saying %q", tc.body, err, tc.want)
		}
	}
}
