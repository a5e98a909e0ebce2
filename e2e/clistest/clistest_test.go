package clistest

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// Find takes the variable's path first, then npm's place under the cache
// dir, and says ErrNotInstalled when neither is there.
func TestFind(t *testing.T) {
	dir := t.TempDir()
	const env = "AGENTMSG_CLISTEST_FIND"
	t.Setenv(env, "")
	if _, err := Find(env, dir, "x"); !errors.Is(err, ErrNotInstalled) {
		t.Fatalf("nothing there: %v, want ErrNotInstalled", err)
	}
	bin := filepath.Join(dir, "node_modules", ".bin", "x")
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	if p, err := Find(env, dir, "x"); err != nil || p != bin {
		t.Fatalf("installed: %q, %v; want %q", p, err, bin)
	}
	t.Setenv(env, filepath.Join(dir, "missing"))
	if _, err := Find(env, dir, "x"); err == nil || errors.Is(err, ErrNotInstalled) {
		t.Fatalf("a variable naming nothing: %v, want its own error", err)
	}
}

// descendants starts at the process itself, and alive tells a live one.
func TestDescendants(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	me := os.Getpid()
	if got := descendants(me); len(got) == 0 || got[0] != me {
		t.Fatalf("descendants(%d) = %v", me, got)
	}
	if !alive(me) {
		t.Fatal("this process is not alive")
	}
	if got := descendants(os.Getppid()); !slices.Contains(got, me) {
		t.Fatalf("descendants of the parent %v lack this process %d", got, me)
	}
}
