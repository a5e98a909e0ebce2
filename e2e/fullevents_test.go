//go:build linux

package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentmsg/agentmsg/e2e/harness"
)

// An event log whose file system is full costs no verdict and hides no
// gap. The log (alone) is on a 64 KiB tmpfs, filled up while a message
// waits for its busy agent; the daemon types it when she is ready, and
// none of that delivery's events can be written. Before, the sender's
// --wait-delivered, which followed only the events, said "not delivered
// within 10s" (exit 7) about a message the agent had, and a client of
// the event stream never learnt that it had missed anything: an event's
// id is its byte offset, so the ids after the lost ones follow on
// without a hole.
func TestAFullEventLogLosesNoVerdict(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	events := filepath.Join(s.Dir, "state", "agentmsg", "events")
	if err := os.MkdirAll(events, 0o700); err != nil {
		t.Fatal(err)
	}
	mountTmpfsOn(t, events, "size=64k")
	if !harness.DaemonMode() {
		if err := s.StartDaemon(); err != nil {
			t.Fatal(err)
		}
	}
	// Stopped before the unmount, whoever started it: the daemon holds
	// the event log open (under AGENTMSG_E2E_DAEMON the harness started it
	// before the mount, so its own stop came after the unmount, which then
	// failed with EBUSY once in a CI run).
	t.Cleanup(func() { _ = s.StopDaemon() })
	ana := s.StartAgent("agent-alpha-ana", harness.InitialState("busy"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream := follow(ctx, t, api(s), -1)

	const text = "while the event log is full"
	done := make(chan harness.Result, 1)
	go func() {
		res, _ := s.Server.Run("--json", "send", "--ready-timeout", "300ms", "--wait-delivered", "10s", "alpha", "ana", text)
		done <- res
	}()
	waitFor(t, "the message kept", 10*time.Second, func() bool {
		return strings.Contains(s.Run("log", "alpha", "ana").Stdout, "deferred")
	})
	unfill := fillEventLog(t, events)
	ana.SetState("ready")
	res := <-done
	// While the disk is full, doctor counts what was lost.
	if doc := s.Run("doctor", "alpha", "ana"); !regexp.MustCompile(`(?m)^events +[0-9]+ could not be written`).MatchString(doc.Stdout) {
		t.Errorf("doctor says nothing of the events lost:\n%s", doc)
	}
	unfill()
	t.Logf("send --wait-delivered: exit %d after %s", res.Code, res.Elapsed.Round(time.Millisecond))
	var rep struct {
		ID, Verdict string
		ExitCode    int `json:"exit_code"`
	}
	if err := json.Unmarshal([]byte(res.Stdout), &rep); err != nil || res.Code != 0 || rep.Verdict != "submitted" {
		t.Errorf("%v: want the later verdict submitted, exit 0:\n%s", err, res)
	}
	if rep.ID == "" { // the timed-out report had none: the text names it
		rep.ID = regexp.MustCompile(`MSG_[A-Z0-9]+_[0-9a-f]{8}`).FindString(res.Stdout)
	}

	// The next events written say first that some were lost, and how many.
	after, res := sendJSON(t, s, nil, "alpha", "ana", "after the disk had room again")
	wantCode(t, res, 0)
	var gap event
	for gap.data == nil {
		select {
		case e, ok := <-stream:
			if !ok {
				t.Fatal("the stream ended")
			}
			switch {
			case e.data["type"] == "events.lost":
				gap = e
			case e.data["message_id"] == after.ID:
				t.Fatalf("the stream went on to %s without a word of the events lost: %v", after.ID, e.data)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("no events.lost on the stream within 20s")
		}
	}
	if n, _ := gap.data["lost"].(float64); n < 3 {
		t.Errorf("events.lost says %v lost, want at least 3 (pasted, pressed, submitted): %v", gap.data["lost"], gap.data)
	}
	res = s.Run("--json", "events", "--follow=false")
	if !strings.Contains(res.Stdout, `"type":"events.lost"`) {
		t.Errorf("agentmsg events has no events.lost:\n%s", res)
	}
	wantReceived(t, ana, harness.Submitted(rep.ID, text), harness.Submitted(after.ID, "after the disk had room again"))
	// The daemon said so in its log, at the time.
	if log := string(readAll(t, filepath.Join(s.Dir, "logs", "daemon.log"))); !strings.Contains(log, "the event log could not be written") {
		t.Errorf("the daemon's log says nothing of the events it could not write:\n%s", log)
	}
}

// fillEventLog fills the file system of the event log in dir, its newest
// file's last page included: a tmpfs takes a write into a page it has
// given the file already, so the events first fill that page. It pads the
// file to a page's end with an event of its own (type test.padding, its
// id its offset, as the log's) under the log's lock, and fills the rest
// of the disk before it lets go, so that no writer comes in between.
func fillEventLog(t *testing.T, dir string) (unfill func()) {
	t.Helper()
	lf, err := os.OpenFile(filepath.Join(dir, "events.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	if err := unix.Flock(int(lf.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "events-*.jsonl"))
	if len(files) == 0 {
		t.Fatalf("no event log in %s", dir)
	}
	var newest, newestBase int64 = -1, -1
	for _, f := range files {
		n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "events-"), ".jsonl"), 10, 64)
		if err == nil && n > newestBase {
			newest, newestBase = int64(slices.Index(files, f)), n
		}
	}
	path := files[newest]
	size := int64(len(readAll(t, path)))
	const page = 4096
	now := time.Now().UTC() // one time: its text's length varies
	line := func(pad int64) []byte {
		b, err := json.Marshal(map[string]any{"id": newestBase + size, "time": now, "type": "test.padding", "detail": strings.Repeat("p", int(pad))})
		if err != nil {
			t.Fatal(err)
		}
		return append(b, '\n')
	}
	bare := int64(len(line(0)))
	pad := ((page-size-bare)%page + page) % page
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(line(pad)); err != nil {
		t.Fatal(err)
	}
	return fillDisk(t, dir)
}
