package config

import (
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/agentmsg/agentmsg/target"
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
	// Replicas of the hosts' streams on the bus (3 in a 3-node cluster):
	// what hosts add makes them with (and a link on a bus without users).
	Replicas int `toml:"replicas" json:"replicas,omitempty"`
	// AdminNkeyFile holds the operator's NATS user seed (agentmsg hosts
	// init writes one): hosts add makes the new host's stream with it. Only
	// on the operator's machine; a daemon never uses it.
	AdminNkeyFile string `toml:"admin_nkey_file" json:"admin_nkey_file,omitempty"`
	// Tunnels carry the link of boxes reachable only by SSH ([[hosts.tunnel]]).
	Tunnels []Tunnel `toml:"tunnel" json:"tunnels,omitempty"`
}

// Tunnel is a box that reaches the bus only through an SSH connection this
// host keeps: 127.0.0.1:Port on the box leads to the bus.
type Tunnel struct {
	// Host is the box's host name on the bus.
	Host string `toml:"host" json:"host"`
	// SSH is the destination as ssh takes it ("user@box", or a Host of
	// ssh_config); the user's keys, agent and config apply.
	SSH string `toml:"ssh" json:"ssh"`
	// Port on the box's 127.0.0.1.
	Port int `toml:"port" json:"port"`
	// SSHConfig, when set, is the ssh_config file to use (ssh -F).
	SSHConfig string `toml:"ssh_config" json:"ssh_config,omitempty"`
}

const hostsKeys = "name, nats, nkey_file, ca_file, tls_server_name, replicas, admin_nkey_file, [[hosts.tunnel]] (host, ssh, port, ssh_config)"

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
	if h.Name != "" && target.CheckHost(h.Name) != nil {
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
	for key, f := range map[string]string{"nkey_file": h.NkeyFile, "ca_file": h.CAFile, "admin_nkey_file": h.AdminNkeyFile} {
		if f != "" && !filepath.IsAbs(f) {
			return invalidf(`%s: [hosts] %s = %q: want an absolute path`, path, key, f)
		}
	}
	if h.Replicas < 0 || h.Replicas > 5 {
		return invalidf(`%s: [hosts] replicas = %d: want 1 to 5 (a cluster's size, at most)`, path, h.Replicas)
	}
	for _, t := range h.Tunnels {
		switch {
		case target.CheckHost(t.Host) != nil:
			return invalidf(`%s: [[hosts.tunnel]] host = %q: want the box's host name, such as "build-1"`, path, t.Host)
		case t.SSH == "" || strings.HasPrefix(t.SSH, "-"):
			return invalidf(`%s: [[hosts.tunnel]] for %s: want ssh = "user@box"`, path, t.Host)
		case t.Port < 1 || t.Port > 65535:
			return invalidf(`%s: [[hosts.tunnel]] for %s: want port = 1 to 65535 (the box's 127.0.0.1 port that leads to the bus)`, path, t.Host)
		case t.SSHConfig != "" && !filepath.IsAbs(t.SSHConfig):
			return invalidf(`%s: [[hosts.tunnel]] for %s: ssh_config = %q: want an absolute path`, path, t.Host, t.SSHConfig)
		case h.NATS == "":
			return invalidf(`%s: [[hosts.tunnel]] for %s needs [hosts] nats: the bus the tunnel leads to`, path, t.Host)
		}
	}
	l.Hosts = h
	return nil
}

// FirstBus is the first address of the nats setting: its host, and its
// host:port (4222 when it names none). A tunnel leads there.
func (h HostsSettings) FirstBus() (host, hostPort string, err error) {
	first, _, _ := strings.Cut(h.NATS, ",")
	u, err := url.Parse(strings.TrimSpace(first))
	if err != nil || u.Hostname() == "" {
		return "", "", fmt.Errorf("[hosts] nats = %q names no address", h.NATS)
	}
	port := u.Port()
	if port == "" {
		port = "4222"
	}
	return u.Hostname(), net.JoinHostPort(u.Hostname(), port), nil
}
