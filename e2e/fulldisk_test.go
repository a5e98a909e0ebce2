//go:build linux

package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentmsg/agentmsg/e2e/harness"
)

// A send that fails on a full disk leaves the inbox as it was, and the
// failed message never comes back: not in log or inbox, not typed by
// deliver, not when the disk has room again and the next send appends.
// The mailbox is on a small tmpfs, filled up, with the inbox's last page
// holding just the failed message's record but not its newline (a tmpfs
// write stops at a page it cannot have): before, that record stayed in
// the inbox unfinished, the next append ended it, and deliver typed it.
func TestFailedSendOnAFullDiskNeverComesBack(t *testing.T) {
	t.Parallel()
	home := filepath.Join(mountTmpfs(t, "size=256k"), "home")
	env := []string{"AGENTMSG_HOME=" + home}
	s := harness.NewTestServer(t)
	ana := s.StartAgent("agent-alpha-ana")
	type report struct {
		harness.SendReport
		Stored string `json:"stored"` // what the inbox says of it
	}
	send := func(text string) (report, harness.Result) {
		t.Helper()
		res, err := s.Server.RunEnv(env, "--json", "send", "alpha", "ana", text)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := harness.Decode[report](res.Stdout)
		if err != nil {
			t.Fatalf("%v\n%s", err, res)
		}
		return rep, res
	}
	// Every text is as long as the first, so that its record is too.
	text := func(i int) string { return fmt.Sprintf("message %02d", i) }
	first, res := send(text(0))
	wantCode(t, res, 0)
	want := []string{harness.Submitted(first.ID, text(0))}
	inbox := findFile(t, home, "ana.jsonl")
	recordLen := firstRecordLen(t, inbox, first.ID)

	// Each round leaves the inbox's last page room for the record as long
	// as the first one's (timestamps may come out shorter); the last, room
	// for 16 bytes of it, so that at least one send fails to record its
	// message.
	var failed []string
	for round := 1; round <= 4; round++ {
		room := recordLen
		if round == 4 {
			room = 16
		}
		padInbox(t, inbox, first.ID, room)
		unfill := fillDisk(t, home)
		before := readAll(t, inbox)
		rep, res := send(text(round))
		unfill()
		switch {
		case res.Code == 0 || rep.Stored == "typing":
			// Its record came out shorter and fit; the first step's
			// record did not, and the inbox still says typing, as the
			// error says: deliver types it.
			t.Logf("round %d: recorded, then %s (%s)", round, rep.Verdict, rep.Error)
			want = append(want, harness.Submitted(rep.ID, text(round)))
			continue
		case rep.Verdict != "failed" || !strings.Contains(rep.Error, "no space left on device"):
			t.Fatalf("round %d: want failed for a full disk, got %s", round, res)
		}
		failed = append(failed, rep.ID)
		if after := readAll(t, inbox); !bytes.Equal(after, before) {
			t.Errorf("round %d: the failed send left the inbox changed: %q", round, after[len(before):])
			break
		}
	}
	after, res := send(text(9))
	wantCode(t, res, 0)
	want = append(want, harness.Submitted(after.ID, text(9)))
	res, err := s.Server.RunEnv(env, "deliver")
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, res, 0)
	// Those kept typing are typed by deliver, after the last send.
	if got := ana.Received(); !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))) {
		t.Errorf("ana received %q, want %q in any order", got, want)
	}
	for _, args := range [][]string{{"--json", "log", "alpha", "ana"}, {"--json", "inbox", "alpha", "ana", "--all"}} {
		res, err := s.Server.RunEnv(env, args...)
		if err != nil {
			t.Fatal(err)
		}
		wantCode(t, res, 0)
		for _, id := range failed {
			if strings.Contains(res.Stdout, id) {
				t.Errorf("%s lists %s, whose send failed:\n%s", strings.Join(args, " "), id, res.Stdout)
			}
		}
	}
}

// mountTmpfs mounts a tmpfs with opts on a new directory, which it
// unmounts and removes when the test ends, and returns it.
func mountTmpfs(t *testing.T, opts string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs for a full disk needs root")
	}
	dir, err := os.MkdirTemp("", "agentmsg-full")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(dir) }) // after the unmount (cleanups run last first)
	mountTmpfsOn(t, dir, opts)
	return dir
}

// mountTmpfsOn mounts a tmpfs with opts on dir, an empty directory, and
// unmounts it when the test ends: register what must end before that
// (a daemon that may hold a file there open) after calling it.
func mountTmpfsOn(t *testing.T, dir, opts string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs for a full disk needs root")
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, opts+",mode=0700"); err != nil {
		t.Fatalf("mounting a tmpfs on %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, 0); err != nil {
			t.Errorf("unmounting %s: %v (detaching it)", dir, err)
			_ = unix.Unmount(dir, unix.MNT_DETACH)
		}
	})
}

// fillDisk fills the file system of dir with a file until it has no page
// left, and returns the function that removes it.
func fillDisk(t *testing.T, dir string) (unfill func()) {
	t.Helper()
	f, err := os.CreateTemp(dir, "filler")
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 64<<10)
	for err == nil {
		_, err = f.Write(chunk)
	}
	f.Close()
	if !errors.Is(err, unix.ENOSPC) {
		os.Remove(f.Name())
		t.Fatalf("filling the disk: %v", err)
	}
	return func() {
		if err := os.Remove(f.Name()); err != nil {
			t.Fatal(err)
		}
	}
}

// padInbox appends to the inbox, as an update of message id that changes
// nothing but its verdict's text, enough that the inbox's last page then
// has room for exactly room bytes: with the record's length, the next
// record written whole but not its newline.
func padInbox(t *testing.T, inbox, id string, room int) {
	t.Helper()
	const page = 4096
	size := int64(len(readAll(t, inbox)))
	now := time.Now().UTC()
	line := func(pad int) []byte {
		b, err := json.Marshal(map[string]any{"update": id, "delivery": map[string]any{
			"state": "submitted", "attempts": 1, "updated": now, "last_verdict": strings.Repeat("p", pad)}})
		if err != nil {
			t.Fatal(err)
		}
		return append(b, '\n')
	}
	bare := int64(len(line(0)))
	pad := ((page-int64(room)-size-bare)%page + page) % page
	f, err := os.OpenFile(inbox, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(line(int(pad))); err != nil {
		t.Fatal(err)
	}
}

// firstRecordLen is the length of the first line that records message id
// (its envelope, as it was appended), without its newline.
func firstRecordLen(t *testing.T, inbox, id string) int {
	t.Helper()
	for line := range bytes.Lines(readAll(t, inbox)) {
		if bytes.Contains(line, []byte(`"id":"`+id+`"`)) {
			return len(bytes.TrimSuffix(line, []byte("\n")))
		}
	}
	t.Fatalf("%s is not in %s", id, inbox)
	return 0
}

func readAll(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
