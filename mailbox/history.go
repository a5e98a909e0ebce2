package mailbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/agentmsg/agentmsg/message"
)

// ErrNoMessage is returned by History for an id the inbox does not hold.
var ErrNoMessage = errors.New("no such message")

// History returns message id as it was appended to agent's inbox, with
// the delivery record it was appended with, and every later delivery
// update for it in append order. Unlike Read it does not fold the updates
// in. Compaction folds them, so after one the envelope carries the latest
// record and the updates before the compaction are gone.
func (s *Store) History(team, agent string, id message.ID) (Envelope, []Delivery, error) {
	b, err := s.Box(team, agent)
	if err != nil {
		return Envelope{}, nil, err
	}
	data, err := os.ReadFile(b.path())
	if errors.Is(err, os.ErrNotExist) {
		return Envelope{}, nil, fmt.Errorf("%w: %s in the inbox of %s", ErrNoMessage, id, agent)
	}
	if err != nil {
		return Envelope{}, nil, fmt.Errorf("reading inbox: %w", err)
	}
	var (
		env     Envelope
		found   bool
		updates []Delivery
	)
	for _, line := range completeLines(data) {
		if !bytes.Contains(line, []byte(id)) {
			continue // cheap: most lines are about other messages
		}
		var r record
		if json.Unmarshal(line, &r) != nil {
			continue
		}
		switch {
		case r.Gen != "":
		case r.Update == id && r.Delivery != nil:
			updates = append(updates, *r.Delivery)
		case r.Update == "" && r.ID == id && !found:
			env, found = r.Envelope, true
		}
	}
	if !found {
		return Envelope{}, nil, fmt.Errorf("%w: %s in the inbox of %s", ErrNoMessage, id, agent)
	}
	return env, updates, nil
}
