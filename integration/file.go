package integration

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/agentmsg/agentmsg/internal/plainfile"
	"github.com/agentmsg/agentmsg/internal/textdiff"
)

// Report is what an install did to a settings file.
type Report struct {
	CLI     string `json:"cli"`
	Path    string `json:"path"`
	Target  string `json:"target,omitempty"` // the file written when Path is a symbolic link
	Changed bool   `json:"changed"`          // the file differs from what it would be
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

// ErrDanglingLink: the settings file is a symbolic link to a file that
// does not exist.
var ErrDanglingLink = errors.New("a symbolic link to a file that does not exist")

// ErrNotRegular: the settings file is a directory, a device or a pipe.
var ErrNotRegular = errors.New("not a regular file")

// followLinks is the file a write to path must replace: path itself, or
// the file the symbolic link at path leads to, through any chain of links,
// so that a settings file kept in a dotfiles folder stays there and the
// link stays a link. A link to nothing is refused: the folder it leads
// into (a dotfiles checkout, a mount) is likely missing, and a file made
// there would sit where nobody expects it.
func followLinks(path string) (string, error) {
	p := path
	for hops := 0; ; hops++ {
		fi, err := os.Lstat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist) && hops > 0:
			return "", fmt.Errorf("%s is a symbolic link to %s, which does not exist (%w): create that file or remove the link, and run again; nothing was written", path, p, ErrDanglingLink)
		case errors.Is(err, fs.ErrNotExist):
			return p, nil
		case err != nil:
			return "", err
		case fi.Mode()&fs.ModeSymlink == 0:
			return p, nil
		case hops == maxLinks:
			return "", &fs.PathError{Op: "following", Path: path, Err: syscall.ELOOP}
		}
		dest, err := os.Readlink(p)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(dest) {
			// Relative to the directory the link really is in: ".." in
			// it does not undo a linked directory on the way there.
			dir, err := filepath.EvalSymlinks(filepath.Dir(p))
			if err != nil {
				return "", err
			}
			dest = filepath.Join(dir, dest)
		}
		p = dest
	}
}

// maxLinks is how many links a path may lead through, as Linux allows.
const maxLinks = 40

// merger is one install's edit: the file's new content from its current
// one (nil when there is none).
type merger func(old []byte) ([]byte, error)

// install makes path hold what merge makes of its content: with print it
// only reports; otherwise it backs the old file up and writes the merged
// one, keeping its mode (fresh when there was none). Every install goes
// through it, so that all behave alike.
func install(cli, path string, merge merger, fresh fs.FileMode, print bool, now time.Time) (Report, error) {
	target, err := followLinks(path)
	if err != nil {
		return Report{}, err
	}
	old, err := readSettings(target)
	if err != nil && target != path {
		err = fmt.Errorf("%w (%s is a symbolic link to it)", err, path)
	}
	if err != nil {
		return Report{}, err
	}
	merged, err := merge(old.data)
	if err != nil {
		return Report{}, &MergeError{Path: path, Err: err}
	}
	rep := Report{CLI: cli, Path: path}
	if target != path {
		rep.Target = target
	}
	rep.diff(old.data, merged)
	if print {
		rep.Content = string(merged)
		return rep, nil
	}
	if !rep.Changed {
		return rep, nil
	}
	if old.exists {
		b, err := backupFile(path, old.data, now)
		if err != nil {
			return rep, fmt.Errorf("backing up %s (nothing was written): %w", path, err)
		}
		rep.Backup = b
	}
	removeLeftovers(target)
	base, written, err := replace(target, old, merged, merge, fresh, now)
	if !base.same(old) {
		// Another program changed the file meanwhile: the change is the
		// one made to its version, none when that stands.
		final := written
		if final == nil {
			final = base.data
		}
		rep.diff(base.data, final)
	}
	rep.Written = written != nil
	if errors.Is(err, ErrNotMerged) {
		err = &MergeError{Path: path, Err: err}
	}
	return rep, err
}

// diff records the change from old to merged.
func (r *Report) diff(old, merged []byte) {
	r.Changed = !bytes.Equal(old, merged)
	r.Diff = ""
	if r.Changed {
		r.Diff = textdiff.Unified(r.Path, r.Path, string(old), string(merged))
	}
}

// backupFile copies data, path's content, to a new file beside it named by
// now, readable by its owner alone (0600) whatever path's mode: a
// settings file may hold a token (mcp install --http), and a backup is
// for its owner to restore; it never replaces an earlier backup.
func backupFile(path string, data []byte, now time.Time) (string, error) {
	const mode = os.FileMode(0o600)
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
		if err := plainfile.Fill(f, data, 0); err != nil {
			return "", err
		}
		return name, nil
	}
}
