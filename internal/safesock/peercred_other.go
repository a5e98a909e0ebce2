//go:build !linux && !darwin

package safesock

import (
	"errors"
	"net"
)

// maxPathLen is the smallest sizeof(sun_path) among the BSDs.
const maxPathLen = 104

// PeerUID: this OS is not one agentmsg knows how to ask; every peer is
// refused rather than guessed.
func PeerUID(*net.UnixConn) (int, error) {
	return -1, errors.New("this OS does not tell agentmsg a socket peer's uid")
}
