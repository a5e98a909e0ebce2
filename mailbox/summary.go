package mailbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/agentmsg/agentmsg/message"
)

// Summary is what a send needs to know of an inbox before it types: how
// many messages it holds, the oldest one's time, and how many are in each
// delivery state (the latest update of each). Read has the same facts, and
// decodes every message to get them.
type Summary struct {
	Messages int
	Oldest   time.Time // the first message's timestamp; zero when empty
	// OldestSeen is the timestamp of the first message the agent has seen
	// (DeliveryState.Seen): the oldest one retention by age may drop. Zero
	// when there is none.
	OldestSeen time.Time
	States     map[DeliveryState]int
}

// OldestSeen is the timestamp of the batch's first message the agent has
// seen (DeliveryState.Seen), as Summary.OldestSeen; zero when none.
func (b Batch) OldestSeen() time.Time {
	for _, e := range b.Envelopes {
		if e.Delivery != nil && e.Delivery.State.Seen() {
			return e.Timestamp
		}
	}
	return time.Time{}
}

// Summarize reads agent's inbox for its Summary without decoding the
// messages: a send reads the whole inbox to keep older messages first, and
// decoding an inbox at its default bound (1,000 messages and their
// updates) took 5 to 6 ms of every send (json.Unmarshal, about 6 µs a
// message). The lines are agentmsg's own (encoding/json of Envelope and of
// its updates), so a message's id comes first and its delivery last, and no
// text can hold an unescaped quote; a line of any other shape is decoded.
func (s *Store) Summarize(team, agent string) (Summary, error) {
	b, err := s.Box(team, agent)
	if err != nil {
		return Summary{}, err
	}
	data, err := os.ReadFile(b.path())
	if errors.Is(err, os.ErrNotExist) {
		return Summary{States: map[DeliveryState]int{}}, nil
	}
	if err != nil {
		return Summary{}, fmt.Errorf("opening inbox: %w", err)
	}
	return summarize(data), nil
}

var (
	idPrefix       = []byte(`{"id":"`)
	updatePrefix   = []byte(`{"update":"`)
	deliveryKey    = []byte(`"delivery":{"state":"`)
	timestampKey   = []byte(`"timestamp":"`)
	errOtherRecord = errors.New("not a message or update line")
)

// summarize is parse's account of states, counts and the oldest time, from
// the raw lines (see Summarize).
func summarize(data []byte) Summary {
	var states []DeliveryState // one per message line, as parse's entries
	var lines [][]byte         // each message's line, for its time
	var times []time.Time      // each message's time, when already known
	latest := map[message.ID]int{}
	for _, line := range completeLines(data) { // as parse: a line still being written is left
		id, st, isUpdate, at, err := quickRecord(line, len(states) == 0)
		if err != nil {
			if id, st, isUpdate, at, err = slowRecord(line); err != nil {
				continue // the header, or a corrupt line
			}
		}
		if isUpdate {
			if i, ok := latest[id]; ok {
				states[i] = st // latest wins; an unknown id is ignored
			}
			continue
		}
		latest[id] = len(states)
		states = append(states, st)
		lines = append(lines, line)
		times = append(times, at)
	}
	sum := Summary{Messages: len(states), States: map[DeliveryState]int{}}
	for _, st := range states {
		sum.States[st]++
	}
	if len(states) > 0 {
		sum.Oldest = times[0]
	}
	for i, st := range states {
		if !st.Seen() {
			continue
		}
		if sum.OldestSeen = times[i]; sum.OldestSeen.IsZero() {
			_, _, _, sum.OldestSeen, _ = quickRecord(lines[i], true)
		}
		break
	}
	return sum
}

