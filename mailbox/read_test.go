package mailbox

import (
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestAppendReadOrder(t *testing.T) {
	s := newStore(t)
	b := box(t, s, "ana")
	want := appendN(t, b, 20)
	got := mustRead(t, s, "ana")
	if !slices.Equal(ids(got.Envelopes), ids(want)) {
		t.Fatalf("ids = %v, want %v", ids(got.Envelopes), ids(want))
	}
	if len(got.Corrupt) != 0 {
		t.Fatalf("corrupt: %v", got.Corrupt)
	}
	e := got.Envelopes[3]
	if e.Content != "message 3" || e.From != "lead" || e.To != "ana" || e.Type != TypeText {
		t.Fatalf("envelope = %+v", e)
	}
	if e.Timestamp.IsZero() || e.Timestamp.Location() != time.UTC {
		t.Fatalf("timestamp %v, want set and UTC", e.Timestamp)
	}
}

func TestEnvelopeJSON(t *testing.T) {
	s := newStore(t)
	s.Now = func() time.Time { return time.Date(2025, 1, 2, 3, 4, 5, 123456789, time.FixedZone("x", 3600)) }
	b := box(t, s, "ana")
	e := newEnv(t, "lead", "ana", "hi")
	e.Metadata = map[string]string{"k": "v"}
	e.Delivery = &Delivery{State: StatePending}
	if err := b.Append(e); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(b.path())
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 2 {
		t.Fatalf("want header + 1 line, got %q", data)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(lines[1]), &m); err != nil {
		t.Fatal(err)
	}
	if m["timestamp"] != "2025-01-02T02:04:05.123456789Z" {
		t.Errorf("timestamp = %v", m["timestamp"])
	}
	for _, k := range []string{"reply_to", "request_id"} {
		if _, ok := m[k]; ok {
			t.Errorf("empty %s written", k)
		}
	}
}

func TestAppendRejects(t *testing.T) {
	b := box(t, newStore(t), "ana")
	e := newEnv(t, "lead", "ana", "x")
	bad := []Envelope{{}, {ID: "nope", From: "a", To: "b", Type: TypeText}, {ID: e.ID, To: "b", Type: TypeText}}
	for _, env := range bad {
		if err := b.Append(env); !errors.Is(err, ErrInvalidEnvelope) {
			t.Errorf("Append(%+v) = %v", env, err)
		}
	}
}

func TestUpdatesFolded(t *testing.T) {
	s := newStore(t)
	b := box(t, s, "ana")
	envs := appendN(t, b, 3)
	steps := []Delivery{{State: StatePending}, {State: StateDeferred, Attempts: 1, LastVerdict: "busy"}, {State: StateSubmitted, Attempts: 2}}
	for _, d := range steps {
		if err := b.SetDelivery(envs[1].ID, d); err != nil {
			t.Fatal(err)
		}
	}
	got := mustRead(t, s, "ana").Envelopes
	if len(got) != 3 {
		t.Fatalf("read %d envelopes, want 3 (updates are not messages)", len(got))
	}
	d := got[1].Delivery
	if d == nil || d.State != StateSubmitted || d.Attempts != 2 || d.Updated.IsZero() {
		t.Fatalf("delivery = %+v, want the latest update", d)
	}
	if got[0].Delivery != nil || got[2].Delivery != nil {
		t.Fatal("update folded into the wrong envelope")
	}
}

func TestTornLastLine(t *testing.T) {
	s := newStore(t)
	b := box(t, s, "ana")
	appendN(t, b, 2)
	next := newEnv(t, "lead", "ana", "late")
	next.Timestamp = time.Now().UTC()
	line, _ := json.Marshal(next)
	half := len(line) / 2

	writeRaw(t, b.path(), string(line[:half]))
	got := mustRead(t, s, "ana")
	if len(got.Envelopes) != 2 || len(got.Corrupt) != 0 {
		t.Fatalf("with torn tail: %d envelopes, corrupt %v", len(got.Envelopes), got.Corrupt)
	}
	writeRaw(t, b.path(), string(line[half:])+"\n")
	got = mustRead(t, s, "ana")
	if len(got.Envelopes) != 3 || got.Envelopes[2].ID != next.ID {
		t.Fatalf("after completion: %v", ids(got.Envelopes))
	}
}

func TestDeadWriterFragment(t *testing.T) {
	s := newStore(t)
	b := box(t, s, "ana")
	appendN(t, b, 2)
	writeRaw(t, b.path(), `{"id":"MSG_LEAD_0000`) // a writer died here
	after := appendN(t, b, 1)
	got := mustRead(t, s, "ana")
	if len(got.Envelopes) != 3 || got.Envelopes[2].ID != after[0].ID {
		t.Fatalf("envelopes %v", ids(got.Envelopes))
	}
	if len(got.Corrupt) != 0 {
		t.Fatalf("corrupt = %v, want the fragment cut off", got.Corrupt)
	}
}

func TestCorruptLineSkipped(t *testing.T) {
	s := newStore(t)
	b := box(t, s, "ana")
	first := appendN(t, b, 1)
	writeRaw(t, b.path(), "not json\n{\"from\":\"x\"}\n")
	second := appendN(t, b, 1)
	got := mustRead(t, s, "ana")
	if want := append(ids(first), ids(second)...); !slices.Equal(ids(got.Envelopes), want) {
		t.Fatalf("ids %v, want %v", ids(got.Envelopes), want)
	}
	if len(got.Corrupt) != 2 {
		t.Fatalf("corrupt = %v, want 2", got.Corrupt)
	}
}

func TestAppendManyBroadcast(t *testing.T) {
	s := newStore(t)
	e := newEnv(t, "lead", Broadcast, "all hands")
	e.Type = TypeBroadcast
	err := s.AppendMany(team, []string{"ana", "bob", "Bad/name", "cy-2"}, e)
	var be *BroadcastError
	if !errors.As(err, &be) || len(be.Delivered) != 3 || be.Failed["Bad/name"] == nil {
		t.Fatalf("err = %v", err)
	}
	for _, a := range []string{"ana", "bob", "cy-2"} {
		got := mustRead(t, s, a).Envelopes
		if len(got) != 1 || got[0].ID != e.ID || got[0].To != Broadcast {
			t.Fatalf("%s: %+v", a, got)
		}
	}
	if err := s.AppendMany(team, []string{"ana"}, e); err != nil {
		t.Fatal(err)
	}
}

// A broadcast writes each inbox with AppendBatched and syncs once: what it
// wrote reads back like Append's, new inboxes included, and a bad envelope
// is refused the same way.
func TestAppendBatchedThenSync(t *testing.T) {
	s := newStore(t)
	var want []Envelope
	for _, agent := range []string{"ana", "bob", "cy"} {
		e := newEnv(t, "lead", agent, "to everyone")
		if err := box(t, s, agent).AppendBatched(e); err != nil {
			t.Fatal(err)
		}
		want = append(want, e)
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	for i, agent := range []string{"ana", "bob", "cy"} {
		got := mustRead(t, s, agent)
		if len(got.Envelopes) != 1 || got.Envelopes[0].ID != want[i].ID || len(got.Corrupt) != 0 {
			t.Errorf("%s: %+v", agent, got)
		}
	}
	if err := box(t, s, "ana").AppendBatched(Envelope{ID: "MSG_X_1"}); !errors.Is(err, ErrInvalidEnvelope) {
		t.Errorf("a bad envelope: %v", err)
	}
}
