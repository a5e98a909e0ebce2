package hosts

import (
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmsg/agentmsg/target"
)

// Heartbeats: beside its entry in the presence bucket, each host publishes
// a heartbeat on agentmsg.hb.<name> with every announcement, and hears
// everyone's. Whether another host is up is then what this host heard
// of it, on its own monotonic clock, and not a read of the bucket: a
// read that the cluster answers only once it has a leader for the bucket
// and its followers are current again, and which, with a server cut off
// (its routes not yet known dead), went to that server and was lost. A
// host cut off was listed up for 36 s (issue 30, finding 5), 43 s here;
// with heartbeats it is listed down once silent for presenceMaxAge.
//
// The bucket still says which hosts there are, their agents, and when a
// host this one never heard was last there: a heartbeat decides only for
// a host heard since this host began listening, and only while this host
// hears its own (its subscription and its permission to publish work).

// beatSubject is where host name's heartbeats go. Three tokens: no host's
// stream (agentmsg.*.<to>.*) takes them.
func beatSubject(name string) string { return subjectRoot + ".hb." + name }

// beat is one heartbeat.
type beat struct {
	// Left: the host's daemon stops (cleanly).
	Left bool `json:"left,omitempty"`
}

// beats is what this host heard of others' heartbeats, by its own clock.
type beats struct {
	mu sync.Mutex
	// since is when this host's listener last started hearing the bus
	// (subscribed, or reconnected); zero when it does not.
	since time.Time
	// heard is when each host was last heard since then, and whether it
	// said it left.
	heard map[string]heard
}

type heard struct {
	at   time.Time
	left bool
}

// listen subscribes l to every host's heartbeats on the bus.
func (l *Link) listen() error {
	_, err := l.bus.Subscribe(subjectRoot+".hb.*", func(m *nats.Msg) {
		name := strings.TrimPrefix(m.Subject, subjectRoot+".hb.")
		if target.CheckHost(name) != nil {
			return
		}
		var b beat
		_ = json.Unmarshal(m.Data, &b)
		l.beats.mu.Lock()
		defer l.beats.mu.Unlock()
		if l.beats.heard == nil {
			l.beats.heard = map[string]heard{}
		}
		l.beats.heard[name] = heard{at: time.Now(), left: b.Left}
	})
	if err != nil {
		return err
	}
	l.beats.restart()
	return nil
}

// restart forgets what was heard: the listener starts again (a
// reconnect, during which nothing could be heard).
func (b *beats) restart() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.since, b.heard = time.Now(), map[string]heard{}
}

// stop says the listener hears nothing now (the bus is away).
func (b *beats) stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.since = time.Time{}
}

// beat publishes this host's heartbeat (best effort: a heartbeat that is
// lost is one that is late).
func (l *Link) beat(left bool) {
	data, _ := json.Marshal(beat{Left: left})
	_ = l.bus.Publish(beatSubject(l.opts.Name), data)
}

// of is what the heartbeats say of host: when it was last heard (this
// host's time) and whether that makes it up; sure is false when they say
// nothing it can go by: this host has not heard its own heartbeat lately
// (its listener, or its permission to publish, does not work, or the bus
// is away), or has not heard host since it began listening (a host of an
// agentmsg without heartbeats, or one away since then: the bucket says).
func (b *beats) of(self, host string) (at time.Time, up, sure bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.since.IsZero() {
		return at, false, false
	}
	me, ok := b.heard[self]
	if !ok || time.Since(me.at) > presenceMaxAge {
		return at, false, false
	}
	h, ok := b.heard[host]
	if !ok {
		return at, false, false
	}
	return h.at, !h.left && time.Since(h.at) < presenceMaxAge, true
}
