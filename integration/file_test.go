package integration

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
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
			// A backup is its owner's alone, whatever the file's mode: a
			// settings file may hold a token.
			if got := fileMode(t, rep.Backup); got != 0o600 {
				t.Errorf("backup mode %v, want 0600 (the file's is %v)", got, mode)
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

// Another program (the agent CLI itself) that edits the settings file
// between agentmsg's read and its write keeps its edit: agentmsg merges
// into the new content, or leaves the other program's file as it is and
// says why (issue 17, item 12). The merge runs between the read and the
// write, so a merge that edits the file stands for that program.
func TestInstallKeepsAnEditMadeMeanwhile(t *testing.T) {
	claude := *mustCLI(t, "claude").Hooks
	hooks := claude.Commands("/bin/agentmsg", "/st", "/st/r.log", nil)
	const theirs = "{\n  \"model\": \"sonnet\",\n  \"theme\": \"dark\"\n}\n"
	for _, tc := range []struct {
		name   string
		old    string // "" for no file
		write  func(path, data string) error
		theirs string // what the other program writes
		edits  int    // how many merges it writes during
		err    error  // the install's error; then the file must hold theirs
	}{
		{"replaced by a rename", userSettings, renameWrite, theirs, 1, nil},
		{"rewritten in place", userSettings, inPlaceWrite, theirs, 1, nil},
		{"made meanwhile", "", renameWrite, theirs, 1, nil},
		{"removed meanwhile", userSettings, removeFile, "", 1, nil},
		{"no longer valid", userSettings, renameWrite, "{\"model\": ", 1, ErrNotMerged},
		{"changed on every try", userSettings, renameWrite, theirs, 1000, ErrChangedMeanwhile},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "settings.json")
			if tc.old != "" {
				writeFile(t, path, tc.old, 0o640)
			}
			merges := 0
			merge := func(old []byte) ([]byte, error) {
				if merges++; merges <= tc.edits {
					defer func() {
						if err := tc.write(path, tc.theirs); err != nil {
							t.Fatal(err)
						}
					}()
				}
				return mergeHooks(old, claude, hooks)
			}
			rep, err := install("claude", path, merge, newMode, false, time.Now())
			if !errors.Is(err, tc.err) {
				t.Fatalf("error %v, want %v", err, tc.err)
			}
			data, _ := os.ReadFile(path)
			if tc.err != nil {
				if string(data) != tc.theirs {
					t.Errorf("the other program's file was changed:\n%s", data)
				}
				noTemps(t, dir)
				return
			}
			want := strings.Trim(tc.theirs, "{}\n") // its settings
			if !strings.Contains(string(data), want) || !strings.Contains(string(data), "hook prompt-submit") {
				t.Errorf("want %q and agentmsg's hooks; the file holds:\n%s", want, data)
			}
			if !rep.Written || !strings.Contains(rep.Diff, "+  \"hooks\"") || !strings.Contains(rep.Diff, " "+strings.SplitN(want, "\n", 2)[0]) {
				t.Errorf("the report does not show the change to the file as it was: %+v", rep)
			}
			if m := fileMode(t, path).Perm(); tc.theirs != "" && m != 0o640 {
				t.Errorf("mode %v, want 0640", m)
			}
			noTemps(t, dir)
		})
	}
}

// renameWrite writes data as many programs do: a new file renamed over
// the old one.
func renameWrite(path, data string) error {
	tmp := path + ".other"
	if err := os.WriteFile(tmp, []byte(data), 0o640); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// inPlaceWrite writes data into the file itself (as Node's writeFileSync
// does).
func inPlaceWrite(path, data string) error { return os.WriteFile(path, []byte(data), 0o640) }

func removeFile(path, _ string) error { return os.Remove(path) }

// A program that saves the settings file while an install writes it
// never loses its save: when both are done, the file holds the save (with
// agentmsg's hooks merged in, or not, as the last writer left it). Only
// how often the two overlap depends on timing: the save comes a random
// moment after the install has read the file (its backup is there).
func TestInstallRacesAWriter(t *testing.T) {
	rounds := 300
	if testing.Short() {
		rounds = 30
	}
	claude := *mustCLI(t, "claude").Hooks
	hooks := claude.Commands("/bin/agentmsg", "/st", "/st/r.log", nil)
	merges := 0
	merge := func(old []byte) ([]byte, error) {
		merges++
		return mergeHooks(old, claude, hooks)
	}
	const save = "{\"model\": \"sonnet\"}\n"
	again := 0 // rounds that found the save after their read and merged again
	for round := range rounds {
		dir := t.TempDir()
		path := writeFile(t, filepath.Join(dir, "settings.json"), "{}\n", 0o600)
		done := make(chan error)
		go func() {
			for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); {
				if m, _ := filepath.Glob(path + ".bak-*"); len(m) > 0 {
					break
				}
			}
			for range rand.IntN(20000) {
				runtime.Gosched()
			}
			done <- renameWrite(path, save)
		}()
		merges = 0
		rep, err := install("claude", path, merge, newMode, false, time.Now())
		if werr := <-done; werr != nil {
			t.Fatal(werr)
		}
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		data, _ := os.ReadFile(path)
		if !strings.Contains(string(data), `"model": "sonnet"`) {
			t.Fatalf("round %d: the other program's save is lost; the file holds (install: %+v)\n%s", round, rep, data)
		}
		if merges > 1 {
			again++
		}
		noTemps(t, dir)
	}
	t.Logf("%d rounds: %d found the save after their read and merged again", rounds, again)
}

// An install killed before it could remove its temporary file leaves it
// behind; the next install removes it, and leaves alone those of installs
// still running and every file that is not agentmsg's.
func TestInstallRemovesLeftovers(t *testing.T) {
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := writeFile(t, filepath.Join(dir, ".claude", "settings.json"), userSettings, 0o644)
	name := func(pid int) string {
		return filepath.Join(filepath.Dir(path), fmt.Sprintf(".settings.json.agentmsg-%d-12345.tmp", pid))
	}
	leftover := writeFile(t, name(dead.Process.Pid), "{}", 0o644)
	others := []string{
		writeFile(t, name(os.Getpid()), "{}", 0o644), // an install still running
		writeFile(t, filepath.Join(filepath.Dir(path), ".settings.json.tmp12345"), "{}", 0o644),
		writeFile(t, filepath.Join(filepath.Dir(path), ".other.json.agentmsg-1-2.tmp"), "{}", 0o644),
	}
	if _, err := InstallHooks(HookInstall{CLI: "claude", Dir: dir, Exe: "/bin/agentmsg", Root: "/st", Receipts: "/st/r.log", Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(leftover); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the leftover of a dead install is still there: %v", err)
	}
	for _, o := range others {
		if _, err := os.Stat(o); err != nil {
			t.Errorf("%s was removed: %v", o, err)
		}
	}
}
