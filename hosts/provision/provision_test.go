package provision

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentmsg/agentmsg/config"
)

// load is the config file at path as agentmsg reads it (no environment).
func load(t *testing.T, path string) config.HostsSettings {
	t.Helper()
	l, err := config.Load(nil, path)
	if err != nil {
		t.Fatalf("%s does not load: %v", path, err)
	}
	return l.Hosts
}

// A host's [hosts] table, as hosts add writes it on a box and prints it,
// reads back through the config loader as the settings it was made from,
// also a path with quotes, a backslash, a control character and more than
// ASCII (Go's %q, which wrote the table before, writes \x01, which TOML
// does not read).
func TestTableRoundTripsThroughTheLoader(t *testing.T) {
	t.Parallel()
	for _, tc := range []Table{
		{Name: "devbox", NATS: "tls://127.0.0.1:14222", TLSServerName: "nats.example", NkeyFile: "/home/me/.config/agentmsg/hosts/devbox.nk", CAFile: "/home/me/.config/agentmsg/hosts/bus-ca.pem"},
		{Name: "build-1", NATS: "tls://NATS-HOST:4222", NkeyFile: "/k/build-1.nk", CAFile: "/path/to/the/bus-ca.pem"},
		{Name: "box", NATS: "tls://127.0.0.1:1", NkeyFile: "/odd \"dir\" \\ \x01 é/box.nk"},
	} {
		text, err := tc.TOML()
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "config.toml")
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		got := load(t, path)
		want := config.HostsSettings{Name: tc.Name, NATS: tc.NATS, TLSServerName: tc.TLSServerName, NkeyFile: tc.NkeyFile, CAFile: tc.CAFile}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%q loads as %+v, want %+v", text, got, want)
		}
	}
	// The text a person reads: as hosts add printed it before it was
	// written by the encoder.
	text, _ := Table{Name: "devbox", NATS: "tls://127.0.0.1:14222", TLSServerName: "nats.example", NkeyFile: "/k/devbox.nk"}.TOML()
	if want := "[hosts]\nname = \"devbox\"\nnats = \"tls://127.0.0.1:14222\"\ntls_server_name = \"nats.example\"\nnkey_file = \"/k/devbox.nk\"\n"; text != want {
		t.Errorf("TOML() = %q, want %q", text, want)
	}
}

// Tunnels appended to a config file that has a [hosts] table (and other
// settings) already read back, each, and leave the rest as it was.
func TestAddTunnelRoundTripsThroughTheLoader(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "config.toml")
	before := "# mine\nfrom = \"lead\"\n\n[hosts]\nname = \"laptop\"\nnats = \"tls://a:4222,tls://b:4222\"\n"
	if err := os.WriteFile(path, []byte(before), 0o600); err != nil {
		t.Fatal(err)
	}
	tunnels := []config.Tunnel{
		{Host: "devbox", SSH: "me@devbox.example", Port: 14222},
		{Host: "box-2", SSH: "box \"2\"", Port: 1, SSHConfig: "/home/me/.ssh/config box"},
	}
	for _, tn := range tunnels {
		if err := AddTunnel(path, tn); err != nil {
			t.Fatal(err)
		}
	}
	got := load(t, path)
	if !reflect.DeepEqual(got.Tunnels, tunnels) || got.Name != "laptop" {
		t.Errorf("loads as %+v, want the tunnels %+v", got, tunnels)
	}
	b, _ := os.ReadFile(path)
	if !strings.HasPrefix(string(b), before) {
		t.Errorf("the file's own text changed:\n%s", b)
	}
	if want := "\n[[hosts.tunnel]]\nhost = \"devbox\"\nssh = \"me@devbox.example\"\nport = 14222\n\n[[hosts.tunnel]]\n"; !strings.Contains(string(b), want) {
		t.Errorf("the file reads\n%s\nwant it to hold\n%s", b, want)
	}
	// No config file yet: made, private.
	fresh := filepath.Join(t.TempDir(), "config.toml")
	if err := AddTunnel(fresh, tunnels[0]); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(fresh); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("%s: %v %v", fresh, fi, err)
	}
}

// A key is written once, private, and its public key read back.
func TestWriteKeyOnce(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "hosts")
	seed, public, keyFile, err := WriteKey(dir, "build-1")
	if err != nil {
		t.Fatal(err)
	}
	if keyFile != filepath.Join(dir, "build-1.nk") || !strings.HasPrefix(string(seed), "SU") || !strings.HasPrefix(public, "U") {
		t.Fatalf("WriteKey = %q %q %q", seed, public, keyFile)
	}
	if fi, err := os.Stat(keyFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("%s: %v %v", keyFile, fi, err)
	}
	if got, err := PublicKey(keyFile); err != nil || got != public {
		t.Errorf("PublicKey = %q, %v; want %q", got, err, public)
	}
	if _, _, again, err := WriteKey(dir, "build-1"); !errors.Is(err, ErrKeyExists) || again != keyFile {
		t.Errorf("a second WriteKey: %q, %v; want ErrKeyExists", again, err)
	}
	if b, _ := os.ReadFile(keyFile); string(b) != string(seed)+"\n" {
		t.Error("a second WriteKey overwrote the key")
	}
}
