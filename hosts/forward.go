package hosts

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// forward carries the outbox to the bus, oldest first, until ctx ends. A
// packet leaves the outbox only once the receiving host's stream has
// acknowledged it; one that cannot go now holds back the later packets to
// the same host (their order is kept), not those to other hosts.
func (l *Link) forward(ctx context.Context) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var wait time.Duration
	for ctx.Err() == nil {
		moved, blocked, err := l.forwardOnce(ctx)
		l.setErr(err)
		switch {
		case err != nil || blocked:
			if !backoff(ctx, &wait) {
				return
			}
			continue
		case moved:
			wait = 0
			continue // more may have come meanwhile
		}
		wait = 0
		select {
		case <-ctx.Done():
		case <-l.doorbell:
		case <-tick.C:
		}
	}
}

// forwardOnce tries every packet in the outbox once; moved says some
// went, blocked that some could not. The packets that went are cleared
// from the outbox at once where they are its oldest (one purge: a delete
// each was an fsync each), else one by one.
func (l *Link) forwardOnce(ctx context.Context) (moved, blocked bool, err error) {
	info, err := l.box.Info(ctx)
	if err != nil {
		return false, false, fmt.Errorf("reading the outbox: %w", err)
	}
	if info.State.Msgs == 0 {
		return false, false, nil
	}
	held := map[string]bool{} // hosts whose packets wait this round
	var last error
	prefix := info.State.FirstSeq // every packet below it went
	var went []string             // the hosts of the packets below prefix
	clear := func() error {
		if prefix == info.State.FirstSeq {
			return nil
		}
		if err := l.box.Purge(ctx, jetstream.WithPurgeSequence(prefix)); err != nil {
			return err
		}
		for _, h := range went {
			l.addWaiting(h, -1)
		}
		return nil
	}
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && ctx.Err() == nil; seq++ {
		raw, err := l.box.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			if prefix == seq {
				prefix++
			}
			continue
		}
		if err != nil {
			return moved, true, errors.Join(fmt.Errorf("reading the outbox: %w", err), clear())
		}
		p, err := decode(raw.Data)
		if err != nil {
			// Not a packet this agentmsg can send: it would hold its
			// host's packets back forever.
			l.opts.Logf("hosts: dropping outbox entry %d: %v", seq, err)
			_ = l.box.DeleteMsg(ctx, seq)
			continue
		}
		if held[p.To] {
			continue
		}
		if err := l.publish(ctx, p.Kind, p.To, raw.Data, raw.Header.Get(jetstream.MsgIDHeader)); err != nil {
			held[p.To], last = true, fmt.Errorf("sending to host %s: %w", p.To, err)
			l.setStuck(p.To, true)
			continue
		}
		l.setStuck(p.To, false)
		moved = true
		// Acknowledged by the bus: a crash before it is cleared publishes
		// it again, which the bus's de-duplication (and the receiver's
		// record by id) makes harmless.
		if prefix == seq {
			prefix++
			went = append(went, p.To)
		} else if err := l.box.DeleteMsg(ctx, seq); err != nil {
			return moved, true, errors.Join(fmt.Errorf("clearing the outbox: %w", err), clear())
		} else {
			l.addWaiting(p.To, -1)
		}
	}
	if err := clear(); err != nil {
		return moved, true, fmt.Errorf("clearing the outbox: %w", err)
	}
	return moved, len(held) > 0, last
}

// errNoHost: no stream on the bus takes a host's packets (it never joined).
var errNoHost = errors.New("no such host on the bus (it has never joined)")

// publish puts a packet (its kind, host and encoded data) on the bus and
// waits, up to busTimeout, for the receiving stream's ack.
func (l *Link) publish(ctx context.Context, kind, to string, data []byte, dedup string) error {
	if !l.bus.IsConnected() {
		return errors.New("the bus is not reachable")
	}
	msg := &nats.Msg{Subject: subject(kind, to, l.opts.Name), Data: data, Header: nats.Header{}}
	msg.Header.Set(jetstream.MsgIDHeader, dedup)
	ctx, cancel := context.WithTimeout(ctx, busTimeout)
	defer cancel()
	ack, err := l.bjs.PublishMsg(ctx, msg, jetstream.WithExpectStream(streamName(to)))
	if errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders) {
		return errNoHost
	}
	if err != nil {
		return err
	}
	if ack.Stream != streamName(to) {
		return fmt.Errorf("stored by stream %s, not %s", ack.Stream, streamName(to))
	}
	return nil
}
