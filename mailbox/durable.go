package mailbox

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"syscall"
)

// What Store.Sync does differs by OS (durable_linux.go, durable_darwin.go):
// Linux syncs the whole file system that holds the store in one call
// (syncfs); Darwin has no such call, and its fsync(2) hands data to the
// drive without making the drive write it out of its cache, so there Sync
// fsyncs each inbox written since the last Sync, and its directory, and
// has the drive flush its cache once at the end (F_FULLFSYNC), which
// makes all of them durable.

// syncHow is one kind of call that makes written data durable.
type syncHow int

const (
	// syncFS: everything written to the file system that holds the path
	// (syncfs(2)).
	syncFS syncHow = iota
	// syncData: the file's (or directory's) own data and metadata, handed
	// to the drive (fsync(2)).
	syncData
	// syncFull: as syncData, and then the drive's cache written to its
	// medium, every file's that it holds (Darwin's F_FULLFSYNC; on Linux
	// fsync(2) already does so).
	syncFull
)

// syncStep is one such call on one path.
type syncStep struct {
	path string
	how  syncHow
}

// planSync chooses the calls that make durable what was written to the
// store at root since the last Sync: files appended to and directories
// that got new entries. With syncfs, one call for the whole file system,
// whatever was written; else each file, then each directory, handed to
// the drive, the last of them also flushing the drive's cache. Nothing
// written: no call, except with syncfs (which also covers writes nobody
// recorded).
func planSync(root string, files, dirs []string, canSyncfs bool) []syncStep {
	if canSyncfs {
		return []syncStep{{root, syncFS}}
	}
	steps := make([]syncStep, 0, len(files)+len(dirs))
	for _, f := range sorted(files) {
		steps = append(steps, syncStep{f, syncData})
	}
	for _, d := range sorted(dirs) {
		steps = append(steps, syncStep{d, syncData})
	}
	if len(steps) > 0 {
		steps[len(steps)-1].how = syncFull
	}
	return steps
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}

// unsynced is what AppendBatched wrote that the next Sync must make
// durable, shared by every copy of the Store New made.
type unsynced struct {
	mu    sync.Mutex // guards files and dirs
	files map[string]bool
	dirs  map[string]bool
	// syncing is held through a Sync: a Sync that finds nothing left to
	// do still returns only after the one that took its files is done.
	syncing sync.Mutex
}

// note records a file appended to and, when the append made it, its
// directory.
func (u *unsynced) note(file, dir string) {
	if u == nil {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.files == nil {
		u.files, u.dirs = map[string]bool{}, map[string]bool{}
	}
	u.files[file] = true
	if dir != "" {
		u.dirs[dir] = true
	}
}

// take empties the record and returns what it held.
func (u *unsynced) take() (files, dirs []string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for f := range u.files {
		files = append(files, f)
	}
	for d := range u.dirs {
		dirs = append(dirs, d)
	}
	u.files, u.dirs = nil, nil
	return files, dirs
}

// putBack records again what a failed Sync took, for the next one.
func (u *unsynced) putBack(files, dirs []string) {
	for _, f := range files {
		u.note(f, "")
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.dirs == nil {
		u.dirs = map[string]bool{}
	}
	for _, d := range dirs {
		u.dirs[d] = true
	}
}

// Sync makes everything AppendBatched wrote to the store durable, its
// lines and the inboxes it made (planSync: one syncfs(2) of the file
// system on Linux, one journal commit for them all).
func (s *Store) Sync() error {
	u := s.unsynced
	if u == nil {
		u = &unsynced{}
	}
	u.syncing.Lock()
	defer u.syncing.Unlock()
	files, dirs := u.take()
	for _, st := range planSync(s.Root, files, dirs, canSyncfs) {
		if err := syncPath(st); err != nil {
			u.putBack(files, dirs)
			return fmt.Errorf("syncing the mailbox (%s): %w", st.path, err)
		}
	}
	return nil
}

// syncPath makes one step's path durable as its step says.
func syncPath(st syncStep) error {
	f, err := os.Open(st.path)
	if errors.Is(err, os.ErrNotExist) && st.how != syncFS {
		return nil // removed since (compacted, cleaned): nothing of it to keep
	}
	if err != nil {
		return err
	}
	defer f.Close()
	switch st.how {
	case syncFS:
		return syncfs(f)
	case syncData:
		return fsync(f)
	default:
		return fullFsync(f)
	}
}

// ignoringEINTR calls fn again while a signal interrupts it.
func ignoringEINTR(fn func() error) error {
	for {
		if err := fn(); !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}
