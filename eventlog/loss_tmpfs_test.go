//go:build linux

package eventlog

// Mounting a tmpfs: Linux only (and root).

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// On a real full disk (a tmpfs): the appends that fail are counted in the
// lock file, whose ledger needs no new page, and told when there is room.
func TestAFullTmpfs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=16k,mode=0700"); err != nil {
		t.Fatalf("mounting a tmpfs: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, 0); err != nil {
			t.Errorf("unmounting %s: %v", dir, err)
			_ = unix.Unmount(dir, unix.MNT_DETACH)
		}
	})
	l := &Log{Dir: dir}
	if _, err := l.Append(Event{Type: "agent.ready"}); err != nil {
		t.Fatal(err)
	}
	filler := filepath.Join(dir, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	for err == nil {
		_, err = f.Write(make([]byte, 4096))
	}
	f.Close()
	failed := 0
	for i := 0; failed < 3 && i < 1000; i++ {
		if _, err := l.Append(Event{Type: "message.typing", Detail: strings.Repeat("x", 100)}); err != nil {
			failed++
		}
	}
	if loss, err := l.Lost(); err != nil || loss.Count != int64(failed) || failed != 3 {
		t.Fatalf("%d appends failed; Lost says %+v, %v", failed, loss, err)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	out, err := l.Append(Event{Type: "message.submitted"})
	if err != nil {
		t.Fatal(err)
	}
	all, _, _ := l.Since(-1, 10000)
	var told *Event
	for i, e := range all {
		if e.Type == TypeLost {
			told = &all[i]
		}
	}
	if told == nil || told.Lost != 3 || told.Reason != "no_space" || all[len(all)-1].ID != out[0].ID {
		t.Fatalf("the loss is told as %+v", told)
	}
}
