package mailbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentmsg/agentmsg/internal/safedir"
)

// The mailbox of last resort lives in the shared TMPDIR: a directory
// another user made there first is refused, for reading (forged messages
// would be typed into agents) and for writing.
func TestSharedMailboxDirOthersControlIsRefused(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	s := Default(func(string) (string, bool) { return "", false })
	shared := filepath.Join(tmp, fmt.Sprintf("agentmsg-%d", os.Getuid()))
	if s.Root != filepath.Join(shared, "state") {
		t.Fatalf("root %s, want it in %s", s.Root, shared)
	}
	if err := s.Check(); err != nil {
		t.Fatalf("nothing made yet: %v", err)
	}
	if err := os.Mkdir(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := s.Check(); !errors.Is(err, safedir.ErrUnsafe) {
		t.Errorf("Check: %v, want ErrUnsafe", err)
	}
	err := box(t, s, "ana").Append(newEnv(t, "lead", "ana", "hi"))
	if !errors.Is(err, safedir.ErrUnsafe) {
		t.Errorf("Append: %v, want ErrUnsafe", err)
	}
	if _, err := os.Lstat(s.Root); err == nil {
		t.Errorf("%s was made inside it", s.Root)
	}
}

// A symbolic link at an inbox's name (or its lock's) is never followed.
func TestSymlinkAtAnInboxFileIsRefused(t *testing.T) {
	for _, name := range []string{"ana.jsonl", "ana.lock"} {
		t.Run(name, func(t *testing.T) {
			s := newStore(t)
			dir := filepath.Join(s.Root, "teams", team, "mailbox")
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			victim := filepath.Join(t.TempDir(), "pwned")
			if err := os.Symlink(victim, filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
			if err := box(t, s, "ana").Append(newEnv(t, "lead", "ana", "hi")); err == nil {
				t.Error("appended through a symbolic link")
			}
			if _, err := os.Lstat(victim); err == nil {
				t.Errorf("the link's target %s was created", victim)
			}
		})
	}
}

// A directory under the root made writable by others is refused too.
func TestOpenDirUnderTheRootIsRefused(t *testing.T) {
	s := newStore(t)
	dir := filepath.Join(s.Root, "teams", team)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := box(t, s, "ana").Append(newEnv(t, "lead", "ana", "hi")); !errors.Is(err, safedir.ErrUnsafe) {
		t.Errorf("Append: %v, want ErrUnsafe", err)
	}
}

// The root the user names may be a symbolic link to a private directory.
func TestRootMayBeTheUsersSymlink(t *testing.T) {
	link := filepath.Join(t.TempDir(), "state")
	if err := os.Symlink(t.TempDir(), link); err != nil {
		t.Fatal(err)
	}
	s := Default(func(k string) (string, bool) { return link, k == "AGENTMSG_HOME" })
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	if err := box(t, s, "ana").Append(newEnv(t, "lead", "ana", "hi")); err != nil {
		t.Fatal(err)
	}
}

// After its first append, a store looks at an inbox's directory alone (the
// ones above it are this user's and writable by no one else): the
// directory replaced by a link, or opened to others, is still refused,
// and one removed under a running store is made again. The mailbox's root
// removed is not: see TestARemovedRootIsNotMadeAgain.
func TestADirectoryCheckedOnceIsStillLookedAt(t *testing.T) {
	s := New(t.TempDir())
	b := box(t, s, "ana")
	if err := b.Append(newEnv(t, "lead", "ana", "first")); err != nil {
		t.Fatal(err)
	}
	for _, change := range []struct {
		name string
		do   func(dir string) error
	}{
		{"opened to others", func(dir string) error { return os.Chmod(dir, 0o777) }},
		{"replaced by a link", func(dir string) error {
			other := t.TempDir()
			if err := os.RemoveAll(dir); err != nil {
				return err
			}
			return os.Symlink(other, dir)
		}},
	} {
		if err := change.do(b.dir); err != nil {
			t.Fatal(err)
		}
		if err := b.Append(newEnv(t, "lead", "ana", "after")); !errors.Is(err, safedir.ErrUnsafe) {
			t.Errorf("%s: append %v, want ErrUnsafe", change.name, err)
		}
		if err := os.RemoveAll(b.dir); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.RemoveAll(filepath.Dir(b.dir)); err != nil {
		t.Fatal(err)
	}
	if err := b.Append(newEnv(t, "lead", "ana", "again")); err != nil {
		t.Fatalf("after the team's directory was removed: %v", err)
	}
}
