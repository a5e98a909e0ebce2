package mailbox

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestHelperLimitedAppend stores one record (MB_OP: append, batched or
// delivery, of the envelope in MB_ENV) with files limited to MB_LIMIT
// bytes (RLIMIT_FSIZE), so that the kernel cuts its write where the parent
// chose, as a full disk does, and prints the error.
func TestHelperLimitedAppend(t *testing.T) {
	if os.Getenv(helperEnv) != "limited" {
		t.Skip("helper process")
	}
	var env Envelope
	if err := json.Unmarshal([]byte(os.Getenv("MB_ENV")), &env); err != nil {
		fail(err)
	}
	limit, err := strconv.ParseUint(os.Getenv("MB_LIMIT"), 10, 64)
	if err != nil {
		fail(err)
	}
	b, err := New(os.Getenv("MB_ROOT")).Box(team, os.Getenv("MB_AGENT"))
	if err != nil {
		fail(err)
	}
	// Go ignores SIGXFSZ, so a write past the limit returns EFBIG.
	if err := unix.Setrlimit(unix.RLIMIT_FSIZE, &unix.Rlimit{Cur: limit, Max: limit}); err != nil {
		fail(err)
	}
	switch op := os.Getenv("MB_OP"); op {
	case "append":
		err = b.Append(env)
	case "batched":
		err = b.AppendBatched(env)
	case "delivery":
		err = b.SetDelivery(env.ID, *env.Delivery)
	default:
		fail(errString("unknown MB_OP " + op))
	}
	if err != nil {
		os.Stdout.WriteString(err.Error() + "\n")
	}
	os.Exit(0)
}

type errString string

func (e errString) Error() string { return string(e) }

func fail(err error) {
	os.Stderr.WriteString(err.Error() + "\n")
	os.Exit(2)
}

// limitedAppend runs op for env in another process whose files may grow
// by only room bytes past the inbox's size, and returns what it said
// ("" when it stored the record).
func limitedAppend(t *testing.T, b *Box, op string, env Envelope, room int64) string {
	t.Helper()
	var size int64
	if st, err := os.Stat(b.path()); err == nil {
		size = st.Size()
	}
	data, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	h := startHelper(t, testCtx(t), "limited", "MB_ROOT="+b.s.Root, "MB_AGENT="+b.Agent, "MB_OP="+op,
		"MB_ENV="+string(data), "MB_LIMIT="+strconv.FormatInt(size+room, 10))
	out, err := h.lines()
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(out, "\n")
}

// recordLen is the length of v as one inbox line, without its newline.
func recordLen(t *testing.T, v any) int64 {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return int64(len(data))
}

// A record written whole but for its newline (a full disk cut the write
// there) is taken back: the inbox is byte for byte as it was, and the next
// append does not complete the line, which would store a message whose
// sender was told it failed. So for every kind of record.
func TestFailedAppendLeavesTheInboxAsItWas(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	at := time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)
	for _, op := range []string{"append", "batched", "delivery"} {
		t.Run(op, func(t *testing.T) {
			s := newStore(t)
			b := box(t, s, "ana")
			kept := appendN(t, b, 2)
			failing := newEnv(t, "lead", "ana", "this one fails")
			failing.Timestamp = at
			var record any = failing
			if op == "delivery" {
				failing = kept[1]
				failing.Delivery = &Delivery{State: StateSubmitted, Updated: at}
				record = updateRecord{Update: failing.ID, Delivery: failing.Delivery}
			}
			before := readFile(t, b.path())
			said := limitedAppend(t, b, op, failing, recordLen(t, record))
			if said == "" {
				t.Fatal("the append succeeded past the file size limit")
			}
			if after := readFile(t, b.path()); !bytes.Equal(after, before) {
				t.Fatalf("after a failed append (%s) the inbox changed:\nbefore %q\nafter  %q", said, before, after)
			}
			later := appendN(t, b, 1)
			got := mustRead(t, s, "ana")
			if want := append(ids(kept), later[0].ID); !slices.Equal(ids(got.Envelopes), want) || len(got.Corrupt) != 0 {
				t.Fatalf("after the next append: %v (corrupt %v), want %v", ids(got.Envelopes), got.Corrupt, want)
			}
			if d := got.Envelopes[1].Delivery; op == "delivery" && d != nil && d.State == StateSubmitted {
				t.Fatal("the failed delivery update came back")
			}
		})
	}
}

// A new inbox whose first write fails is not left behind half-made.
func TestFailedFirstAppendLeavesNoInbox(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	s := newStore(t)
	b := box(t, s, "ana")
	if said := limitedAppend(t, b, "append", newEnv(t, "lead", "ana", "first"), 20); said == "" {
		t.Fatal("the append succeeded past the file size limit")
	}
	if _, err := os.Stat(b.path()); !os.IsNotExist(err) {
		t.Fatalf("inbox after a failed first append: %v, want none", err)
	}
	appendN(t, b, 1)
	if got := mustRead(t, s, "ana"); len(got.Envelopes) != 1 || len(got.Corrupt) != 0 {
		t.Fatalf("after the next append: %v, corrupt %v", ids(got.Envelopes), got.Corrupt)
	}
}

// A line without its newline at the end of the inbox, when the inbox's
// lock is free, is one whose writer died or failed before it returned: no
// one was told it was stored. The next append cuts it off instead of
// ending it, which would store it.
func TestUnfinishedLastLineIsCutNotCompleted(t *testing.T) {
	s := newStore(t)
	b := box(t, s, "ana")
	kept := appendN(t, b, 2)
	before := readFile(t, b.path())
	dead := newEnv(t, "lead", "ana", "never acknowledged")
	dead.Timestamp = time.Now().UTC()
	line, _ := json.Marshal(dead)
	writeRaw(t, b.path(), string(line)) // all of it but the newline
	later := appendN(t, b, 1)
	got := mustRead(t, s, "ana")
	if want := append(ids(kept), later[0].ID); !slices.Equal(ids(got.Envelopes), want) || len(got.Corrupt) != 0 {
		t.Fatalf("envelopes %v (corrupt %v), want %v", ids(got.Envelopes), got.Corrupt, want)
	}
	if after := readFile(t, b.path()); !bytes.HasPrefix(after, before) || bytes.Count(after[len(before):], []byte("\n")) != 1 {
		t.Fatalf("the inbox is not what it was plus one line:\n%q", after)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
