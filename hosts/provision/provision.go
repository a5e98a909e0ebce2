// Package provision sets a host up to join the bus, as the operator's
// agentmsg hosts init and hosts add do: a NATS user's key, written once;
// the [hosts] table of a host's config file and the [[hosts.tunnel]] entry
// of the host that keeps a box's SSH tunnel, written by the TOML encoder
// the config loader reads with; and, for a box reachable only by SSH, its
// key, the bus's CA and its table put on the box over the user's own ssh
// (Box). The host's stream on the bus is package hosts' (hosts.Provision).
package provision

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/BurntSushi/toml"
	"github.com/nats-io/nkeys"

	"github.com/agentmsg/agentmsg/config"
	"github.com/agentmsg/agentmsg/hosts"
)

// ErrKeyExists: a key file is there already. It is never overwritten: its
// user may be in the NATS servers' configuration.
var ErrKeyExists = errors.New("key file exists")

// WriteKey makes a NATS user key pair and writes its seed to dir/name.nk
// (mode 0600, dir made 0700), once: a file there already is ErrKeyExists.
func WriteKey(dir, name string) (seed []byte, public, keyFile string, err error) {
	keyFile = filepath.Join(dir, name+".nk")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, "", keyFile, err
	}
	if seed, public, err = hosts.NewUser(); err != nil {
		return nil, "", keyFile, err
	}
	out, err := os.OpenFile(keyFile, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil, "", keyFile, ErrKeyExists
	}
	if err != nil {
		return nil, "", keyFile, err
	}
	if _, err := out.Write(append(seed, '\n')); err != nil {
		out.Close()
		return nil, "", keyFile, err
	}
	return seed, public, keyFile, out.Close()
}

// PublicKey is the public key of the user seed in file.
func PublicKey(file string) (string, error) {
	seed, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	kp, err := nkeys.FromSeed(bytes.TrimSpace(seed))
	if err != nil {
		return "", err
	}
	return kp.PublicKey()
}

// Table is a host's [hosts] table: what it needs to join the bus (the
// keys of config.HostsSettings, in the order a person reads them; those
// left empty are left out).
type Table struct {
	Name          string `toml:"name"`
	NATS          string `toml:"nats"`
	TLSServerName string `toml:"tls_server_name,omitempty"`
	NkeyFile      string `toml:"nkey_file"`
	CAFile        string `toml:"ca_file,omitempty"`
}

// TOML is the table as a config file holds it, "[hosts]" first.
func (t Table) TOML() (string, error) {
	return encode(struct {
		Hosts Table `toml:"hosts"`
	}{t})
}

// tunnel is a [[hosts.tunnel]] entry (config.Tunnel, ssh_config left out
// when empty).
type tunnel struct {
	Host      string `toml:"host"`
	SSH       string `toml:"ssh"`
	Port      int    `toml:"port"`
	SSHConfig string `toml:"ssh_config,omitempty"`
}

// tunnelHeader opens an entry of the array [[hosts.tunnel]]. It is
// written as it is: the encoder would write a [hosts] table before it,
// which a file with a [hosts] table already may not have twice.
const tunnelHeader = "\n[[hosts.tunnel]]\n"

// AddTunnel appends t to the [[hosts.tunnel]] entries of the config file
// at path (made, mode 0600, when there is none), leaving what it holds as
// it is.
func AddTunnel(path string, t config.Tunnel) error {
	body, err := encode(tunnel{Host: t.Host, SSH: t.SSH, Port: t.Port, SSHConfig: t.SSHConfig})
	if err != nil {
		return err
	}
	file, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	if _, err := file.WriteString(tunnelHeader + body); err != nil {
		file.Close()
		return err
	}
	return file.Close()
}

// encode is v in TOML, as the config file is written by hand: no indent.
func encode(v any) (string, error) {
	var b bytes.Buffer
	enc := toml.NewEncoder(&b)
	enc.Indent = ""
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return b.String(), nil
}
