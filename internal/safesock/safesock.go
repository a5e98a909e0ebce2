// Package safesock is agentmsg's door between processes of one user: the
// daemon's Unix socket, and the client that forwards commands to it.
//
// The file mode is the first fence, not the only one (tailscale's
// safesocket and LocalAPI do the same): the listener accepts only
// connections whose peer runs as its own user, and the client, before it
// sends one byte, checks that the socket and its directory are its user's
// and that the process listening runs as its user too. A socket another
// local user planted where the client looks (a shared TMPDIR root made
// before the owner's) would otherwise receive every forwarded command line
// and answer any verdict.
//
// Who the peer is comes from the kernel (PeerUID: SO_PEERCRED on Linux,
// LOCAL_PEERCRED on Darwin), never from what the peer says.
package safesock

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"

	"github.com/agentmsg/agentmsg/internal/safedir"
)

// ErrNotOurs is a socket, or a process listening on one, that does not
// belong to this user.
var ErrNotOurs = errors.New("not this user's socket")

// ErrPathTooLong is a socket path longer than the OS takes (sun_path).
var ErrPathTooLong = errors.New("socket path too long")

// MaxPathLen is the most bytes a Unix socket's path can have here, its
// NUL included (sizeof sun_path: 108 on Linux, 104 on Darwin).
const MaxPathLen = maxPathLen

// checkPath refuses a path the kernel would cut or refuse with a bare
// "invalid argument".
func checkPath(path string) error {
	if len(path) >= maxPathLen {
		return fmt.Errorf("%w: %s is %d bytes, and this OS takes at most %d: choose a shorter directory (AGENTMSG_HOME, or --socket)", ErrPathTooLong, path, len(path), maxPathLen-1)
	}
	return nil
}

// Listen listens on a Unix socket at path that only this user can reach:
// mode 0600, made with a umask that leaves no moment it is wider, and
// every connection's peer checked (a connection from another user's
// process is closed before it is read). A file already at path is
// removed: the caller holds the lock that makes it path's one listener.
func Listen(path string) (net.Listener, error) {
	if err := checkPath(path); err != nil {
		return nil, err
	}
	if err := safedir.CheckFollow(filepath.Dir(path)); err != nil {
		return nil, err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	old := syscall.Umask(0o177)
	l, err := net.Listen("unix", path)
	syscall.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return nil, err
	}
	ul := l.(*net.UnixListener)
	ul.SetUnlinkOnClose(false) // the caller removes it, once it has stopped serving
	return ownerOnly{ul}, nil
}

// ownerOnly accepts only connections from this user's processes, whatever
// the socket file's mode says.
type ownerOnly struct{ *net.UnixListener }

func (l ownerOnly) Accept() (net.Conn, error) {
	for {
		c, err := l.UnixListener.AcceptUnix()
		if err != nil {
			return nil, err
		}
		if uid, err := PeerUID(c); err == nil && uid == os.Geteuid() {
			return c, nil
		}
		c.Close()
	}
}

// Dial connects to the Unix socket at path after checking, in order,
// that path's directory is this user's and writable by no one else
// (safedir), that path is a socket owned by this user and private to it,
// and, once connected, that the process listening runs as this user. It
// fails with ErrNotOurs, saying which check failed, having sent nothing.
func Dial(ctx context.Context, path string) (*net.UnixConn, error) {
	if err := Check(path); err != nil {
		return nil, err
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, err
	}
	uc := c.(*net.UnixConn)
	uid, err := PeerUID(uc)
	if err != nil {
		uc.Close()
		return nil, fmt.Errorf("%w: cannot tell who listens on %s: %v", ErrNotOurs, path, err)
	}
	if uid != os.Geteuid() {
		uc.Close()
		return nil, fmt.Errorf("%w: the process listening on %s runs as uid %d, not as you (uid %d); nothing was sent to it", ErrNotOurs, path, uid, os.Geteuid())
	}
	return uc, nil
}

// Check checks what Dial checks before it connects: path's directory is
// this user's and private (its whole chain is the caller's to check, as
// for a mailbox root), and path is a socket of this user's that no one
// else may use. A missing socket is fs.ErrNotExist.
func Check(path string) error {
	if err := checkPath(path); err != nil {
		return err
	}
	if err := safedir.CheckFollow(filepath.Dir(path)); err != nil {
		return fmt.Errorf("%w: %w", ErrNotOurs, err)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	return checkSocket(path, fi, os.Geteuid())
}

// checkSocket is Check's look at the socket file itself.
func checkSocket(path string, fi fs.FileInfo, uid int) error {
	var why string
	switch {
	case fi.Mode()&fs.ModeSocket == 0:
		why = fmt.Sprintf("is not a socket (%v)", fi.Mode().Type())
	case ownerOf(fi) != uid:
		why = fmt.Sprintf("is owned by uid %d, not by you (uid %d)", ownerOf(fi), uid)
	case fi.Mode().Perm()&0o077 != 0:
		why = fmt.Sprintf("may be used by other users (mode %04o)", fi.Mode().Perm())
	default:
		return nil
	}
	return fmt.Errorf("%w: refusing %s: it %s; nothing was sent to it", ErrNotOurs, path, why)
}

// ownerOf is fi's owner's uid, -1 when the file system does not say.
func ownerOf(fi fs.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}
