package hosts

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmsg/agentmsg/target"
)

// Limits of what the bus keeps for a host.
const (
	// perSenderLimit bounds the packets of one kind from one host that
	// wait in another host's stream: each sender has a subject of its
	// own there, and one that fills its share is refused (its packets
	// wait in its own outbox), not the others.
	perSenderLimit = 100_000
	// presenceMaxSize bounds one host's presence entry (its agents).
	presenceMaxSize = 256 << 10
)

// hostStream is host name's stream as agentmsg makes it: what is sent to
// that host, on subjects agentmsg.<kind>.<name>.<from>, read by that host
// alone, by sequence.
func hostStream(name string, replicas int) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name: streamName(name), Subjects: []string{subjectRoot + ".*." + name + ".*"},
		Storage: jetstream.FileStorage, Retention: jetstream.WorkQueuePolicy,
		Replicas: max(replicas, 1), Duplicates: busDedupWindow, MaxAge: outboxKeep,
		Discard: jetstream.DiscardNew, MaxMsgsPerSubject: perSenderLimit, DiscardNewPerSubject: true,
		// Never read from a replica: one behind the leader would answer
		// "no such message" for one it has not got yet, and the purge
		// after it would lose it.
		AllowDirect: false,
	}
}

// presenceStream is the presence bucket's stream as agentmsg makes it: a
// key-value bucket (one entry a host, read directly) that no packet can
// roll up, delete or purge.
func presenceStream(replicas int) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name: "KV_" + presenceBucket, Subjects: []string{"$KV." + presenceBucket + ".>"},
		Storage: jetstream.FileStorage, Replicas: max(replicas, 1),
		MaxMsgsPerSubject: 1, MaxMsgs: -1, MaxBytes: -1, MaxConsumers: -1, MaxMsgSize: presenceMaxSize,
		Discard: jetstream.DiscardNew, Duplicates: 2 * time.Minute, AllowDirect: true,
		DenyDelete: true, DenyPurge: true, AllowRollup: false,
	}
}

// unsafe says what in have, a stream's configuration on the bus, lets a
// host do more than want allows: take subjects that are not the
// stream's, copy another stream in, publish on other subjects, or act on
// headers a packet carries (roll the stream up, schedule a message to
// another subject). "" when nothing.
func unsafe(have, want jetstream.StreamConfig) string {
	var bad []string
	if !slices.Equal(have.Subjects, want.Subjects) {
		bad = append(bad, fmt.Sprintf("subjects %v, not %v", have.Subjects, want.Subjects))
	}
	if have.Mirror != nil {
		bad = append(bad, "a mirror of "+have.Mirror.Name)
	}
	for _, s := range have.Sources {
		bad = append(bad, "a source "+s.Name)
	}
	if have.RePublish != nil {
		bad = append(bad, fmt.Sprintf("republish %s to %s", have.RePublish.Source, have.RePublish.Destination))
	}
	if have.SubjectTransform != nil {
		bad = append(bad, fmt.Sprintf("subject transform %s to %s", have.SubjectTransform.Source, have.SubjectTransform.Destination))
	}
	if have.AllowRollup && !want.AllowRollup {
		bad = append(bad, "roll-ups allowed")
	}
	if have.AllowMsgSchedules {
		bad = append(bad, "message schedules allowed")
	}
	if have.AllowMsgCounter || have.AllowAtomicPublish || have.AllowBatchPublish {
		bad = append(bad, "counters or batches allowed")
	}
	if have.Sealed {
		bad = append(bad, "sealed")
	}
	return strings.Join(bad, ", ")
}

// differs says whether have lacks some setting of want that agentmsg
// relies on, beyond unsafe (its limits, direct reads, retention).
func differs(have, want jetstream.StreamConfig) bool {
	return unsafe(have, want) != "" || have.Retention != want.Retention || have.MaxMsgsPerSubject != want.MaxMsgsPerSubject ||
		have.DiscardNewPerSubject != want.DiscardNewPerSubject || have.Discard != want.Discard || have.AllowDirect != want.AllowDirect ||
		have.DenyDelete != want.DenyDelete || have.DenyPurge != want.DenyPurge || have.MaxMsgSize != want.MaxMsgSize ||
		have.Storage != want.Storage
}

