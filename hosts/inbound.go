package hosts

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/sync/errgroup"
)

// inbound hands what arrives in this host's stream to the handler, in the
// stream's order, until ctx ends. It (re)creates the stream whenever the
// bus comes back without it.
//
// The stream is read by sequence, as the forwarder reads the outbox, not
// through a consumer: a batch of up to inboundBatch packets is read at
// once, recorded, made durable with one Flush, and then purged from the
// stream with one request. The stream's first sequence is the cursor, on
// the bus, where no crash can lose it. A consumer with more than one
// packet in flight broke the order when one was lost on a broken link (it
// came again only after its ack wait, behind later ones: the fault test
// saw it with 64); with one in flight, 1,000 queued packets took 35 s.
func (l *Link) inbound(ctx context.Context) {
	var wait time.Duration
	for ctx.Err() == nil {
		stream, err := l.ensureInbound(ctx)
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
		if err := l.drain(ctx, stream); err != nil && ctx.Err() == nil {
			l.setReady(false)
			l.setErr(err)
			if !backoff(ctx, &wait) {
				return
			}
		}
	}
}

// ensureInbound makes this host's stream on the bus.
func (l *Link) ensureInbound(ctx context.Context) (jetstream.Stream, error) {
	if !l.bus.IsConnected() {
		return nil, errors.New("the bus is not reachable")
	}
	ctx, cancel := context.WithTimeout(ctx, publishTimeout)
	defer cancel()
	name := l.opts.Name
	// Looked up first, made only when missing (on a bus whose users may:
	// else the operator made it): after a fault the bus answers a lookup
	// well before it takes a change of its metadata. One configured to
	// give away this host's mail, or to let a packet act as more than a
	// packet, is not read.
	stream, _, err := ensure(ctx, l.bjs, hostStream(name, l.opts.Replicas), false)
	if err != nil {
		return nil, fmt.Errorf("this host's stream on the bus: %w", err)
	}
	return stream, nil
}

// Reading the stream.
const (
	// inboundBatch bounds the packets handled, and made durable, at once.
	inboundBatch = 256
	// inboundReads is how many reads of one batch are in flight at once.
	inboundReads = 32
	// inboundIdle is how often an idle reader looks at its stream without
	// a doorbell (one lost while the bus was away, say).
	inboundIdle = 2 * time.Second
	// inboundRetry is the wait after a packet the handler failed.
	inboundRetry = time.Second
)

// drain reads the stream a batch at a time until the bus fails or ctx
// ends. Every packet published to this host also rings a doorbell, a
// plain subscription on its subjects: the reader wakes at once, and an
// event is told to those waiting for it at once (see hear).
func (l *Link) drain(ctx context.Context, stream jetstream.Stream) error {
	bell := make(chan struct{}, 1)
	sub, err := l.bus.Subscribe(subject("*", l.opts.Name, "*"), func(m *nats.Msg) {
		l.hear(m)
		select {
		case bell <- struct{}{}:
		default:
		}
	})
	if err != nil {
		return fmt.Errorf("listening on the bus: %w", err)
	}
	defer sub.Unsubscribe()
	// A doorbell can ring before the stream has the packet: a cluster
	// relays a publish to subscribers before its replicas have stored it
	// (over the lab's network, a send waited for the idle look, 2 s). So
	// after a ring that found nothing the stream is looked at again soon,
	// at growing intervals, for a while.
	var soon time.Duration
	for ctx.Err() == nil {
		n, failed, err := l.readBatch(ctx, stream)
		switch {
		case err != nil:
			return err
		case failed:
			if !sleep(ctx, inboundRetry) {
				return ctx.Err()
			}
			continue
		case n > 0:
			soon = 0
			continue // more may have come meanwhile
		}
		wait := inboundIdle
		if soon > 0 && soon <= bellPatience {
			wait, soon = soon, soon*2
		}
		again := time.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-bell:
			soon = bellFirst
		case <-again.C:
		}
		again.Stop()
	}
	return ctx.Err()
}

// After a doorbell, the stream is looked at again after bellFirst, then
// at twice the interval each time, up to bellPatience.
const (
	bellFirst    = 250 * time.Microsecond
	bellPatience = 512 * time.Millisecond
)

