package safesock

import (
	"net"

	"golang.org/x/sys/unix"
)

// maxPathLen is sizeof(sun_path) on Linux, its NUL included.
const maxPathLen = 108

// PeerUID is the uid of the process at the other end of c, as the kernel
// recorded it when that end connected or listened (SO_PEERCRED). It works
// both ways: the daemon learns its client's uid, and a client the uid of
// the process listening.
func PeerUID(c *net.UnixConn) (int, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return -1, err
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return -1, err
	}
	if credErr != nil {
		return -1, credErr
	}
	return int(cred.Uid), nil
}
