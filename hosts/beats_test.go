package hosts

import (
	"context"
	"testing"
	"time"
)

// What the heartbeats say of a host, and when they say nothing to go by
// (the bucket then decides): this host does not hear its own, or never
// heard that host since it began listening.
func TestHeartbeatsSayWhoIsUp(t *testing.T) {
	now := time.Now()
	for _, c := range []struct {
		name             string
		since            time.Duration // how long this host has listened; 0: not
		self, host       time.Duration // how long ago each was heard; 0: never
		left             bool
		wantUp, wantSure bool
	}{
		{"heard a moment ago", time.Minute, time.Second, time.Second, false, true, true},
		{"silent for 13 s", time.Minute, time.Second, 13 * time.Second, false, false, true},
		{"said it left", time.Minute, time.Second, time.Second, true, false, true},
		{"never heard: the bucket says", time.Minute, time.Second, 0, false, false, false},
		{"this host hears not even itself", time.Minute, 20 * time.Second, time.Second, false, false, false},
		{"not listening (the bus is away)", 0, time.Second, time.Second, false, false, false},
	} {
		var b beats
		if c.since > 0 {
			b.since = now.Add(-c.since)
		}
		b.heard = map[string]heard{}
		if c.self > 0 {
			b.heard["me"] = heard{at: now.Add(-c.self)}
		}
		if c.host > 0 {
			b.heard["other"] = heard{at: now.Add(-c.host), left: c.left}
		}
		_, up, sure := b.of("me", "other")
		if up != c.wantUp || sure != c.wantSure {
			t.Errorf("%s: up %v, sure %v; want %v, %v", c.name, up, sure, c.wantUp, c.wantSure)
		}
	}
}

// Two links hear each other's heartbeats; one that stops says so, and is
// down for the other at once.
func TestAHostThatLeavesIsDownAtOnce(t *testing.T) {
	bus := busServer(t, t.TempDir(), -1)
	defer bus.Shutdown()
	a := openLink(t, "a", bus.ClientURL(), &recorder{})
	b := startLink(t, Options{Name: "b", URL: bus.ClientURL(), Handler: &recorder{}})
	ctx := context.Background()
	waitFor(t, "a hears b's heartbeat", func() bool { _, up, sure := a.beats.of("a", "b"); return up && sure })
	b.Close()
	left := time.Now()
	waitFor(t, "a to see b down", func() bool { _, up, err := a.Heard(ctx, "b"); return err == nil && !up })
	if d := time.Since(left); d > time.Second {
		t.Errorf("b was down for a %s after it left, not at once", d)
	}
}
