package hosts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Sent is what this host knows of one copy of a message it sent to
// another host: the message as it went, and every state that host
// reported of it, kept on this machine's disk so that agentmsg log and
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
	// The message as it went: its sender on this host, type, text and
	// when it was sent.
	From   string    `json:"from,omitempty"`
	Type   string    `json:"type,omitempty"`
	Text   string    `json:"text,omitempty"`
	SentAt time.Time `json:"sent_at,omitzero"`
	// Reports are the states its host reported, in order (the latest
	// sentReports).
	Reports []Report `json:"reports,omitempty"`
}

// Report is one state a copy's host reported.
type Report struct {
	State  string    `json:"state"`
	Reason string    `json:"reason,omitempty"`
	Detail string    `json:"detail,omitempty"`
	At     time.Time `json:"at"`
}

// Copy is the copy s records.
func (s Sent) Copy() Copy { return Copy{ID: s.ID, Host: s.Host, Team: s.Team, Agent: s.Agent} }

// StateOutbox is a sent message's state before its host reports one.
const StateOutbox = "outbox"

// sentBucket, on the embedded server, keeps Sent by copy (Copy.Key).
const sentBucket = "agentmsg_sent"

// sentKeep bounds how long a sent message's state is kept; sentReports
// how many of its reports.
const (
	sentKeep    = 30 * 24 * time.Hour
	sentReports = 32
)

// ErrNotSent: a report of a copy this host never sent to the host that
// reports it. It counts for nothing.
var ErrNotSent = errors.New("no such copy was sent from here to that host")

// sentRecord is a Sent as the bucket keeps it: until its host reports,
// with the packet that carries it and that packet's nonce, so that a send
// cut off between its record and its packet's handing over (the daemon
// killed) goes when the link opens again (sendCutOff). GET /v1/messages
// and the log read the Sent alone.
type sentRecord struct {
	Sent
	Packet *Packet `json:"packet,omitempty"`
	Nonce  string  `json:"nonce,omitempty"`
}

// RecordSent keeps the record of a copy this host sends, before it goes:
// a report is believed only of a copy recorded so (RecordReport). p is
// the packet that carries it (nil for none to keep): it is kept with the
// record, given its Nats-Msg-Id here, and Send must be handed this p. What
// a report already set is kept (the same copy sent again), and the packet
// then is not: a copy its host reported on went.
func (l *Link) RecordSent(ctx context.Context, s Sent, p *Packet) error {
	rec := sentRecord{Sent: s}
	if p != nil {
		if p.nonce == "" {
			p.nonce = nonce()
		}
		going := *p
		rec.Packet, rec.Nonce = &going, p.nonce
	}
	return l.updateSent(ctx, s.Copy(), func(old *sentRecord) error {
		if old == nil || len(old.Reports) == 0 {
			return nil
		}
		rec.State, rec.Reason, rec.Detail, rec.At, rec.Reports = old.State, old.Reason, old.Detail, old.At, old.Reports
		rec.Packet, rec.Nonce = nil, ""
		return nil
	}, &rec)
}

// RecordReport keeps the state p, a report, says of its copy: only when
// this host sent that copy to p's sender (else ErrNotSent), and only when
// it is not older than the state kept.
func (l *Link) RecordReport(ctx context.Context, p Packet) error {
	ev := p.Event
	var rec sentRecord
	return l.updateSent(ctx, p.Copy(), func(old *sentRecord) error {
		if old == nil {
			return ErrNotSent
		}
		s := old.Sent
		r := Report{State: ev.State, Reason: ev.Reason, Detail: ev.Detail, At: ev.At}
		if len(s.Reports) > 0 && s.At.After(ev.At) {
			return errUnchanged
		}
		s.State, s.Reason, s.Detail, s.At = r.State, r.Reason, r.Detail, r.At
		s.Reports = append(s.Reports, r)
		if n := len(s.Reports); n > sentReports {
			s.Reports = slices.Clone(s.Reports[n-sentReports:])
		}
		rec = sentRecord{Sent: s} // it went: its packet is not kept
		return nil
	}, &rec)
}

var errUnchanged = errors.New("unchanged")