// ErrNotProvisioned: a host's stream, or the presence bucket, is not on
// the bus, and this host may not make it.
var ErrNotProvisioned = errors.New("not on the bus: the operator makes it (agentmsg hosts add NAME, or hosts provision NAME, with the operator's key; see docs/hosts.md)")

// ErrUnsafeStream: a stream on the bus is configured as agentmsg never
// makes it, in a way that gives a host more than its own mail.
var ErrUnsafeStream = errors.New("configured as agentmsg does not make it")

// ensure makes the stream want where it is missing. A stream that is
// there is put right (to want) when it is unsafe, and, for the operator
// (all), also when it differs from want in any setting agentmsg makes. A
// host's link, whose user may neither make nor change a stream on a bus
// with users, only finds out: it gets ErrNotProvisioned or
// ErrUnsafeStream. It returns the stream and says what it did.
func ensure(ctx context.Context, js jetstream.JetStream, want jetstream.StreamConfig, all bool) (jetstream.Stream, string, error) {
	s, err := js.Stream(ctx, want.Name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		if s, err = js.CreateStream(ctx, want); err != nil {
			if !all {
				return nil, "", fmt.Errorf("stream %s is %w (making it: %v)", want.Name, ErrNotProvisioned, err)
			}
			return nil, "", fmt.Errorf("making stream %s: %w", want.Name, err)
		}
		return s, "made " + want.Name, nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("looking at stream %s: %w", want.Name, err)
	}
	have := s.CachedInfo().Config
	bad := unsafe(have, want)
	if bad == "" && (!all || !differs(have, want) && have.Replicas == want.Replicas) {
		return s, want.Name + " as it should be", nil
	}
	if !all {
		want.Replicas = have.Replicas // the operator's choice
	}
	switch {
	case have.Mirror != nil:
		// A mirror cannot be turned into a stream; its content is a copy.
		err = fmt.Errorf("it is a mirror of %s: remove it (nats stream rm %s), then provision it again", have.Mirror.Name, want.Name)
	case have.Retention != want.Retention:
		err = fmt.Errorf("it keeps its messages as %s, not as a work queue: remove it (nats stream rm %s), then provision it again", have.Retention, want.Name)
	default:
		s, err = js.UpdateStream(ctx, want)
	}
	if err != nil {
		if bad != "" {
			return nil, "", fmt.Errorf("stream %s is %w (%s), and putting it right failed: %v", want.Name, ErrUnsafeStream, bad, err)
		}
		return nil, "", fmt.Errorf("putting stream %s right: %w", want.Name, err)
	}
	what := "put " + want.Name + " right"
	if bad != "" {
		what += " (it had " + bad + ")"
	}
	return s, what, nil
}

// Operator is the operator's connection to the bus, for Provision.
type Operator struct {
	// URL, CAFile and TLSServerName as in Options; NkeyFile is the
	// operator's key (agentmsg hosts init).
	URL, NkeyFile, CAFile, TLSServerName string
}

// Provision makes, on the bus, the presence bucket and the stream of each
// host in names, with replicas copies, or puts right the ones whose
// configuration differs from agentmsg's (a stream a host made before
// hosts could not, or one changed by hand). It says what it did, a line
// per stream.
func Provision(ctx context.Context, op Operator, names []string, replicas int) ([]string, error) {
	for _, n := range names {
		if err := target.CheckHost(n); err != nil {
			return nil, err
		}
	}
	nc, err := dial(dialOptions{URL: op.URL, NkeyFile: op.NkeyFile, CAFile: op.CAFile, TLSServerName: op.TLSServerName,
		Name: "agentmsg-operator", Inbox: adminInbox, Once: true})
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, provisionTimeout)
	defer cancel()
	var done []string
	for _, want := range append([]jetstream.StreamConfig{presenceStream(replicas)}, hostStreams(names, replicas)...) {
		_, what, err := ensure(ctx, js, want, true)
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) {
			err = fmt.Errorf("%w (no answer from the bus in %s: is the operator's user in every NATS server's authorization, and were they reloaded?)", err, provisionTimeout)
		}
		if err != nil {
			return done, err
		}
		done = append(done, what)
	}
	return done, nil
}

func hostStreams(names []string, replicas int) []jetstream.StreamConfig {
	out := make([]jetstream.StreamConfig, len(names))
	for i, n := range names {
		out[i] = hostStream(n, replicas)
	}
	return out
}

// provisionTimeout bounds Provision's work on the bus.
const provisionTimeout = 30 * time.Second
