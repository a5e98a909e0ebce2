//go:build !linux || agentmsg_portable

package tmux

import "os"

// memFile is an unlinked temp file where there is no memfd (Darwin): its
// name goes away the moment it is made, so only a crash in between can
// leave it.
func memFile(name string) (*os.File, error) { return tempFile(name) }

const serverOpensOurFiles = false

// serverPath: no name under which the tmux server can open a file of ours
// (Darwin has no /proc; its /dev/fd/N is the opener's own descriptor). The
// control client then takes no list that carries text, and those go
// through tmux processes, which read /dev/fd/N themselves: about 2 ms more
// per paste, the same text typed.
func serverPath(*os.File) (string, bool) { return "", false }
