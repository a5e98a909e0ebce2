// Package safedir makes and checks the directories agentmsg keeps its
// files in, as OpenSSH and tmux check theirs: each must be a directory
// (never a symbolic link), owned by this user, and writable by no one
// else. A directory another local user created or can write to would let
// them choose where agentmsg writes (a symlink at a lock's name), hold
// every lock, or read and forge messages; agentmsg refuses it instead.
package safedir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// ErrUnsafe is a directory agentmsg will not use.
var ErrUnsafe = errors.New("unsafe directory")

// Ensure creates dir, and every missing directory between base and dir,
// with mode 0700, and checks each of them from just below base down to dir
// (never following a symbolic link). base is where the system or the user
// said to look (TMPDIR, XDG_RUNTIME_DIR, a configured root): it is created
// if missing but not checked. With base "" or not above dir, dir alone is
// made (its parents as needed) and checked.
func Ensure(base, dir string) error { return walk(base, dir, true, true) }

// EnsureIn is Ensure for a dir below base that never makes base itself:
// one that is gone (removed under a running process) stays gone, and
// EnsureIn fails (fs.ErrNotExist).
func EnsureIn(base, dir string) error { return walk(base, dir, true, false) }

// Check checks the directories Ensure would, as far as they exist, and
// creates nothing.
func Check(base, dir string) error { return walk(base, dir, false, false) }

// Still checks dir alone, as Ensure checks each directory: for one that
// Ensure made or checked, with every directory above it, a moment ago.
// Those are this user's and writable by no one else, so no one else can
// have replaced one since; dir itself is looked at (gone, or replaced by
// this user, it is refused, and the caller ensures it again).
func Still(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	return check(dir, fi)
}

func walk(base, dir string, create, makeBase bool) error {
	dir = filepath.Clean(dir)
	below := []string{dir} // the directories to check, top down
	if base != "" {
		base = filepath.Clean(base)
		if rel, err := filepath.Rel(base, dir); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			below = nil
			for p, parts := base, strings.Split(rel, string(filepath.Separator)); rel != "." && len(parts) > 0; parts = parts[1:] {
				p = filepath.Join(p, parts[0])
				below = append(below, p)
			}
		}
	}
	if create {
		// What is above the first checked directory is the user's or the
		// system's, made as MkdirAll would.
		top := dir
		if len(below) > 0 {
			top = filepath.Dir(below[0])
		}
		if !makeBase {
			if _, err := os.Stat(top); err != nil {
				return err
			}
		} else if err := os.MkdirAll(top, 0o700); err != nil {
			return err
		}
	}
	for _, d := range below {
		fi, err := os.Lstat(d)
		if errors.Is(err, fs.ErrNotExist) {
			if !create {
				return nil // nothing further down exists yet
			}
			if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
				return err
			}
			fi, err = os.Lstat(d)
		}
		if err != nil {
			return err
		}
		if err := check(d, fi); err != nil {
			return err
		}
	}
	return nil
}

// CheckFollow checks dir as Ensure does, but follows a symbolic link to
// it: for a directory the user named, which may well be one.
func CheckFollow(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	return check(dir, fi)
}

func check(path string, fi fs.FileInfo) error {
	var why string
	st, _ := fi.Sys().(*syscall.Stat_t)
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		why = "is a symbolic link"
	case !fi.IsDir():
		why = "is not a directory"
	case st != nil && int(st.Uid) != os.Geteuid():
		why = fmt.Sprintf("is owned by uid %d, not by you (uid %d)", st.Uid, os.Geteuid())
	case fi.Mode().Perm()&0o022 != 0:
		why = fmt.Sprintf("is writable by other users (mode %04o)", fi.Mode().Perm())
	default:
		return nil
	}
	return fmt.Errorf("%w: refusing to use %s: it %s, so another user may control it; remove it, or make it yours and private (chown, chmod 700), and try again", ErrUnsafe, path, why)
}
