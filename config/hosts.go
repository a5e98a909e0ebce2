package config

import (
	"net/url"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/BurntSushi/toml"
)

// HostsSettings is the [hosts] table: this machine as one host among many,
// joined through NATS (agentmsg serve runs the link).
type HostsSettings struct {
	// Name is this host's ("" is the machine's host name).
	Name string `toml:"name" json:"name,omitempty"`
	// NATS is the bus: "nats://host:4222" or "tls://a:4222,tls://b:4222"
	// for a cluster. "" is agentmsg's own embedded server: one machine.
	NATS string `toml:"nats" json:"nats,omitempty"`
	// NkeyFile holds this host's NATS user seed (agentmsg hosts add
	// writes one); CAFile the certificate authority the bus's TLS
	// certificates are checked against; TLSServerName the name they are
	// checked for, when the URL's host is not it (an SSH tunnel).
	NkeyFile      string `toml:"nkey_file" json:"nkey_file,omitempty"`
	CAFile        string `toml:"ca_file" json:"ca_file,omitempty"`
	TLSServerName string `toml:"tls_server_name" json:"tls_server_name,omitempty"`
	// Replicas of this host's stream on the bus (3 in a 3-node cluster).
	Replicas int `toml:"replicas" json:"replicas,omitempty"`
}

const hostsKeys = "name, nats, nkey_file, ca_file, tls_server_name, replicas"

var hostNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

func (l *Loaded) loadHosts(md toml.MetaData, prim toml.Primitive, path string) error {
	var h HostsSettings
	if err := md.PrimitiveDecode(prim, &h); err != nil {
		return invalidf(`%s: [hosts]: want name = "laptop", nats = "tls://host:4222", nkey_file = "/absolute/path", ca_file = "/absolute/path", replicas = 3: %v`, path, err)
	}
	for _, k := range md.Undecoded() {
		if len(k) > 0 && k[0] == "hosts" {
			return invalidf("%s: unknown key %q in [hosts]; known: %s", path, k.String(), hostsKeys)
		}
	}
	if h.Name != "" && !hostNameRE.MatchString(h.Name) {
		return invalidf(`%s: [hosts] name = %q: want lower-case letters, digits, '-' and '_', such as "laptop" or "build-1"`, path, h.Name)
	}
	for _, u := range strings.Split(h.NATS, ",") {
		if h.NATS == "" {
			break
		}
		p, err := url.Parse(strings.TrimSpace(u))
		if err != nil || (p.Scheme != "nats" && p.Scheme != "tls") || p.Host == "" {
			return invalidf(`%s: [hosts] nats = %q: want nats://HOST:PORT or tls://HOST:PORT, comma-separated for a cluster`, path, h.NATS)
		}
	}
	for key, f := range map[string]string{"nkey_file": h.NkeyFile, "ca_file": h.CAFile} {
		if f != "" && !filepath.IsAbs(f) {
			return invalidf(`%s: [hosts] %s = %q: want an absolute path`, path, key, f)
		}
	}
	if h.Replicas < 0 || h.Replicas > 5 {
		return invalidf(`%s: [hosts] replicas = %d: want 1 to 5 (a cluster's size, at most)`, path, h.Replicas)
	}
	l.Hosts = h
	return nil
}
