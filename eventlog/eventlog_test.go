package eventlog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestAppendAndSince(t *testing.T) {
	l := &Log{Dir: t.TempDir()}
	if last, err := l.Last(); err != nil || last != -1 {
		t.Fatalf("Last of an empty log = %d, %v", last, err)
	}
	evs, err := l.Append(Event{Type: "message.recorded", Message: "MSG_A_00000001"}, Event{Type: "message.submitted", Message: "MSG_A_00000001"})
	if err != nil || len(evs) != 2 || evs[0].ID != 0 || evs[1].ID <= evs[0].ID || evs[0].Time.IsZero() {
		t.Fatalf("Append = %+v, %v", evs, err)
	}
	got, next, err := l.Since(-1, 100)
	if err != nil || len(got) != 2 || next != evs[1].ID || got[1].Type != "message.submitted" {
		t.Fatalf("Since(-1) = %+v, %d, %v", got, next, err)
	}
	got, next2, err := l.Since(next, 100)
	if err != nil || len(got) != 0 || next2 != next {
		t.Fatalf("Since(last) = %+v, %d, %v; want nothing", got, next2, err)
	}
	got, _, _ = l.Since(evs[0].ID, 100)
	if len(got) != 1 || got[0].ID != evs[1].ID {
		t.Fatalf("Since(first) = %+v", got)
	}
	if last, _ := l.Last(); last != evs[1].ID {
		t.Errorf("Last = %d, want %d", last, evs[1].ID)
	}
}

// Many writers at once: every event gets its own id, in the order of the
// file, and a reader that follows in small steps sees each once.
func TestConcurrentAppendsAndRotation(t *testing.T) {
	l := &Log{Dir: t.TempDir(), MaxSize: 2000, Keep: 1000}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 50 {
				if _, err := (&Log{Dir: l.Dir, MaxSize: 2000, Keep: 1000}).Append(Event{Type: "message.typing", Detail: fmt.Sprintf("%d-%d", w, i)}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	seen := map[string]bool{}
	after, last := int64(-1), int64(-1)
	for {
		evs, next, err := l.Since(after, 7)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) == 0 {
			break
		}
		for _, e := range evs {
			if e.ID <= last || seen[e.Detail] {
				t.Fatalf("event %+v out of order or twice", e)
			}
			last, seen[e.Detail] = e.ID, true
		}
		after = next
	}
	if len(seen) != 400 {
		t.Fatalf("followed %d events, want 400", len(seen))
	}
	bases, _ := l.bases()
	if len(bases) < 5 {
		t.Errorf("%d files: the log did not rotate at 2000 bytes", len(bases))
	}
}

// Rotated-away events are reported as missed, never silently skipped.
func TestExpired(t *testing.T) {
	l := &Log{Dir: t.TempDir(), MaxSize: 200, Keep: 2}
	var first Event
	for i := range 40 {
		evs, err := l.Append(Event{Type: "agent.busy", Detail: fmt.Sprint(i)})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = evs[0]
		}
	}
	if _, _, err := l.Since(first.ID, 10); !errors.Is(err, ErrExpired) {
		t.Fatalf("Since(an expired id) = %v, want ErrExpired", err)
	}
	if evs, _, err := l.Since(-1, 100); err != nil || len(evs) == 0 {
		t.Fatalf("Since(-1) after rotation = %d events, %v", len(evs), err)
	}
}

