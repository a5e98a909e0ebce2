//go:build !linux

package tmux

import (
	"errors"
	"os"
)

// anonFile: Darwin has no file without a name (no O_TMPFILE); tempFile
// makes one and unlinks it at once, in the user's own $TMPDIR there.
func anonFile() (*os.File, error) { return nil, errors.ErrUnsupported }
