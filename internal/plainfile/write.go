package plainfile

import (
	"io/fs"
	"os"
)

// Fill writes data to f, a file just made for it, sets its mode (unless
// mode is 0), has it on disk (fsync) and closes it. On any error it removes
// the file as well: nobody may find half of it under its name. The
// mailbox's and the installers' temp files are written so before they are
// renamed into place.
func Fill(f *os.File, data []byte, mode fs.FileMode) error {
	_, err := f.Write(data)
	if err == nil && mode != 0 {
		err = f.Chmod(mode)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}
