package integration

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/agentmsg/agentmsg/internal/textdiff"
)

// Report is what an install did to a settings file.
type Report struct {
	CLI     string `json:"cli"`
	Path    string `json:"path"`
	Changed bool   `json:"changed"` // the file differs from what it would be
	Written bool   `json:"written"`
	Backup  string `json:"backup,omitempty"` // the old file, copied before the write
	Diff    string `json:"diff,omitempty"`
	Content string `json:"content,omitempty"` // print only: the file as it would be
	Note    string `json:"note,omitempty"`    // what a person must still do
}

// MergeError: the file could not be merged (not valid JSON or TOML, or a
// setting in a shape agentmsg does not know); nothing was written.
type MergeError struct {
	Path    string
	Err     error
	Snippet string // agentmsg's entry on its own, to add by hand (MCP)
}

func (e *MergeError) Error() string { return fmt.Sprintf("merging into %s: %v", e.Path, e.Err) }
func (e *MergeError) Unwrap() error { return e.Err }

// readSettings is path's content, nil when there is no file.
func readSettings(path string) ([]byte, error) {
	old, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return old, nil
}

// merger is one install's edit: the file's new content from its current
// one (nil when there is none).
type merger func(old []byte) ([]byte, error)

// install makes path hold what merge makes of its content: with print it
// only reports; otherwise it backs the old file up and writes the merged
// one. Every install goes through it, so that all behave alike.
func install(cli, path string, merge merger, print bool, now time.Time) (Report, error) {
	old, err := readSettings(path)
	if err != nil {
		return Report{}, err
	}
	merged, err := merge(old)
	if err != nil {
		return Report{}, &MergeError{Path: path, Err: err}
	}
	rep := Report{CLI: cli, Path: path, Changed: !bytes.Equal(old, merged)}
	if rep.Changed {
		rep.Diff = textdiff.Unified(path, path, string(old), string(merged))
	}
	if print {
		rep.Content = string(merged)
		return rep, nil
	}
	if !rep.Changed {
		return rep, nil
	}
	if old != nil {
		b, err := backupFile(path, old, now)
		if err != nil {
			return rep, fmt.Errorf("backing up %s (nothing was written): %w", path, err)
		}
		rep.Backup = b
	}
	if err := writeFileKeepMode(path, merged); err != nil {
		return rep, err
	}
	rep.Written = true
	return rep, nil
}

// backupFile copies data, path's content, to a new file beside it named by
// now, with path's mode; it never replaces an earlier backup.
func backupFile(path string, data []byte, now time.Time) (string, error) {
	mode := os.FileMode(0o600)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	base := path + ".bak-" + now.Format("20060102-150405")
	for i := 1; ; i++ {
		name := base
		if i > 1 {
			name = fmt.Sprintf("%s-%d", base, i)
		}
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
		if errors.Is(err, os.ErrExist) && i < 100 {
			continue
		}
		if err != nil {
			return "", err
		}
		_, err = f.Write(data)
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(name)
			return "", err
		}
		return name, nil
	}
}

// writeFileKeepMode replaces path with data atomically, keeping the old
// file's mode (0644 for a new one), creating its directory.
func writeFileKeepMode(path string, data []byte) error {
	mode := os.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