// A line cut short (a writer killed mid-write) is skipped, and the next
// append still gives ids that only grow.
func TestTornLine(t *testing.T) {
	l := &Log{Dir: t.TempDir()}
	evs, _ := l.Append(Event{Type: "message.recorded"})
	f, err := os.OpenFile(l.path(0), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"id":99,"type":"mess`)
	f.Close()
	more, err := l.Append(Event{Type: "message.submitted"})
	if err != nil || more[0].ID <= evs[0].ID {
		t.Fatalf("append after a torn line = %+v, %v", more, err)
	}
	got, _, _ := l.Since(-1, 10)
	if len(got) != 2 || got[0].Type != "message.recorded" || got[1].Type != "message.submitted" {
		t.Fatalf("events after a torn line: %+v; want both whole ones", got)
	}
}

// Appends made at once in one process go to the file together (a
// broadcast to a hundred agents appends four hundred events at once, and
// each append alone took the log's lock, listed its directory, opened,
// read and wrote it): while one append holds the log, the others wait and
// the next writes them all in one write. Each still gets its own events
// with their ids, in the file's order.
func TestAppendsAtOnceAreWrittenTogether(t *testing.T) {
	l := &Log{Dir: t.TempDir()}
	if _, err := l.Append(Event{Type: "agent.ready"}); err != nil { // the files exist
		t.Fatal(err)
	}
	// Another process holds the log: every append of ours waits.
	other, err := os.OpenFile(filepath.Join(l.Dir, "events.lock"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := unix.Flock(int(other.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	const n = 50
	writesBefore := writeCalls(t)
	var wg sync.WaitGroup
	got := make([][]Event, n)
	for i := range n {
		wg.Go(func() {
			evs, err := l.Append(Event{Type: "message.pasted", Detail: strconv.Itoa(i)}, Event{Type: "message.pressed", Detail: strconv.Itoa(i)})
			if err != nil {
				t.Error(err)
			}
			got[i] = evs
		})
	}
	time.Sleep(100 * time.Millisecond) // they are waiting by now; late ones only make a third write
	if err := unix.Flock(int(other.Fd()), unix.LOCK_UN); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	writes := writeCalls(t) - writesBefore
	t.Logf("%d appends at once: %d writes", n, writes)
	if writes > n/5 {
		t.Errorf("%d appends at once took %d writes", n, writes)
	}
	all, _, err := l.Since(-1, 1000)
	if err != nil || len(all) != 2*n+1 {
		t.Fatalf("the log holds %d events, want %d: %v", len(all), 2*n+1, err)
	}
	byID := map[int64]Event{}
	for _, e := range all {
		byID[e.ID] = e
	}
	for i, evs := range got {
		if len(evs) != 2 || evs[1].ID <= evs[0].ID {
			t.Fatalf("append %d got %+v", i, evs)
		}
		for j, e := range evs {
			if f := byID[e.ID]; f.Type != e.Type || f.Detail != strconv.Itoa(i) {
				t.Errorf("append %d's event %d has id %d, which the file gives to %+v", i, j, e.ID, f)
			}
		}
	}
}

// writeCalls is how many write system calls this process has made.
func writeCalls(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		t.Skipf("no /proc/self/io to count writes: %v", err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "syscw: "); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	t.Skip("/proc/self/io has no syscw")
	return 0
}

// Last reads the end of the newest file, not all of it: every send asks
// for it, and a file holds up to 16 MB.
func TestLastReadsTheEndOnly(t *testing.T) {
	l := &Log{Dir: t.TempDir()}
	pad := strings.Repeat("x", 1000)
	var last []Event
	for range 20 {
		evs := make([]Event, 400)
		for i := range evs {
			evs[i] = Event{Type: "message.submitted", Detail: pad}
		}
		var err error
		if last, err = l.Append(evs...); err != nil {
			t.Fatal(err)
		}
	}
	before := readBytes(t)
	id, err := l.Last()
	if err != nil || id != last[len(last)-1].ID {
		t.Fatalf("Last = %d, %v; want %d", id, err, last[len(last)-1].ID)
	}
	if read := readBytes(t) - before; read > 1<<20 {
		t.Errorf("Last read %d bytes of an 8 MB log", read)
	}
}

// readBytes is how many bytes this process has read so far.
func readBytes(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		t.Skipf("no /proc/self/io to count reads: %v", err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "rchar: "); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	t.Skip("/proc/self/io has no rchar")
	return 0
}

// An append goes to the file the log wrote last, without listing the
// directory, while that file is under MaxSize: no writer starts a newer
// one before (here a file no writer could have made shows that the
// directory was not listed). Once it has grown past MaxSize, the next one
// starts after it.
func TestAppendsGoToTheFileWrittenLast(t *testing.T) {
	l := &Log{Dir: t.TempDir(), MaxSize: 300}
	first, err := l.Append(Event{Type: "agent.ready"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(l.path(1<<40), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	next, err := l.Append(Event{Type: "agent.busy"})
	if err != nil || next[0].ID <= first[0].ID || next[0].ID >= 300 {
		t.Fatalf("the next append got %+v, %v; want it after %d in the first file", next, err, first[0].ID)
	}
	if err := os.Remove(l.path(1 << 40)); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if _, err := l.Append(Event{Type: "agent.ready", Detail: strings.Repeat("x", 100)}); err != nil {
			t.Fatal(err)
		}
	}
	bases, err := l.bases()
	if err != nil || len(bases) < 2 {
		t.Fatalf("files %v, %v: want the log rotated", bases, err)
	}
	all, _, err := l.Since(-1, 100)
	if err != nil || len(all) != 7 {
		t.Errorf("the log holds %d events, want 7: %v", len(all), err)
	}
}
