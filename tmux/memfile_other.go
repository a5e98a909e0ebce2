//go:build !linux

package tmux

import "os"

// memFile is an unlinked temp file where there is no memfd: its name goes
// away the moment it is made, so only a crash in between can leave it.
func memFile(name string) (*os.File, error) { return tempFile(name) }
