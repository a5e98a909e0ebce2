package hosts

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Sent is what this host knows of a message it sent to another host: the
// latest state that host reported, kept on this machine's disk so that
// GET /v1/messages/{id} can answer after a restart.
type Sent struct {
	ID     string    `json:"id"`
	Host   string    `json:"host"`
	Team   string    `json:"team"`
	Agent  string    `json:"agent"`
	State  string    `json:"state"` // StateOutbox until the other host reports
	Reason string    `json:"reason,omitempty"`
	Detail string    `json:"detail,omitempty"`
	At     time.Time `json:"at"`
}

// StateOutbox is a sent message's state before its host reports one.
const StateOutbox = "outbox"

// sentBucket, on the embedded server, keeps Sent by message id.
const sentBucket = "agentmsg_sent"

// sentKeep bounds how long a sent message's state is kept.
const sentKeep = 30 * 24 * time.Hour

// RecordSent keeps s, unless what is kept for its copy is newer, or is a
// report and s only says the message is in the outbox (the report can
// come back before the sender has written that down).
func (l *Link) RecordSent(ctx context.Context, s Sent) error {
	kv, key := l.sent, CopyKey(s.ID, s.Team, s.Agent)
	if old, ok, err := sentAt(ctx, kv, key); err != nil {
		return err
	} else if ok && (old.At.After(s.At) || s.State == StateOutbox) {
		return nil
	}
	data, err := json.Marshal(s)
	if err != nil {
		return err
	}
	_, err = kv.Put(ctx, key, data)
	return err
}

// LookupSent is what is kept of message id's copies, if it was sent from
// here (a broadcast's, one per agent).
func (l *Link) LookupSent(ctx context.Context, id string) ([]Sent, error) {
	kv := l.sent
	keys, err := kv.ListKeysFiltered(ctx, id+".>")
	if err != nil {
		return nil, err
	}
	var out []Sent
	for key := range keys.Keys() {
		if s, ok, err := sentAt(ctx, kv, key); err == nil && ok {
			out = append(out, s)
		}
	}
	return out, nil
}

func sentAt(ctx context.Context, kv jetstream.KeyValue, key string) (Sent, bool, error) {
	e, err := kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return Sent{}, false, nil
	}
	if err != nil {
		return Sent{}, false, err
	}
	var s Sent
	if err := json.Unmarshal(e.Value(), &s); err != nil {
		return Sent{}, false, err
	}
	return s, true, nil
}
