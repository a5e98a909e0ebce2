package tmux

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// On a file system that folds case (macOS), a socket path typed in
// another case than its directories store is spelt as they store it, so
// that both spellings key the same pane locks and the same mailbox.
func TestStoredCase(t *testing.T) {
	t.Parallel()
	dirs := map[string][]string{
		"/":                       {"private", "Users"},
		"/private":                {"tmp", "var"},
		"/private/tmp":            {"Demo", "demo2"},
		"/private/tmp/Demo":       {"sock", "Sock2"},
		"/Users":                  {"ana"},
		"/Users/ana":              {"tmux-Sockets"},
		"/Users/ana/tmux-Sockets": {"s"},
	}
	list := func(dir string) ([]string, error) { return dirs[dir], nil }
	// On the folding file system every spelling of a name is the file.
	same := func(a, b string) bool { return strings.EqualFold(a, b) }
	for path, want := range map[string]string{
		"/private/tmp/demo/sock":    "/private/tmp/Demo/sock",
		"/private/tmp/DEMO/SOCK":    "/private/tmp/Demo/sock",
		"/private/tmp/Demo/sock":    "/private/tmp/Demo/sock",
		"/users/ANA/tmux-sockets/s": "/Users/ana/tmux-Sockets/s",
		"/private/tmp/demo/missing": "/private/tmp/Demo/missing",
		"/private/tmp/demo2":        "/private/tmp/demo2",
	} {
		if got := storedCase(path, list, same); got != want {
			t.Errorf("storedCase(%q) = %q, want %q", path, got, want)
		}
	}
	// A name that differs but is another file (a case-sensitive volume)
	// stays as given.
	other := func(a, b string) bool { return a == b }
	if got := storedCase("/private/tmp/demo/sock", list, other); got != "/private/tmp/demo/sock" {
		t.Errorf("on a volume that tells case apart: %q", got)
	}
}

// On this machine's file system: where it folds case (macOS), a socket
// path typed in another case is the one the directory stores; elsewhere
// it stays as typed.
func TestCanonicalSocketCase(t *testing.T) {
	t.Parallel()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "Demo"), 0o700); err != nil {
		t.Fatal(err)
	}
	typed := filepath.Join(dir, "demo", "s")
	want := typed
	if foldsCase {
		want = filepath.Join(dir, "Demo", "s")
	}
	if got, err := CanonicalSocket(typed); err != nil || got != want {
		t.Errorf("CanonicalSocket(%q) = %q, %v; want %q", typed, got, err, want)
	}
}
