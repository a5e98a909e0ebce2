package eventlog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// warnings records what Log.Warn heard.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) warn(msg any, kv ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, fmt.Sprint(msg, kv))
}

func (w *warnings) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.msgs...)
}

// failWrites makes l's batches fail as a full disk's do, while *full.
func failWrites(l *Log, full *bool) {
	l.appendFile = func(f *os.File, b []byte) (int, error) {
		if *full {
			return 0, &os.PathError{Op: "write", Path: f.Name(), Err: unix.ENOSPC}
		}
		return f.Write(b)
	}
}

// Events that cannot be written are counted, and the next append that
// goes through writes an events.lost event first: how many, since when,
// why. Its own events keep their ids after it, and nothing else changes.
func TestLostEventsAreToldWhenTheLogIsWrittenAgain(t *testing.T) {
	var w warnings
	l := &Log{Dir: t.TempDir(), Warn: w.warn}
	full := false
	failWrites(l, &full)
	first, err := l.Append(Event{Type: "message.recorded", Message: "MSG_A_00000001"})
	if err != nil {
		t.Fatal(err)
	}
	full = true
	for range 2 {
		if _, err := l.Append(Event{Type: "message.pasted"}, Event{Type: "message.pressed"}); !errors.Is(err, unix.ENOSPC) {
			t.Fatalf("an append to a full disk: %v, want ENOSPC", err)
		}
	}
	if loss, err := l.Lost(); err != nil || loss.Count != 4 {
		t.Fatalf("Lost while the disk is full = %+v, %v; want 4", loss, err)
	}
	full = false
	out, err := l.Append(Event{Type: "message.submitted", Message: "MSG_A_00000001"})
	if err != nil || len(out) != 1 || out[0].Type != "message.submitted" {
		t.Fatalf("the first append with room = %+v, %v", out, err)
	}
	got, _, err := l.Since(first[0].ID, 10)
	if err != nil || len(got) != 2 {
		t.Fatalf("after the loss the log has %+v, %v; want events.lost and submitted", got, err)
	}
	lost := got[0]
	if lost.Type != TypeLost || lost.Lost != 4 || lost.Since.IsZero() || lost.Reason != "no_space" ||
		!strings.Contains(lost.Detail, "no space left on device") || got[1].ID != out[0].ID {
		t.Errorf("the loss is told as %+v, then %+v", lost, got[1])
	}
	if loss, err := l.Lost(); err != nil || loss.Count != 0 {
		t.Errorf("Lost once told = %+v, %v; want none", loss, err)
	}
	// Told once: the next append is only itself.
	again, _ := l.Append(Event{Type: "message.read"})
	if got, _, _ := l.Since(out[0].ID, 10); len(got) != 1 || got[0].ID != again[0].ID {
		t.Errorf("after the next append the log has %+v", got)
	}
	msgs := w.all()
	if len(msgs) != 2 || !strings.Contains(msgs[0], "could not be written") || !strings.Contains(msgs[1], "written again") {
		t.Errorf("warnings: %q; want the first failure (once for both), then the log written again", msgs)
	}
}

// The count is kept in the log's lock file, so another process tells what
// one that failed could not: the one that lost them may be a send that
// has exited.
func TestAnotherProcessTellsTheLoss(t *testing.T) {
	dir := t.TempDir()
	failing := &Log{Dir: dir}
	full := true
	failWrites(failing, &full)
	if _, err := (&Log{Dir: dir}).Append(Event{Type: "agent.ready"}); err != nil {
		t.Fatal(err)
	}
	if _, err := failing.Append(Event{Type: "message.submitted"}); err == nil {
		t.Fatal("the failing append went through")
	}
	if _, err := (&Log{Dir: dir}).Append(Event{Type: "agent.busy"}); err != nil {
		t.Fatal(err)
	}
	got, _, _ := (&Log{Dir: dir}).Since(-1, 10)
	if len(got) != 3 || got[1].Type != TypeLost || got[1].Lost != 1 {
		t.Fatalf("the log has %+v; want the loss told by the other log", got)
	}
}

// A log whose lock file cannot even be opened (its directory cannot be
// made) remembers what it lost, and tells it once it can write.
func TestALogWithNoLockFileRemembersItsLoss(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "events")
	if err := os.WriteFile(dir, nil, 0o600); err != nil { // a file where the directory goes
		t.Fatal(err)
	}
	l := &Log{Dir: dir}
	if _, err := l.Append(Event{Type: "message.recorded"}, Event{Type: "message.pasted"}); err == nil {
		t.Fatal("an append into a file went through")
	}
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(Event{Type: "message.submitted"}); err != nil {
		t.Fatal(err)
	}
	got, _, _ := l.Since(-1, 10)
	if len(got) != 2 || got[0].Type != TypeLost || got[0].Lost != 2 || got[0].Reason != "write_failed" {
		t.Fatalf("the log has %+v; want the loss of 2, then submitted", got)
	}
}
