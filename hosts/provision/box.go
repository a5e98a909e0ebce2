package provision

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"github.com/agentmsg/agentmsg/config"
	"github.com/agentmsg/agentmsg/internal/shell"
)

// Box is a box that reaches the bus only through an SSH connection from
// this host, reached through the user's own ssh (their config, keys and
// agent).
type Box struct {
	// SSH is its destination as ssh takes it ("user@box"); SSHConfig, when
	// set, an ssh_config file (ssh -F).
	SSH, SSHConfig string
	// Dir is its agentmsg config directory; "" asks the box
	// ($XDG_CONFIG_HOME/agentmsg, or ~/.config/agentmsg).
	Dir string
}

// run runs script on the box with stdin, through the user's ssh.
func (b Box) run(ctx context.Context, stdin []byte, script string, args ...string) (string, error) {
	sshArgs := []string{"-o", "BatchMode=yes"}
	if b.SSHConfig != "" {
		sshArgs = append(sshArgs, "-F", b.SSHConfig)
	}
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = shell.Quote(a)
	}
	sshArgs = append(sshArgs, b.SSH, "sh -c "+shell.Quote(script)+" agentmsg "+strings.Join(quoted, " "))
	cmd := exec.CommandContext(ctx, "ssh", sshArgs...)
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("ssh %s: %w: %s", b.SSH, err, strings.TrimSpace(errOut.String()))
	}
	return out.String(), nil
}

// Install writes host name's key (seed), the bus's CA (here's ca_file)
// and its [hosts] table on the box, and returns that table: the box
// reaches the bus at its own 127.0.0.1:port (the tunnel this host keeps),
// checking the bus's certificate for the bus's own name. A box whose
// config file has a [hosts] table already keeps it, and the error holds
// the table to merge by hand.
func (b Box) Install(ctx context.Context, name string, port int, seed []byte, here config.HostsSettings) (string, error) {
	dir := b.Dir
	if dir == "" {
		got, err := b.run(ctx, nil, `printf %s "${XDG_CONFIG_HOME:-$HOME/.config}/agentmsg"`)
		if err != nil {
			return "", err
		}
		dir = strings.TrimSpace(got)
	}
	if !strings.HasPrefix(dir, "/") {
		return "", fmt.Errorf("the box's config directory %q is not absolute", dir)
	}
	const write = `umask 077 && mkdir -p "$(dirname "$1")" && cat > "$1"`
	keyFile := dir + "/hosts/" + name + ".nk"
	if _, err := b.run(ctx, append(seed, '\n'), write, keyFile); err != nil {
		return "", err
	}
	bus, _, err := here.FirstBus()
	if err != nil {
		return "", err
	}
	serverName := here.TLSServerName
	if serverName == "" {
		serverName = bus
	}
	t := Table{Name: name, NATS: "tls://127.0.0.1:" + strconv.Itoa(port), TLSServerName: serverName, NkeyFile: keyFile}
	if here.CAFile != "" {
		ca, err := os.ReadFile(here.CAFile)
		if err != nil {
			return "", fmt.Errorf("this host's ca_file: %w", err)
		}
		t.CAFile = dir + "/hosts/bus-ca.pem"
		if _, err := b.run(ctx, ca, write, t.CAFile); err != nil {
			return "", err
		}
	}
	table, err := t.TOML()
	if err != nil {
		return "", err
	}
	// Appended unless the box has a [hosts] table already: then a person
	// merges it.
	const appendTable = `f="$1"; mkdir -p "$(dirname "$f")"; if grep -q '^\[hosts\]' "$f" 2>/dev/null; then echo exists; exit 0; fi; printf '\n' >> "$f"; cat >> "$f"`
	got, err := b.run(ctx, []byte(table), appendTable, dir+"/config.toml")
	if err != nil {
		return "", err
	}
	if strings.TrimSpace(got) == "exists" {
		return "", fmt.Errorf("%s/config.toml on the box has a [hosts] table already; merge this one by hand:\n%s", dir, table)
	}
	return table, nil
}
