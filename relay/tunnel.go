package relay

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentmsg/agentmsg/config"
	"github.com/agentmsg/agentmsg/internal/safesock"
)

// A box reachable only by SSH joins the bus through a tunnel this host
// keeps: the user's own OpenSSH (their config, keys and agent), one
// connection per box, whose remote forward makes 127.0.0.1:PORT on the
// box lead to the bus as this host reaches it. The box's daemon dials
// that port ([hosts] nats = "tls://127.0.0.1:PORT", with tls_server_name
// the bus's own name, so TLS still checks the bus's certificate).

// tunnelWait bounds the wait before a tunnel that ended is started again.
const (
	tunnelRetryMin = time.Second
	tunnelRetryMax = 30 * time.Second
)

// keepTunnels runs each configured tunnel until ctx ends, with their
// control sockets under root/ssh.
func keepTunnels(ctx context.Context, root string, cfg config.HostsSettings, logf func(format string, args ...any)) {
	if len(cfg.Tunnels) == 0 {
		return
	}
	_, bus, err := cfg.FirstBus()
	if err != nil {
		logf("hosts: no tunnel can lead to the bus: %v", err)
		return
	}
	dir := filepath.Join(root, "ssh")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		logf("hosts: %v", err)
		return
	}
	for _, t := range cfg.Tunnels {
		go keepTunnel(ctx, dir, bus, t, logf)
	}
}

// tunnelArgs are ssh's arguments for t, leading the box's 127.0.0.1 port
// to bus.
func tunnelArgs(dir, bus string, t config.Tunnel) []string {
	args := []string{"-N",
		"-o", "BatchMode=yes", // never a password prompt in a daemon
		"-o", "ExitOnForwardFailure=yes",
		"-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3",
	}
	args = append(args, controlArgs(dir)...)
	args = append(args, "-R", fmt.Sprintf("127.0.0.1:%d:%s", t.Port, bus))
	if t.SSHConfig != "" {
		args = append(args, "-F", t.SSHConfig)
	}
	return append(args, t.SSH)
}

// controlArgs make one connection per box, which other ssh runs to it
// ride along, through a control socket in dir named by the connection's
// hash (%C, 40 hex digits). ssh first binds it under a name 17 bytes
// longer (".", 16 random letters) and exits when that does not fit a
// socket path (104 bytes on macOS, 108 on Linux: a long home directory's
// mailbox root can pass it); then there is no control socket, each ssh
// run has its own connection, and the tunnel still runs.
func controlArgs(dir string) []string {
	path := filepath.Join(dir, strings.Repeat("c", 40))
	if len(path)+17 >= safesock.MaxPathLen {
		return []string{"-o", "ControlMaster=no", "-o", "ControlPath=none"}
	}
	return []string{"-o", "ControlMaster=auto", "-o", "ControlPath=" + filepath.Join(dir, "%C"), "-o", "ControlPersist=no"}
}

// keepTunnel runs ssh for t, again after it ends, until ctx ends; ssh
// ends with the daemon, however the daemon ends (mortal).
func keepTunnel(ctx context.Context, dir, bus string, t config.Tunnel, logf func(format string, args ...any)) {
	wait := tunnelRetryMin
	for ctx.Err() == nil {
		cmd, done, err := mortal(ctx, "ssh", tunnelArgs(dir, bus, t)...)
		var out strings.Builder
		started := time.Now()
		if err == nil {
			cmd.WaitDelay = 5 * time.Second
			cmd.Stderr = &out
			err = cmd.Run()
			done()
		}
		if ctx.Err() != nil {
			return
		}
		if time.Since(started) > time.Minute {
			wait = tunnelRetryMin // it ran: start again at once
		}
		logf("hosts: the tunnel to host %s (ssh %s) ended: %v %s; again in %s", t.Host, t.SSH, err, strings.TrimSpace(out.String()), wait)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, tunnelRetryMax)
	}
}
