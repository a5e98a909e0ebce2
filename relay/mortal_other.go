//go:build !linux || agentmsg_portable

package relay

import (
	"context"
	"os/exec"
)

// mortal is name with args, made to end with the daemon: Darwin has no
// Pdeathsig, so it runs under the watch (guarded); so it does on Linux
// built with agentmsg_portable, where the tests exercise it. done is
// called once it has been waited for.
func mortal(ctx context.Context, name string, args ...string) (cmd *exec.Cmd, done func(), err error) {
	return guarded(ctx, name, args...)
}
