package integration

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

const userSettings = "{\n  \"model\": \"opus\"\n}\n"

// A settings file that is a symbolic link (into a dotfiles folder, say) is
// written through: the file it leads to changes, the link stays as it was
// (issue 17, item 12).
func TestInstallWritesThroughLinks(t *testing.T) {
	for _, tc := range []struct {
		name string
		// setup makes DIR/.claude/settings.json lead to a file holding
		// userSettings, and returns that file.
		setup func(t *testing.T, dir string) string
	}{
		{"relative link", func(t *testing.T, dir string) string {
			real := writeFile(t, filepath.Join(dir, "dotfiles", "claude.json"), userSettings, 0o640)
			symlink(t, filepath.Join("..", "dotfiles", "claude.json"), filepath.Join(dir, ".claude", "settings.json"))
			return real
		}},
		{"absolute link", func(t *testing.T, dir string) string {
			real := writeFile(t, filepath.Join(dir, "dotfiles", "claude.json"), userSettings, 0o600)
			symlink(t, real, filepath.Join(dir, ".claude", "settings.json"))
			return real
		}},
		{"chain of links", func(t *testing.T, dir string) string {
			real := writeFile(t, filepath.Join(dir, "store", "real.json"), userSettings, 0o644)
			symlink(t, filepath.Join("..", "store", "real.json"), filepath.Join(dir, "dotfiles", "claude.json"))
			symlink(t, filepath.Join(dir, "dotfiles", "claude.json"), filepath.Join(dir, "middle.json"))
			symlink(t, filepath.Join("..", "middle.json"), filepath.Join(dir, ".claude", "settings.json"))
			return real
		}},
		// ".." in a link is read from the directory the link really is in,
		// not from the path that reached it.
		{"link inside a linked directory", func(t *testing.T, dir string) string {
			real := writeFile(t, filepath.Join(dir, "dotfiles", "shared.json"), userSettings, 0o644)
			symlink(t, filepath.Join(dir, "dotfiles", "claude"), filepath.Join(dir, ".claude"))
			symlink(t, filepath.Join("..", "shared.json"), filepath.Join(dir, "dotfiles", "claude", "settings.json"))
			return real
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			real := tc.setup(t, dir)
			link := filepath.Join(dir, ".claude", "settings.json")
			linkText, _ := os.Readlink(link)
			mode := fileMode(t, real)

			rep, err := InstallHooks(HookInstall{CLI: "claude", Dir: dir, Exe: "/bin/agentmsg", Root: "/st", Receipts: "/st/r.log", Now: time.Now()})
			if err != nil || !rep.Written {
				t.Fatalf("%+v, %v", rep, err)
			}
			if got, err := os.Readlink(link); err != nil || got != linkText {
				t.Fatalf("the link was replaced: now %q (%v), was %q", got, err, linkText)
			}
			data, _ := os.ReadFile(real)
			if !strings.Contains(string(data), "hook prompt-submit") || !strings.HasPrefix(string(data), "{\n  \"model\": \"opus\",") {
				t.Errorf("the linked file holds:\n%s", data)
			}
			if got := fileMode(t, real); got != mode {
				t.Errorf("mode %v, want %v", got, mode)
			}
			if rep.Target != real {
				t.Errorf("report names the file written %q, want %q", rep.Target, real)
			}
			if b, _ := os.ReadFile(rep.Backup); string(b) != userSettings {
				t.Errorf("backup %s holds %q", rep.Backup, b)
			}
			noTemps(t, dir)
		})
	}
}

// A link that leads nowhere, round in a loop, or to something other than
// a file is refused, and nothing anywhere changes: agentmsg does not guess
// where a missing dotfiles folder should be, and never replaces a device or
// a pipe with a file.
func TestInstallRefusesLinksItCannotFollow(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, dir, path string)
		want  string // in the error
		is    error
	}{
		{"dangling link", func(t *testing.T, dir, path string) {
			symlink(t, filepath.Join(dir, "dotfiles", "claude.json"), path)
		}, "dotfiles/claude.json, which does not exist", ErrDanglingLink},
		{"dangling chain", func(t *testing.T, dir, path string) {
			symlink(t, filepath.Join(dir, "gone.json"), filepath.Join(dir, "middle.json"))
			symlink(t, filepath.Join(dir, "middle.json"), path)
		}, "gone.json, which does not exist", ErrDanglingLink},
		{"loop", func(t *testing.T, dir, path string) {
			symlink(t, path, filepath.Join(dir, "a.json"))
			symlink(t, filepath.Join(dir, "a.json"), path)
		}, "too many levels of symbolic links", nil},
		{"link to a pipe", func(t *testing.T, dir, path string) {
			if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
				t.Fatal(err)
			}
			symlink(t, filepath.Join(dir, "fifo"), path)
		}, "not a regular file", ErrNotRegular},
		{"a directory", func(t *testing.T, dir, path string) {
			if err := os.MkdirAll(path, 0o755); err != nil {
				t.Fatal(err)
			}
		}, "not a regular file", ErrNotRegular},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, ".claude", "settings.json")
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			tc.setup(t, dir, path)
			before := listTree(t, dir)
			_, err := InstallHooks(HookInstall{CLI: "claude", Dir: dir, Exe: "/bin/agentmsg", Root: "/st", Receipts: "/st/r.log", Now: time.Now()})
			if err == nil || !strings.Contains(err.Error(), tc.want) || (tc.is != nil && !errors.Is(err, tc.is)) {
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
			if after := listTree(t, dir); after != before {
				t.Errorf("the tree changed:\nbefore\n%s\nafter\n%s", before, after)
			}
		})
	}
}

func writeFile(t *testing.T, path, data string, mode os.FileMode) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // past the umask
		t.Fatal(err)
	}
	return path
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func fileMode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode()
}

// listTree is every name under dir with its kind, link target or content.
func listTree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		b.WriteString(strings.TrimPrefix(p, dir) + " " + fi.Mode().String())
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			b.WriteString(" -> " + l)
		case fi.Mode().IsRegular():
			data, _ := os.ReadFile(p)
			b.WriteString(" " + string(data))
		}
		b.WriteString("\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// noTemps fails when a temporary file of agentmsg's is left under dir.
func noTemps(t *testing.T, dir string) {
	t.Helper()
	_ = filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && strings.Contains(filepath.Base(p), ".tmp") {
			t.Errorf("temporary file left behind: %s", p)
		}
		return nil
	})
}
