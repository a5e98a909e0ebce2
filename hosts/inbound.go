package hosts

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// inbound hands what arrives in this host's stream to the handler, one
// packet at a time, until ctx ends. It (re)creates the stream and its
// consumer whenever the bus comes back without them.
func (l *Link) inbound(ctx context.Context) {
	var wait time.Duration
	for ctx.Err() == nil {
		cons, err := l.ensureInbound(ctx)
		if err != nil {
			l.setReady(false)
			l.setErr(err)
			if !backoff(ctx, &wait) {
				return
			}
			continue
		}
		l.setReady(true)
		l.ring() // the forwarder may have been waiting for the bus
		wait = 0
		if err := l.consume(ctx, cons); err != nil && ctx.Err() == nil {
			l.setReady(false)
			l.setErr(err)
			if !backoff(ctx, &wait) {
				return
			}
		}
	}
}

// ensureInbound makes this host's stream and durable consumer on the bus.
func (l *Link) ensureInbound(ctx context.Context) (jetstream.Consumer, error) {
	if !l.bus.IsConnected() {
		return nil, errors.New("the bus is not reachable")
	}
	ctx, cancel := context.WithTimeout(ctx, publishTimeout)
	defer cancel()
	name := l.opts.Name
	replicas := max(l.opts.Replicas, 1)
	// Looked up first, made only when missing: after a fault the bus
	// answers a lookup well before it takes a change of its metadata.
	stream, err := l.bjs.Stream(ctx, streamName(name))
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		stream, err = l.bjs.CreateStream(ctx, jetstream.StreamConfig{
			Name: streamName(name), Subjects: []string{subjectRoot + ".*." + name + ".*"},
			Storage: jetstream.FileStorage, Retention: jetstream.WorkQueuePolicy,
			Replicas: replicas, Duplicates: busDedupWindow, MaxAge: outboxKeep,
		})
	}
	if err != nil {
		return nil, fmt.Errorf("this host's stream %s on the bus: %w", streamName(name), err)
	}
	cons, err := stream.Consumer(ctx, inboundConsumer)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		cons, err = stream.CreateConsumer(ctx, jetstream.ConsumerConfig{
			Durable: inboundConsumer, AckPolicy: jetstream.AckExplicitPolicy,
			// One packet in flight: with more, one lost on the way (a
			// link that broke) comes again only after AckWait, while
			// those after it come at once, out of their order (the fault
			// test saw it with 64).
			MaxAckPending: 1, AckWait: inboundAckWait, DeliverPolicy: jetstream.DeliverAllPolicy,
			Replicas: replicas,
		})
	}
	if err != nil {
		return nil, fmt.Errorf("this host's consumer on the bus: %w", err)
	}
	return cons, nil
}

// inboundBatch bounds the packets handled, and made durable, at once: one,
// as the consumer has one in flight (MaxAckPending; a pull for more is
// refused). The handler's batching is ready for a reader that keeps the
// order with more in flight.
const inboundBatch = 1

// fetchWait is how long a fetch waits for a first packet; ending the link
// waits for it too.
const fetchWait = 2 * time.Second

// consume reads packets a batch at a time until the consumer fails or ctx
// ends: what is there now, or else the first to come.
func (l *Link) consume(ctx context.Context, cons jetstream.Consumer) error {
	for ctx.Err() == nil {
		msgs, err := fetch(cons.FetchNoWait(inboundBatch))
		if err == nil && len(msgs) == 0 {
			msgs, err = fetch(cons.Fetch(1, jetstream.FetchMaxWait(fetchWait)))
		}
		if err != nil {
			return err
		}
		l.takeBatch(ctx, msgs)
	}
	return ctx.Err()
}

// fetch collects a fetched batch.
func fetch(b jetstream.MessageBatch, err error) ([]jetstream.Msg, error) {
	if err != nil {
		return nil, err
	}
	var out []jetstream.Msg
	for m := range b.Messages() {
		out = append(out, m)
	}
	if err := b.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) && !errors.Is(err, jetstream.ErrNoMessages) {
		return out, err
	}
	return out, nil
}

// takeBatch hands a batch to the handler in order, makes it durable, and
// acknowledges it. A packet the handler fails is handed over again later,
// with every packet after it (their order is kept).
func (l *Link) takeBatch(ctx context.Context, msgs []jetstream.Msg) {
	var done []jetstream.Msg
	failed := len(msgs)
	for i, m := range msgs {
		if ok := l.take(ctx, m); !ok {
			failed = i
			break
		}
		done = append(done, m)
	}
	if err := l.opts.Handler.Flush(ctx); err != nil {
		l.setErr(fmt.Errorf("recording what came: %w", err))
		done, failed = nil, 0
	}
	// A plain ack: one that is lost hands the packet over again, which
	// the handler's record by id makes harmless.
	for _, m := range done {
		_ = m.Ack()
	}
	for _, m := range msgs[failed:] {
		_ = m.NakWithDelay(time.Second)
	}
}

// take hands one packet to the handler; false when it failed (to be
// handed over again). A packet that is not whole or not this host's is
// refused for good, and counts as taken.
func (l *Link) take(ctx context.Context, m jetstream.Msg) bool {
	kind, to, from, ok := parseSubject(m.Subject())
	p, err := decode(m.Data())
	switch {
	case !ok || to != l.opts.Name:
		err = fmt.Errorf("a packet on subject %s, not this host's", m.Subject())
	case err == nil && (p.From != from || p.To != to || p.Kind != kind):
		// The subject is what the sender's permissions prove.
		err = fmt.Errorf("packet %s says it is a %s from host %s to %s, but came as a %s from %s", p.ID, p.Kind, p.From, p.To, kind, from)
	}
	if err != nil {
		l.opts.Logf("hosts: refused: %v", err)
		_ = m.Term() // never handed over again
		return true
	}
	switch p.Kind {
	case KindMessage:
		err = l.opts.Handler.Message(ctx, p)
	case KindEvent:
		// The sender hears at once: the report is the other host's truth
		// whether or not this host has written it down yet.
		l.tell(p)
		err = l.opts.Handler.Event(ctx, p)
	}
	if err != nil {
		l.setErr(fmt.Errorf("recording %s from host %s: %w", p.ID, p.From, err))
		return false
	}
	return true
}

func (l *Link) setReady(ready bool) {
	l.mu.Lock()
	l.ready = ready
	l.mu.Unlock()
}
