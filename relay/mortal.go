package relay

import (
	"context"
	"os"
	"os/exec"
	"syscall"
)

// A child that must end with the daemon (the SSH tunnel), however the
// daemon ends, SIGKILL included. Linux asks the kernel to signal it
// (mortal_linux.go: Pdeathsig). Darwin has no such request, so there the
// child runs under a watch (guarded): a shell that starts it, and reads a
// pipe whose other end only the daemon holds. The kernel closes that end
// when the daemon ends, however it ends; the read then returns, and the
// watch sends the child SIGTERM.

// guardScript runs "$@" and sends it SIGTERM when fd 3 reads end of
// file; SIGTERM (or INT, HUP) to the shell goes on to it too. The shell
// exits with the child's status once the child has ended.
const guardScript = `"$@" 3<&- &
child=$!
{ read -r _ <&3; kill -TERM "$child" 2>/dev/null; } >/dev/null 2>&1 &
watch=$!
exec 3<&-
trap 'kill -TERM "$child" 2>/dev/null' TERM INT HUP
while :; do
	wait "$child"
	status=$?
	kill -0 "$child" 2>/dev/null || break
done
kill "$watch" 2>/dev/null
exit "$status"`

// guarded is name with args under the watch: the command to run, and
// what to call once it has been waited for (it lets go of the daemon's
// end of the pipe). ctx ending sends the shell SIGTERM, which it passes
// on.
func guarded(ctx context.Context, name string, args ...string) (*exec.Cmd, func(), error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.CommandContext(ctx, "/bin/sh", append([]string{"-c", guardScript, "agentmsg-guard", name}, args...)...)
	cmd.ExtraFiles = []*os.File{r} // fd 3
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	done := func() {
		r.Close()
		w.Close()
	}
	return cmd, done, nil
}