// updateSent writes *rec at c's key after change has seen what is there
// (nil when nothing), unless it says errUnchanged; written only if no
// other write came between (a revision check), tried again if one did.
func (l *Link) updateSent(ctx context.Context, c Copy, change func(old *sentRecord) error, rec *sentRecord) error {
	kv, key := l.sent, c.Key()
	for range 8 {
		var old *sentRecord
		var rev uint64
		e, err := kv.Get(ctx, key)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
		case err != nil:
			return err
		default:
			var o sentRecord
			if err := json.Unmarshal(e.Value(), &o); err != nil {
				return fmt.Errorf("the record of %s: %w", key, err)
			}
			old, rev = &o, e.Revision()
		}
		if err := change(old); errors.Is(err, errUnchanged) {
			return nil
		} else if err != nil {
			return err
		}
		data, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		if old == nil {
			_, err = kv.Create(ctx, key, data)
		} else {
			_, err = kv.Update(ctx, key, data, rev)
		}
		if errors.Is(err, jetstream.ErrKeyExists) || isWrongSequence(err) {
			continue // written meanwhile: look again
		}
		return err
	}
	return fmt.Errorf("the record of %s: changed by others eight times in a row", key)
}

// sendCutOff sends, oldest first, what an earlier run recorded as going
// (RecordSent) and may not have handed over: a copy recorded within
// busDedupWindow that no report came of, whose packet is not among those
// waiting in the outbox (waiting, by Nats-Msg-Id). Called by Open before
// Start, it puts them in the outbox, ahead of every new send. One that did
// reach the bus has the same Nats-Msg-Id there, and the bus drops it while
// it remembers that id; else its host finds the id in the agent's inbox
// already from this host, and only reports its state again. The window
// bounds what a host that never answers again costs: its copies are sent
// once more by the starts within the hour after they were recorded, not by
// every start for a month.
func (l *Link) sendCutOff(ctx context.Context, waiting map[string]bool) error {
	w, err := l.sent.WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		return err
	}
	var cut []Packet
	for e := range w.Updates() {
		if e == nil {
			break // every record read
		}
		var rec sentRecord
		if json.Unmarshal(e.Value(), &rec) != nil || rec.Packet == nil || rec.State != StateOutbox || len(rec.Reports) > 0 ||
			time.Since(rec.At) > busDedupWindow {
			continue
		}
		p := *rec.Packet
		p.nonce = rec.Nonce
		if p.Message == nil || p.nonce == "" || waiting[p.dedupID(p.nonce)] {
			continue
		}
		cut = append(cut, p)
	}
	if err := w.Stop(); err != nil {
		return err
	}
	slices.SortStableFunc(cut, func(a, b Packet) int { return a.Message.Sent.Compare(b.Message.Sent) })
	for _, p := range cut {
		if err := l.Send(ctx, p); err != nil {
			return err
		}
	}
	if len(cut) > 0 {
		l.opts.Logf("hosts: sent %d message(s) again that an earlier run recorded but may not have handed over", len(cut))
	}
	return nil
}

// isWrongSequence reports whether err is a revision check that failed.
func isWrongSequence(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence
}

// wasSent reports whether copy c was sent from here: a report of it
// counts. A record from before copies were kept per host (its key names
// no host) counts when it names the same host.
func (l *Link) wasSent(ctx context.Context, c Copy) bool {
	if _, err := l.sent.Get(ctx, c.Key()); err == nil {
		return true
	}
	team := c.Team
	if team == "" {
		team = "-"
	}
	old, ok, err := sentAt(ctx, l.sent, c.ID+"."+team+"."+c.Agent)
	return err == nil && ok && old.Host == c.Host
}

// LookupSent is what is kept of message id's copies, if it was sent from
// here (a broadcast's, one per agent and host).
func (l *Link) LookupSent(ctx context.Context, id string) ([]Sent, error) {
	return l.sentMatching(ctx, id+".>")
}

// AllSent is every copy sent from here that is still kept.
func (l *Link) AllSent(ctx context.Context) ([]Sent, error) {
	return l.sentMatching(ctx, ">")
}

func (l *Link) sentMatching(ctx context.Context, filter string) ([]Sent, error) {
	kv := l.sent
	keys, err := kv.ListKeysFiltered(ctx, filter)
	if err != nil {
		return nil, err
	}
	var out []Sent
	for key := range keys.Keys() {
		if s, ok, err := sentAt(ctx, kv, key); err == nil && ok {
			out = append(out, s)
		}
	}
	slices.SortStableFunc(out, func(a, b Sent) int { return a.SentAt.Compare(b.SentAt) })
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
