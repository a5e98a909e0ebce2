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
