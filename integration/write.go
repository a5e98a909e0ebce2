package integration

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agentmsg/agentmsg/internal/plainfile"
)

// ErrNotMerged: the file changed while agentmsg wrote it, into something
// it cannot merge into.
var ErrNotMerged = errors.New("it changed meanwhile into something agentmsg cannot merge into")

// ErrChangedMeanwhile: another program kept changing the file while
// agentmsg wrote it.
var ErrChangedMeanwhile = errors.New("another program kept changing the file while agentmsg wrote it")

// snapshot is a settings file as agentmsg read it.
type snapshot struct {
	data   []byte
	exists bool
	mode   fs.FileMode
}

func (s snapshot) same(o snapshot) bool { return s.exists == o.exists && bytes.Equal(s.data, o.data) }

// newMode is the mode of a settings file agentmsg makes; secretMode of
// one that holds a token.
const (
	newMode    = 0o644
	secretMode = 0o600
)

// writeMode is the mode a write over s keeps: s's own, fresh when there
// was no file; but a file that will hold a secret (fresh secretMode) is
// its owner's alone whatever it was: a token in a file others may read
// (a project's .mcp.json, 0644 under a home others may enter) lets them
// act as its agent, with the lead's tools for an orchestrator's.
func (s snapshot) writeMode(fresh fs.FileMode) fs.FileMode {
	if s.exists && fresh != secretMode {
		return s.mode
	}
	return fresh
}

// readSettings is path as it is now. Anything but a regular file is
// refused before it is read (a pipe would block), and so is a symbolic
// link (followLinks followed those before; one there now was put there
// meanwhile).
func readSettings(path string) (snapshot, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return snapshot{}, nil
	}
	if err != nil {
		return snapshot{}, fmt.Errorf("reading %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return snapshot{}, fmt.Errorf("reading %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return snapshot{}, fmt.Errorf("%s is %w; nothing was written", path, ErrNotRegular)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return snapshot{}, fmt.Errorf("reading %s: %w", path, err)
	}
	return snapshot{data: data, exists: true, mode: fi.Mode().Perm()}, nil
}

// maxTries bounds how often one install merges again into a file that
// another program changed while agentmsg wrote it.
const maxTries = 10

// replace writes want, merged from base, over path (a new file with mode
// fresh); only in place of
// exactly base. When another program changed the file meanwhile, its
// version is merged again and written in place of that, and so on: no
// version of the other program's is lost, even one that agentmsg's write
// had already replaced (it comes back merged, or as it was when it cannot
// be merged, or when the other program keeps changing the file). It
// returns the version last merged into and, when agentmsg's merge of it
// stands at path, what was written.
func replace(path string, base snapshot, want []byte, merge merger, fresh fs.FileMode, now time.Time) (snapshot, []byte, error) {
	expect := base // what stands at path, as far as agentmsg knows
	var mergeErr error
	// pending is another program's version that agentmsg's last write
	// replaced, until a write puts it back merged (or as it was).
	var pending *snapshot
	for try := 1; ; try++ {
		got, displaced, err := swap(path, want, base.writeMode(fresh), expect)
		switch {
		case err != nil:
			return base, nil, keepPending(path, pending, err, now)
		case got == nil && try > maxTries: // its version is back
			return base, nil, changedMeanwhile(path)
		case got == nil && mergeErr != nil: // its version is back
			return base, nil, fmt.Errorf("%w: %w", ErrNotMerged, mergeErr)
		case got == nil:
			return base, want, nil
		}
		// got is another program's version, newer than base.
		pending, expect = nil, *got
		if displaced {
			pending, expect = got, snapshot{data: want, exists: true}
		}
		base = *got
		switch {
		case try > maxTries: // putting its version back replaced a newer one
			return base, nil, keepPending(path, pending, changedMeanwhile(path), now)
		case try == maxTries && !displaced:
			return base, nil, changedMeanwhile(path)
		case try == maxTries: // put its version back as it was
			want, mergeErr = base.data, nil
			continue
		}
		want, mergeErr = merge(base.data)
		switch {
		case mergeErr != nil && !displaced: // its version stands
			return base, nil, fmt.Errorf("%w: %w", ErrNotMerged, mergeErr)
		case mergeErr != nil: // put its version back as it was
			want = base.data
		case !displaced && bytes.Equal(want, base.data):
			return base, nil, nil // it holds agentmsg's settings already
		}
	}
}

func changedMeanwhile(path string) error {
	return fmt.Errorf("%s: %w; it is left as that program wrote it: run again once it is done", path, ErrChangedMeanwhile)
}

