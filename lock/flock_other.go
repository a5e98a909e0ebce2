//go:build !linux || agentmsg_portable

package lock

import (
	"errors"
	"os"
)

// Who holds an flock cannot be told here: Darwin keeps no table of locks a
// program can read (fcntl's F_GETLK names a POSIX lock's owner but gives
// -1 for an flock's), and the agentmsg_portable build leaves Linux's
// /proc/locks out. A waiter then says it cannot tell (HoldersUnknown).

// LockDevice: never found here.
func LockDevice(string) (dev string, ok bool) { return "", false }

// FlockHolders: unknown here.
func FlockHolders(*os.File, string) ([]int, error) { return nil, errors.ErrUnsupported }
