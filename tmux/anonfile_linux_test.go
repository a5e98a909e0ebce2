//go:build linux

package tmux

import (
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
)

// Where there is no memfd (the portable build), a paste's file still has
// no name on Linux: nothing a kill could leave in the temp dir (five empty
// agentmsg-paste-* files were found in /tmp after killed portable runs).
func TestTempFileHasNoName(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	f, err := tempFile("paste")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("the temp dir holds %d names while the file is open", len(entries))
	}
	// Made with a name and unlinked, the kernel still says the name it had
	// (".../agentmsg-paste-123 (deleted)"); made without, it has none.
	link, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd())))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(link, "agentmsg-") {
		t.Fatalf("the file had a name in the temp dir: %s", link)
	}
	if _, err := io.WriteString(f, "hello"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(f); string(b) != "hello" {
		t.Fatalf("read back %q", b)
	}
}
