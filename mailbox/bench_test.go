package mailbox

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// BenchmarkAppend is one writer; each op is lock, write, fsync.
func BenchmarkAppend(b *testing.B) {
	s := newStore(b)
	bx := box(b, s, "ana")
	env := newEnv(b, "lead", "ana", strings.Repeat("x", 200))
	for b.Loop() {
		if err := bx.Append(env); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendParallel is many goroutines on one inbox; the flock
// serialises them, so this measures contention, not parallel speed-up.
func BenchmarkAppendParallel(b *testing.B) {
	s := newStore(b)
	bx := box(b, s, "ana")
	env := newEnv(b, "lead", "ana", strings.Repeat("x", 200))
	b.SetParallelism(8) // 8 x GOMAXPROCS writers
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := bx.Append(env); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkReadInbox100k reads an inbox of 100,000 messages (plus one
// delivery update per ten), built without fsync to keep setup short.
func BenchmarkReadInbox100k(b *testing.B) {
	s := newStore(b)
	bx := box(b, s, "ana")
	appendN(b, bx, 1) // header
	f, err := os.OpenFile(bx.path(), os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	now := time.Now().UTC()
	for i := range 100_000 - 1 {
		e := Envelope{ID: newEnv(b, "lead", "", "").ID, From: "lead", To: "ana", Type: TypeText,
			Content: fmt.Sprintf("message %d: %s", i, strings.Repeat("y", 100)), Timestamp: now,
			Delivery: &Delivery{State: StatePending}}
		line, _ := json.Marshal(e)
		w.Write(append(line, '\n'))
		if i%10 == 0 {
			line, _ = json.Marshal(updateRecord{Update: e.ID, Delivery: &Delivery{State: StateSubmitted, Updated: now}})
			w.Write(append(line, '\n'))
		}
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	fi, _ := os.Stat(bx.path())
	b.SetBytes(fi.Size())
	for b.Loop() {
		batch, err := s.Read(team, "ana")
		if err != nil || len(batch.Envelopes) != 100_000 {
			b.Fatalf("read %d, %v", len(batch.Envelopes), err)
		}
	}
}

// BenchmarkWaitWake is the time from the end of an Append to the return of
// a Wait already blocked on it (ns/op), at the default poll interval.
func BenchmarkWaitWake(b *testing.B) {
	s := newStore(b)
	bx := box(b, s, "ana")
	appendN(b, bx, 1)
	var wakes []time.Duration
	for b.Loop() {
		start := mustRead(b, s, "ana").End
		env := newEnv(b, "bob", "ana", "ping")
		woke := make(chan time.Time, 1)
		go func() {
			_, err := s.Wait(context.Background(), team, "ana", func(e Envelope) bool { return e.ID == env.ID }, start)
			if err != nil {
				b.Error(err)
			}
			woke <- time.Now()
		}()
		// Let Wait read and start polling first; this sleep only shapes
		// the measurement, it decides nothing.
		time.Sleep(3 * time.Millisecond)
		if err := bx.Append(env); err != nil {
			b.Fatal(err)
		}
		sent := time.Now()
		wakes = append(wakes, (<-woke).Sub(sent))
	}
	slices.Sort(wakes)
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(float64(wakes[len(wakes)/2].Microseconds())/1000, "wake-p50-ms")
	b.ReportMetric(float64(wakes[(len(wakes)*95)/100].Microseconds())/1000, "wake-p95-ms")
}

// BenchmarkFanout12 is a broadcast's record of 12 copies, as the courier
// makes it: without an intent (AppendBatched each, one Sync), and with
// one (Intend first, Done after), the step that makes it all or nothing.
func BenchmarkFanout12(b *testing.B) {
	agents := []string{"a0", "a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8", "a9", "a10", "a11"}
	for _, intent := range []bool{false, true} {
		b.Run(map[bool]string{false: "copies", true: "intent+copies"}[intent], func(b *testing.B) {
			s := newStore(b)
			for b.Loop() {
				env := newEnv(b, "lead", Broadcast, "all hands")
				var held *Intended
				if intent {
					in := Intent{Env: env}
					for _, a := range agents {
						in.To = append(in.To, Inbox{Team: team, Agent: a})
					}
					var err error
					if held, err = s.Intend(in); err != nil {
						b.Fatal(err)
					}
				}
				for _, a := range agents {
					if err := box(b, s, a).AppendBatched(env); err != nil {
						b.Fatal(err)
					}
				}
				if err := s.Sync(); err != nil {
					b.Fatal(err)
				}
				if held != nil {
					if err := held.Done(); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
