//go:build linux && !agentmsg_portable

package tmux

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// memFile is an anonymous file in memory: it has no name on any disk, so a
// message written to it cannot outlive the processes that hold it open,
// whatever kills them.
func memFile(name string) (*os.File, error) {
	fd, err := unix.MemfdCreate("agentmsg-"+name, unix.MFD_CLOEXEC)
	if err != nil {
		return tempFile(name)
	}
	return os.NewFile(uintptr(fd), "memfd:agentmsg-"+name), nil
}

// serverOpensOurFiles: serverPath names our files for the server.
const serverOpensOurFiles = true

// serverPath is a name under which another process of this user, the tmux
// server, opens f: /proc/OUR_PID/fd/N. The control client probes it once
// per attach (probePayloads): another pid namespace has another /proc.
func serverPath(f *os.File) (string, bool) {
	return "/proc/" + strconv.Itoa(os.Getpid()) + "/fd/" + strconv.Itoa(int(f.Fd())), true
}
