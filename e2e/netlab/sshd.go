package netlab

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// SSHPort is the port sshd listens on, on its host's address.
const SSHPort = 2222

const (
	sshdPath = "/usr/sbin/sshd"
	// privsepDir is where sshd chroots its unprivileged children. Debian
	// makes it only when its own sshd service starts, so a machine that
	// never ran one lacks it.
	privsepDir   = "/run/sshd"
	sshdTimeout  = 10 * time.Second
	sshdSettings = `Port %d
ListenAddress %s
HostKey "%s"
AuthorizedKeysFile "%s"
PidFile none
PermitRootLogin prohibit-password
AllowUsers %s
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
# The lab's files lie under the temp dir, which anyone may write to.
StrictModes no
AllowTcpForwarding yes
X11Forwarding no
PrintMotd no
`
	sshSettings = `Host %s
  HostName %s
  Port %d
  User %s
  IdentityFile "%s"
  IdentitiesOnly yes
  IdentityAgent none
  UserKnownHostsFile "%s"
  GlobalKnownHostsFile /dev/null
  StrictHostKeyChecking yes
  BatchMode yes
  ConnectTimeout 5
`
)

// SSHD is an OpenSSH server on one host of a lab. `ssh -F Config Alias`
// reaches it as the current user, with a key made for the lab and a
// known_hosts file that holds the server's key made at the same time, so
// none of the user's own ssh files is read or written.
type SSHD struct {
	Host   *Host
	Alias  string // the Host entry of Config
	Config string // an ssh_config file
	User   string

	Proc *Proc
}

// StartSSHD starts sshd on h, on SSHPort, and waits until it listens, or
// fails the test; it skips the test when openssh-server is not installed.
func (l *Lab) StartSSHD(h *Host) *SSHD {
	l.t.Helper()
	if _, err := os.Stat(sshdPath); err != nil {
		l.t.Skipf("%s is missing: install openssh-server (scripts/test does)", sshdPath)
	}
	s, err := l.startSSHD(h)
	if err != nil {
		l.t.Fatalf("starting sshd on %s: %v", h.Name, err)
	}
	return s
}

func (l *Lab) startSSHD(h *Host) (*SSHD, error) {
	me, err := user.Current()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(l.Dir, "ssh-"+h.label)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, err
	}
	at := func(name string) string { return filepath.Join(dir, name) }
	for _, key := range []string{"host_key", "id_ed25519"} {
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "netlab", "-f", at(key)).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("ssh-keygen: %v: %s", err, out)
		}
	}
	clientKey, err := os.ReadFile(at("id_ed25519.pub"))
	if err != nil {
		return nil, err
	}
	hostKey, err := os.ReadFile(at("host_key.pub"))
	if err != nil {
		return nil, err
	}
	// A known_hosts line names a non-default port as [addr]:port and holds
	// the key's type and data, not its comment.
	known := fmt.Sprintf("[%s]:%d %s\n", h.Addr, SSHPort, strings.Join(strings.Fields(string(hostKey))[:2], " "))
	s := &SSHD{Host: h, Alias: h.Name, Config: at("ssh_config"), User: me.Username}
	for _, f := range []struct{ name, text string }{
		{"authorized_keys", string(clientKey)},
		{"known_hosts", known},
		{"sshd_config", fmt.Sprintf(sshdSettings, SSHPort, h.Addr, at("host_key"), at("authorized_keys"), me.Username)},
		{"ssh_config", fmt.Sprintf(sshSettings, s.Alias, h.Addr, SSHPort, me.Username, at("id_ed25519"), at("known_hosts"))},
	} {
		if err := os.WriteFile(at(f.name), []byte(f.text), 0o600); err != nil {
			return nil, err
		}
	}
	if err := l.ensurePrivsepDir(); err != nil {
		return nil, err
	}
	if s.Proc, err = h.Start(nil, sshdPath, "-D", "-e", "-f", at("sshd_config")); err != nil {
		return nil, err
	}
	if err := waitListening(net.JoinHostPort(h.Addr, strconv.Itoa(SSHPort)), s.Proc.Done(), sshdTimeout); err != nil {
		return nil, fmt.Errorf("%s: %w; see %s", s.Proc, err, s.Proc.Log)
	}
	return s, nil
}

// ensurePrivsepDir makes sshd's privilege separation dir when it is missing,
// noting that this lab made it, so that its end removes only what it made.
func (l *Lab) ensurePrivsepDir() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	err := os.Mkdir(privsepDir, 0o755)
	if err == nil {
		l.madePrivsep = true
		return nil
	}
	if os.IsExist(err) {
		return nil
	}
	return err
}