// keepPending adds to err, which ends an install, where the other
// program's version that agentmsg's write replaced is kept: in a new file
// beside path, as a backup is.
func keepPending(path string, pending *snapshot, err error, now time.Time) error {
	if pending == nil {
		return err
	}
	kept, kerr := backupFile(path, pending.data, now)
	if kerr != nil {
		return fmt.Errorf("%w; another program's version of the file, which this write replaced, could not be kept: %w", err, kerr)
	}
	return fmt.Errorf("%w (another program's version of the file, which this write replaced, is kept as %s)", err, kept)
}

// swap puts data at path (with mode, through a temporary file in its
// directory) in place of expect, what agentmsg last knew stood there. got
// is nil when data replaced exactly that. Otherwise got is what another
// program had put at path meanwhile, and displaced tells whether data
// stands at path all the same (got was swapped out, and agentmsg holds it
// only in memory now) or path was left as got.
func swap(path string, data []byte, mode fs.FileMode, expect snapshot) (got *snapshot, displaced bool, err error) {
	tmp, err := writeTemp(path, data, mode)
	if err != nil {
		return nil, false, fmt.Errorf("writing %s: %w", path, err)
	}
	if !expect.exists {
		got, err = create(tmp, path)
		os.Remove(tmp) // still there when it was not renamed
		return got, false, err
	}
	err = exchange(tmp, path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		os.Remove(tmp)
		return &snapshot{}, false, nil // removed meanwhile
	case errors.Is(err, errors.ErrUnsupported):
		got, displaced, err = replaceIfUnchanged(tmp, path, expect)
		os.Remove(tmp)
		return got, displaced, err
	case err != nil:
		os.Remove(tmp)
		return nil, false, fmt.Errorf("writing %s: %w", path, err)
	}
	syncDir(path)
	was, err := readSettings(tmp)
	if err != nil {
		// What stood at path is at tmp now: it stays there.
		return nil, false, fmt.Errorf("writing %s: the file it replaced is kept as %s, and could not be read back: %w", path, tmp, err)
	}
	os.Remove(tmp)
	if was.same(expect) {
		return nil, true, nil
	}
	return &was, true, nil
}

// create puts tmp at path unless a file was made there meanwhile, which it
// returns.
func create(tmp, path string) (*snapshot, error) {
	err := renameNoReplace(tmp, path)
	if errors.Is(err, errors.ErrUnsupported) {
		// No way to rename only if absent here: look first. A file made
		// between this look and the rename would be lost.
		if _, err := os.Lstat(path); err == nil {
			return lookAgain(path)
		}
		err = os.Rename(tmp, path)
	}
	if errors.Is(err, fs.ErrExist) {
		return lookAgain(path)
	}
	if err != nil {
		return nil, fmt.Errorf("writing %s: %w", path, err)
	}
	syncDir(path)
	return nil, nil
}

// replaceIfUnchanged renames tmp over path if path still holds expect.
// Where files cannot be swapped, this is the best there is: an edit made
// between this look and the rename would be lost.
func replaceIfUnchanged(tmp, path string, expect snapshot) (*snapshot, bool, error) {
	now, err := lookAgain(path)
	if err != nil || !now.same(expect) {
		return now, false, err
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, false, fmt.Errorf("writing %s: %w", path, err)
	}
	syncDir(path)
	return nil, true, nil
}

// lookAgain is path as another program left it.
func lookAgain(path string) (*snapshot, error) {
	now, err := readSettings(path)
	if err != nil {
		return nil, err
	}
	return &now, nil
}

// tempPrefix starts the name of every temporary file agentmsg writes beside
// path; the pid that follows tells whether its writer is still running.
func tempPrefix(path string) string { return "." + filepath.Base(path) + ".agentmsg-" }

const tempSuffix = ".tmp"

// writeTemp writes data with mode to a new temporary file beside path
// (making path's directory when there is none), on disk before it returns.
func writeTemp(path string, data []byte, mode fs.FileMode) (string, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	f, err := os.CreateTemp(dir, tempPrefix(path)+strconv.Itoa(os.Getpid())+"-*"+tempSuffix)
	if err != nil {
		return "", err
	}
	if err := plainfile.Fill(f, data, mode); err != nil {
		return "", err
	}
	return f.Name(), nil
}

// removeLeftovers removes the temporary files beside path of installs that
// are no longer running (killed before they could remove them).
func removeLeftovers(path string) {
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		return
	}
	prefix := tempPrefix(path)
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || !strings.HasSuffix(rest, tempSuffix) {
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		if pid, err := strconv.Atoi(pidText); err == nil && pid > 0 && !running(pid) {
			os.Remove(filepath.Join(filepath.Dir(path), e.Name()))
		}
	}
}

// running reports whether a process pid exists (signal 0 only asks).
func running(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// syncDir makes a rename in path's directory durable. The rename is done
// whatever this returns: a failure only weakens it against a power cut,
// which is no reason to report a write that happened as failed.
func syncDir(path string) {
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		d.Sync()
		d.Close()
	}
}
