//go:build linux && !agentmsg_portable

package relay

import (
	"context"
	"os/exec"
	"syscall"
)

// mortal is name with args, made to end with the daemon: the kernel sends
// it SIGTERM when the daemon's thread that started it ends (Pdeathsig),
// and so does ctx ending. done is called once it has been waited for.
func mortal(ctx context.Context, name string, args ...string) (cmd *exec.Cmd, done func(), err error) {
	cmd = exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	return cmd, func() {}, nil
}
