package safesock

import (
	"net"

	"golang.org/x/sys/unix"
)

// maxPathLen is sizeof(sun_path) on Darwin, its NUL included.
const maxPathLen = 104

// PeerUID is the uid of the process at the other end of c, as the kernel
// recorded it (LOCAL_PEERCRED, what getpeereid(3) reads). It works both
// ways: the daemon learns its client's uid, and a client the uid of the
// process listening.
func PeerUID(c *net.UnixConn) (int, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return -1, err
	}
	var cred *unix.Xucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptXucred(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
	}); err != nil {
		return -1, err
	}
	if credErr != nil {
		return -1, credErr
	}
	return int(cred.Uid), nil
}