// sleep waits d, or less if ctx ends; false when it did.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// readBatch reads the oldest packets of the stream, hands them to the
// handler in order, and purges those it took; n is how many, failed says
// the handler failed one (it and those after it stay, to be read again).
func (l *Link) readBatch(ctx context.Context, stream jetstream.Stream) (n int, failed bool, err error) {
	ictx, cancel := context.WithTimeout(ctx, busTimeout)
	info, err := stream.Info(ictx)
	cancel()
	if err != nil {
		return 0, false, fmt.Errorf("this host's stream on the bus: %w", err)
	}
	first, last := info.State.FirstSeq, info.State.LastSeq
	if info.State.Msgs == 0 || last < first {
		return 0, false, nil
	}
	last = min(last, first+inboundBatch-1)
	rctx, cancel := context.WithTimeout(ctx, publishTimeout)
	defer cancel()
	msgs := make([]*jetstream.RawStreamMsg, last-first+1)
	g, gctx := errgroup.WithContext(rctx)
	g.SetLimit(inboundReads)
	for i := range msgs {
		g.Go(func() error {
			m, err := stream.GetMsg(gctx, first+uint64(i))
			if errors.Is(err, jetstream.ErrMsgNotFound) {
				return nil // taken out of the stream otherwise (its age)
			}
			msgs[i] = m
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return 0, false, fmt.Errorf("reading this host's stream: %w", err)
	}
	took := 0 // the packets taken, from the first: all of them, or up to the failed one
	for _, m := range msgs {
		if m != nil && !l.take(ctx, m) {
			failed = true
			break
		}
		took++
	}
	if err := l.opts.Handler.Flush(ctx); err != nil {
		l.setErr(fmt.Errorf("recording what came: %w", err))
		return 0, true, nil
	}
	if took == 0 {
		return 0, failed, nil
	}
	// Recorded durably: a crash before the purge reads them again, which
	// the handler's record by id makes harmless.
	if err := stream.Purge(rctx, jetstream.WithPurgeSequence(first+uint64(took))); err != nil {
		return took, failed, fmt.Errorf("clearing this host's stream: %w", err)
	}
	return took, failed, nil
}

// take hands one packet to the handler; false when it failed (to be
// handed over again). A packet that is not whole or not this host's is
// refused for good, and counts as taken.
func (l *Link) take(ctx context.Context, m *jetstream.RawStreamMsg) bool {
	p, err := l.check(m.Subject, m.Data)
	if err != nil {
		l.opts.Logf("hosts: refused: %v", err)
		return true // purged with the rest, never handed over
	}
	switch p.Kind {
	case KindMessage:
		err = l.opts.Handler.Message(ctx, p)
	case KindEvent:
		if !l.wasSent(ctx, p.Copy()) {
			l.opts.Logf("hosts: refused: a report from host %s of %s, which was not sent there", p.From, p.Copy().Key())
			return true
		}
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

// hear is the doorbell's copy of a packet as it is published: a report
// is told to those waiting for it now, before the stream is read (what
// the handler records still comes from the stream). Its subject proves
// its sender as the stream's does: only that host may publish on it; and
// it counts only of a copy sent to that host.
func (l *Link) hear(m *nats.Msg) {
	p, err := l.check(m.Subject, m.Data)
	if err != nil || p.Kind != KindEvent {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), busTimeout)
	defer cancel()
	if l.wasSent(ctx, p.Copy()) {
		l.tell(p)
	}
}

// check decodes a packet that came on subject, and refuses one that is
// not this host's or that claims another sender than its subject, which
// is what the sender's permissions prove.
func (l *Link) check(subj string, data []byte) (Packet, error) {
	kind, to, from, ok := parseSubject(subj)
	if !ok || to != l.opts.Name {
		return Packet{}, fmt.Errorf("a packet on subject %s, not this host's", subj)
	}
	p, err := decode(data)
	if err != nil {
		return Packet{}, err
	}
	if p.From != from || p.To != to || p.Kind != kind {
		return Packet{}, fmt.Errorf("packet %s says it is a %s from host %s to %s, but came as a %s from %s", p.ID, p.Kind, p.From, p.To, kind, from)
	}
	return p, nil
}

func (l *Link) setReady(ready bool) {
	l.mu.Lock()
	l.ready = ready
	l.mu.Unlock()
}
