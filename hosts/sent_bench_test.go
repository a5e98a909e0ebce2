package hosts

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// How long a link takes to open with n copies' records kept (sendCutOff
// reads every one): the daemon's start waits for it.
func BenchmarkOpenWithSentRecords(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			dir := b.TempDir()
			ctx := context.Background()
			l, err := Open(ctx, Options{Name: "a", Dir: dir, Handler: &recorder{}})
			if err != nil {
				b.Fatal(err)
			}
			for i := range n {
				p := message("b", i)
				p.Message.Sent = time.Now().UTC()
				s := Sent{ID: p.ID, Host: "b", Team: "t", Agent: "ana", State: StateOutbox, At: p.Message.Sent, SentAt: p.Message.Sent}
				if err := l.RecordSent(ctx, s, &p); err != nil {
					b.Fatal(err)
				}
				if err := l.Send(ctx, p); err != nil {
					b.Fatal(err)
				}
				ev := Packet{Kind: KindEvent, From: "b", To: "a", ID: p.ID, Event: &RemoteEvent{Team: "t", Agent: "ana", State: "submitted", Seq: 1, At: time.Now().UTC()}}
				if i%2 == 0 { // half reported, half still waiting in the outbox
					if err := l.RecordReport(ctx, ev); err != nil {
						b.Fatal(err)
					}
				}
			}
			l.Close()
			b.ResetTimer()
			for range b.N {
				l, err := Open(ctx, Options{Name: "a", Dir: dir, Handler: &recorder{}})
				if err != nil {
					b.Fatal(err)
				}
				l.Close()
			}
		})
	}
}
