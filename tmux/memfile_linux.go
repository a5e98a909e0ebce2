package tmux

import (
	"os"

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
