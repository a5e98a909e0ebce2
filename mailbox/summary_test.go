package mailbox

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
	"time"
)

// summaryOf is Summarize's answer computed from Read: what it must equal.
func summaryOf(b Batch) Summary {
	sum := Summary{Messages: len(b.Envelopes), States: map[DeliveryState]int{}}
	if len(b.Envelopes) > 0 {
		sum.Oldest = b.Envelopes[0].Timestamp
	}
	sum.OldestSeen = b.OldestSeen()
	for _, e := range b.Envelopes {
		st := DeliveryState("")
		if e.Delivery != nil {
			st = e.Delivery.State
		}
		sum.States[st]++
	}
	return sum
}

func sameSummary(a, b Summary) bool {
	return a.Messages == b.Messages && a.Oldest.Equal(b.Oldest) && a.OldestSeen.Equal(b.OldestSeen) && maps.Equal(a.States, b.States)
}

// Summarize agrees with Read on inboxes of every shape: texts and metadata
// that spell out a delivery or a timestamp, messages with and without a
// delivery, updates (also for unknown ids), compaction, a corrupt line, a
// duplicate, and a last line still being written.
func TestSummarizeAgreesWithRead(t *testing.T) {
	tricky := []string{
		"plain",
		`"delivery":{"state":"pending"}`,
		`{"id":"MSG_LEAD_00000001","delivery":{"state":"deferred"}}`,
		`"timestamp":"2001-01-01T00:00:00Z"`,
		"quote \" backslash \\ newline \n tab \t",
		"ünïcødé ✓",
	}
	states := []DeliveryState{StatePending, StateDeferred, StateTyping, StateTyped, StateSubmitted, StateQueued, StateFailed}
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 20 {
		s := newStore(t)
		b := box(t, s, "ana")
		check := func(when string) {
			t.Helper()
			got, err := s.Summarize(team, "ana")
			want := summaryOf(mustRead(t, s, "ana"))
			if err != nil || !sameSummary(got, want) {
				t.Fatalf("round %d, %s: Summarize = %+v, %v; Read says %+v", round, when, got, err, want)
			}
		}
		check("no inbox")
		var ids []Envelope
		for i := range 30 + rng.IntN(30) {
			e := newEnv(t, "lead", "ana", tricky[rng.IntN(len(tricky))])
			if rng.IntN(3) == 0 {
				e.Metadata = map[string]string{"k": tricky[rng.IntN(len(tricky))], "delivery": `{"state":"typed"}`}
			}
			if rng.IntN(4) > 0 {
				e.Delivery = &Delivery{State: states[rng.IntN(len(states))], Attempts: 1}
			}
			e.Timestamp = time.Date(2026, 1, 1, 0, 0, i, rng.IntN(1e9), time.UTC)
			if err := b.Append(e); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, e)
			for range rng.IntN(3) {
				target := ids[rng.IntN(len(ids))]
				if err := b.SetDelivery(target.ID, Delivery{State: states[rng.IntN(len(states))], LastVerdict: tricky[rng.IntN(len(tricky))]}); err != nil {
					t.Fatal(err)
				}
			}
		}
		check("appended")
		if _, err := s.Compact(team, "ana", Retention{MaxCount: 20}); err != nil {
			t.Fatal(err)
		}
		check("compacted")
		// A corrupt line, a duplicate of a message, an update for an
		// unknown id, and a torn last line.
		f, err := os.OpenFile(b.path(), os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		dup := ids[len(ids)-1]
		fmt.Fprintf(f, "not json\n")
		fmt.Fprintf(f, `{"id":"%s","from":"lead","to":"ana","type":"text","content":"again","timestamp":"2026-02-01T00:00:00Z","delivery":{"state":"pending"}}`+"\n", dup.ID)
		fmt.Fprintf(f, `{"update":"MSG_LEAD_ffffffff","delivery":{"state":"typed"}}`+"\n")
		fmt.Fprintf(f, `{"update":"%s","delivery":{"state":"deferred"}}`+"\n", dup.ID)
		// A torn line ended by a later newline, as earlier versions'
		// appends ended a dead writer's line: corrupt.
		fmt.Fprintf(f, `{"id":"MSG_LEAD_0000000a","from":"lead","to":"ana"`+"\n")
		fmt.Fprintf(f, `{"id":"MSG_LEAD_0000000b","from":"lead","to":"ana"`)
		f.Close()
		check("with odd lines")
		// A torn line cut off by the next append, and a torn update (cut
		// after its state) cut off the same way.
		last := newEnv(t, "lead", "ana", "after a torn line")
		last.Delivery = &Delivery{State: StateSubmitted}
		if err := b.Append(last); err != nil {
			t.Fatal(err)
		}
		f, err = os.OpenFile(b.path(), os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(f, `{"update":"%s","delivery":{"state":"deferred","attempts":2,"last_verdict":"agent bu`, last.ID)
		f.Close()
		if err := b.SetDelivery(last.ID, Delivery{State: StateSubmitted}); err != nil {
			t.Fatal(err)
		}
		check("with torn lines cut off by later appends")
	}
}

// BenchmarkSummarize and BenchmarkReadForSummary read an inbox at the
// default bound: 1,000 messages, each with three delivery updates.
func BenchmarkSummarize(b *testing.B) {
	s := fullInbox(b)
	for b.Loop() {
		if sum, err := s.Summarize(team, "ana"); err != nil || sum.Messages != 1000 {
			b.Fatal(sum, err)
		}
	}
}

func BenchmarkReadForSummary(b *testing.B) {
	s := fullInbox(b)
	for b.Loop() {
		if batch, err := s.Read(team, "ana"); err != nil || len(batch.Envelopes) != 1000 {
			b.Fatal(err)
		}
	}
}

func fullInbox(b *testing.B) *Store {
	s := newStore(b)
	bx := box(b, s, "ana")
	for range 1000 {
		e := newEnv(b, "lead", "ana", "a message of a typical length, a line or two of what to do next and why")
		e.Delivery = &Delivery{State: StateTyping, Attempts: 1}
		if err := bx.Append(e); err != nil {
			b.Fatal(err)
		}
		for _, st := range []string{"pasted", "pressed"} {
			if err := bx.SetDelivery(e.ID, Delivery{State: StateTyping, Attempts: 1, Reached: st}); err != nil {
				b.Fatal(err)
			}
		}
		if err := bx.SetDelivery(e.ID, Delivery{State: StateSubmitted, Attempts: 1, LastVerdict: "submitted"}); err != nil {
			b.Fatal(err)
		}
	}
	return s
}

// A line cut short at any byte, and ended by a later append's newline, is
// skipped by Summarize as Read skips it: every prefix of an envelope with
// and without a delivery, and of an update whose verdict spells JSON.
func TestSummarizeSkipsEveryCutOfALine(t *testing.T) {
	s := newStore(t)
	b := box(t, s, "ana")
	first := newEnv(t, "lead", "ana", `text with "quotes", }} and {"a":1}`)
	first.Metadata = map[string]string{"k": `}"}`}
	first.Delivery = &Delivery{State: StateSubmitted}
	if err := b.Append(first); err != nil {
		t.Fatal(err)
	}
	plain := newEnv(t, "lead", "ana", "no delivery }")
	withDelivery := newEnv(t, "lead", "ana", "deferred }}")
	withDelivery.Delivery = &Delivery{State: StateDeferred, LastVerdict: `busy "}}`, Attempts: 2}
	var lines [][]byte
	for _, v := range []any{plain, withDelivery,
		updateRecord{Update: first.ID, Delivery: &Delivery{State: StateDeferred, LastVerdict: `a "}} b`, Reached: "pasted"}},
		updateRecord{Update: first.ID, Delivery: &Delivery{State: StateTyped, Attempts: 3}}} {
		line, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, line)
	}
	base, err := os.ReadFile(b.path())
	if err != nil {
		t.Fatal(err)
	}
	tail := newEnv(t, "lead", "ana", "after")
	tail.Timestamp = time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	after, _ := json.Marshal(tail)
	for _, line := range lines {
		for cut := 1; cut <= len(line); cut++ {
			data := append(append(append(slices.Clone(base), line[:cut]...), '\n'), append(after, '\n')...)
			if err := os.WriteFile(b.path(), data, 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := s.Summarize(team, "ana")
			if want := summaryOf(mustRead(t, s, "ana")); err != nil || !sameSummary(got, want) {
				t.Fatalf("cut at %d of %s: Summarize = %+v, %v; Read says %+v", cut, line, got, err, want)
			}
		}
	}
}
