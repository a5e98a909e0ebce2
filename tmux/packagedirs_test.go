package tmux

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// With no tmux on $PATH (a daemon launchd started, a desktop app), the one
// a package manager installed is found, and said to be off $PATH; a file
// there that cannot run is no tmux.
func TestTmuxOffPathIsFoundWherePackagesGo(t *testing.T) {
	t.Parallel()
	notOnPath := func(string) (string, error) { return "", errors.New("not on $PATH") }
	empty, brew := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(empty, "tmux"), []byte("not a program"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(brew, "tmux")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	path, why, err := lookTmux(notOnPath, []string{filepath.Join(brew, "missing"), empty, brew})
	if err != nil || path != bin || why != "not on $PATH; the one in "+brew {
		t.Errorf("lookTmux = %q, %q, %v; want %q", path, why, err, bin)
	}
	if _, _, err := lookTmux(notOnPath, []string{empty}); !errors.Is(err, ErrNotInstalled) {
		t.Errorf("lookTmux with none = %v, want ErrNotInstalled", err)
	}
	onPath := func(string) (string, error) { return "/usr/bin/tmux", nil }
	if path, why, _ := lookTmux(onPath, []string{brew}); path != "/usr/bin/tmux" || why != "the first tmux on $PATH" {
		t.Errorf("$PATH first: %q, %q", path, why)
	}
}