// quickRecord reads a line of agentmsg's own shape without decoding it;
// wantTime asks for the message's timestamp too.
func quickRecord(line []byte, wantTime bool) (id message.ID, st DeliveryState, isUpdate bool, at time.Time, err error) {
	var rest []byte
	switch {
	case bytes.HasPrefix(line, updatePrefix):
		rest, isUpdate = line[len(updatePrefix):], true
	case bytes.HasPrefix(line, idPrefix):
		rest = line[len(idPrefix):]
	default:
		return "", "", false, time.Time{}, errOtherRecord
	}
	end := bytes.IndexByte(rest, '"')
	if end < 0 || !message.Valid(string(rest[:end])) {
		return "", "", false, time.Time{}, errOtherRecord
	}
	id = message.ID(rest[:end])
	// The delivery is the last field, and its key occurs once: a string
	// cannot hold it unescaped. More than once means another shape.
	if n := bytes.Count(line, deliveryKey); n > 1 || n == 0 && isUpdate {
		return "", "", false, time.Time{}, errOtherRecord
	} else if n == 1 {
		v := line[bytes.Index(line, deliveryKey)+len(deliveryKey):]
		q := bytes.IndexByte(v, '"')
		if q < 0 {
			return "", "", false, time.Time{}, errOtherRecord
		}
		st = DeliveryState(v[:q])
	}
	if !whole(line, isUpdate) {
		return "", "", false, time.Time{}, errOtherRecord // decoded: corrupt
	}
	if wantTime && !isUpdate {
		i := bytes.Index(line, timestampKey)
		if i < 0 || bytes.Count(line, timestampKey) != 1 {
			return "", "", false, time.Time{}, errOtherRecord
		}
		v := line[i+len(timestampKey):]
		q := bytes.IndexByte(v, '"')
		if q < 0 {
			return "", "", false, time.Time{}, errOtherRecord
		}
		if at, err = time.Parse(time.RFC3339Nano, string(v[:q])); err != nil {
			return "", "", false, time.Time{}, errOtherRecord
		}
	}
	return id, st, isUpdate, at, nil
}

// whole reports whether a line of agentmsg's own shape was written to its
// end, not cut short by a dead writer (the next append's newline ends such
// a fragment, and parse finds it corrupt). Only the end needs checking:
// a message's timestamp follows all of its free text and is followed by
// nothing or its delivery, and in a delivery last_verdict is the one free
// text, so only a delivery holding one is checked as JSON. (json.Valid on
// every line doubled the time of Summarize.)
func whole(line []byte, isUpdate bool) bool {
	if !bytes.HasSuffix(line, []byte("}")) {
		return false
	}
	k := bytes.Index(line, deliveryKey) // at most once (quickRecord)
	if !isUpdate {
		i := bytes.Index(line, timestampKey)
		if i < 0 {
			return false
		}
		v := line[i+len(timestampKey):]
		q := bytes.IndexByte(v, '"')
		if q < 0 {
			return false
		}
		if after := v[q+1:]; k < 0 || !bytes.HasPrefix(after, []byte(`,"delivery":{`)) {
			return k < 0 && string(after) == "}"
		}
	}
	obj := line[k+len(`"delivery":`) : len(line)-1]
	if bytes.Contains(obj, []byte(`"last_verdict":"`)) {
		return json.Valid(obj)
	}
	return bytes.IndexByte(obj, '}') == len(obj)-1
}

// slowRecord decodes a line as parse does (decodeLine).
func slowRecord(line []byte) (id message.ID, st DeliveryState, isUpdate bool, at time.Time, err error) {
	if len(bytes.TrimSpace(line)) == 0 {
		return "", "", false, time.Time{}, errOtherRecord
	}
	r, err := decodeLine(line)
	switch {
	case err != nil:
		return "", "", false, time.Time{}, err
	case r.Gen != "":
		return "", "", false, time.Time{}, errOtherRecord
	case r.Update != "":
		return r.Update, r.Delivery.State, true, time.Time{}, nil
	}
	if r.Delivery != nil {
		st = r.Delivery.State
	}
	return r.ID, st, false, r.Timestamp, nil
}
