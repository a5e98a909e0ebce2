package lock

import (
	"errors"

	"github.com/agentmsg/agentmsg/internal/procs"
)

// HoldersUnknown words, for a waiter's error, a lock whose holder the
// system cannot name (LockDevice found nothing: Darwin, or a file system
// whose locks Linux does not list).
const HoldersUnknown = "a process that cannot be told (this system does not say who holds a lock on this file system)"

// ProcessState is the state letter of pid (R, S, T for stopped, Z for a
// zombie, ...; package procs), 0 when there is no such process, '?' when
// it cannot be told.
func ProcessState(pid int) byte {
	p, err := procs.Get(pid)
	switch {
	case errors.Is(err, procs.ErrNoProcess):
		return 0
	case err != nil:
		return '?'
	}
	return p.State
}

// Command is the name of process pid's program ("" when it has none to
// show, having exited).
func Command(pid int) string {
	p, err := procs.Get(pid)
	if err != nil {
		return ""
	}
	return p.Comm
}
