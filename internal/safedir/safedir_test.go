package safedir

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEnsureMakesPrivateDirs(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "agentmsg-1", "locks")
	if err := Ensure(base, dir); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{filepath.Dir(dir), dir} {
		fi, err := os.Lstat(d)
		if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v, %v; want a 0700 directory", d, fi.Mode(), err)
		}
	}
	if err := Ensure(base, dir); err != nil {
		t.Errorf("again: %v", err)
	}
	if err := Ensure("", filepath.Join(base, "a", "b")); err != nil {
		t.Errorf("without a base: %v", err)
	}
}

// What another local user could have left in a shared directory is
// refused, and nothing is made inside it.
func TestEnsureRefusesDirsOthersControl(t *testing.T) {
	type tc struct {
		name  string
		setup func(t *testing.T, shared string) // shared: base/agentmsg-1, to be refused
		why   string
	}
	cases := []tc{
		{name: "writable by everyone", why: "writable by other users (mode 0777)",
			setup: func(t *testing.T, shared string) { mkdirMode(t, shared, 0o777) }},
		{name: "writable by the group", why: "writable by other users (mode 0770)",
			setup: func(t *testing.T, shared string) { mkdirMode(t, shared, 0o770) }},
		{name: "a symbolic link to a directory of ours", why: "is a symbolic link",
			setup: func(t *testing.T, shared string) { symlink(t, t.TempDir(), shared) }},
		{name: "a file", why: "is not a directory",
			setup: func(t *testing.T, shared string) {
				if err := os.WriteFile(shared, nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}},
	}
	if os.Geteuid() == 0 {
		// Only root can make a directory that belongs to someone else.
		cases = append(cases, tc{name: "owned by another user", why: "is owned by uid 65534",
			setup: func(t *testing.T, shared string) {
				mkdirMode(t, shared, 0o700)
				if err := os.Chown(shared, 65534, 65534); err != nil {
					t.Fatal(err)
				}
			}})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			base := t.TempDir()
			shared := filepath.Join(base, "agentmsg-1")
			c.setup(t, shared)
			dir := filepath.Join(shared, "locks")
			for _, f := range []func(string, string) error{Ensure, Check} {
				err := f(base, dir)
				if !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), c.why) || !strings.Contains(err.Error(), shared) {
					t.Errorf("err %v, want ErrUnsafe saying %s %s", err, shared, c.why)
				}
			}
			if _, err := os.Lstat(dir); err == nil {
				t.Errorf("%s was made inside it", dir)
			}
		})
	}
}

func TestCheckFollowTakesTheUsersSymlink(t *testing.T) {
	own := t.TempDir()
	link := filepath.Join(t.TempDir(), "home")
	symlink(t, own, link)
	if err := CheckFollow(link); err != nil {
		t.Errorf("a symlink to a private dir of ours: %v", err)
	}
	open := filepath.Join(t.TempDir(), "open")
	mkdirMode(t, open, 0o777)
	symlink(t, open, link+"2")
	if err := CheckFollow(link + "2"); !errors.Is(err, ErrUnsafe) {
		t.Errorf("a symlink to a world-writable dir: %v, want ErrUnsafe", err)
	}
	if err := Check(t.TempDir(), filepath.Join(t.TempDir(), "missing", "x")); err != nil {
		t.Errorf("Check of what does not exist yet: %v", err)
	}
}

func mkdirMode(t *testing.T, dir string, mode os.FileMode) {
	t.Helper()
	if err := os.Mkdir(dir, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, mode); err != nil { // past the umask
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// EnsureIn makes what is missing below base, never base itself: a
// mailbox removed under a running process stays removed.
func TestEnsureInNeverMakesItsBase(t *testing.T) {
	base := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(base, 0o700); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(base, "places", "s-1")
	if err := EnsureIn(base, dir); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(base); err != nil {
		t.Fatal(err)
	}
	if err := EnsureIn(base, dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("with its base gone: %v, want ErrNotExist", err)
	}
	if _, err := os.Lstat(base); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the base was made again: %v", err)
	}
}
