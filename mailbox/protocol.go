package mailbox

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// ErrProtocol is wrapped by Check's errors: a type, or its metadata, that
// the protocol does not allow.
var ErrProtocol = errors.New("not a valid message")

// statusStates are the states an agent reports, in a status message and on
// its team's board: the one list of them.
var statusStates = []string{"idle", "working", "blocked", "pr_pending", "complete", "failed"}

// StatusStates lists the states an agent may report.
func StatusStates() []string { return slices.Clone(statusStates) }

// Protocol is the metadata each typed message needs, the seeds' table of
// typed messages: a receiver dispatches on these values, so they must be
// there and be one of the allowed ones (nil: any value).
var Protocol = map[Type]map[string][]string{
	TypeText:             nil,
	TypeStatus:           {"state": statusStates},
	TypeShutdownRequest:  nil,
	TypeShutdownResponse: {"accept": {"true", "false"}},
	TypePlan:             nil,
	TypePlanApproval:     {"approve": {"true", "false"}},
	TypeTask:             nil,
}

// TypeNames lists the types a sender may choose, sorted.
func TypeNames() []string {
	names := make([]string, 0, len(Protocol))
	for t := range Protocol {
		names = append(names, string(t))
	}
	sort.Strings(names)
	return names
}

// Check validates a message type ("" is text) and its metadata against
// Protocol, and returns them as an envelope to fill in.
func Check(typ string, meta map[string]string) (Envelope, error) {
	if typ == "" {
		typ = string(TypeText)
	}
	rule, ok := Protocol[Type(typ)]
	if !ok {
		return Envelope{}, fmt.Errorf("%w: type %q: want one of %s", ErrProtocol, typ, strings.Join(TypeNames(), ", "))
	}
	for k := range meta {
		if k == "" || strings.ContainsAny(k, " \t\n=") {
			return Envelope{}, fmt.Errorf("%w: metadata key %q: want a word without spaces or =", ErrProtocol, k)
		}
	}
	keys := make([]string, 0, len(rule))
	for k := range rule {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v, ok := meta[k]
		if !ok {
			return Envelope{}, fmt.Errorf("%w: a %s message needs metadata %s (one of %s)", ErrProtocol, typ, k, strings.Join(rule[k], ", "))
		}
		if rule[k] != nil && !slices.Contains(rule[k], v) {
			return Envelope{}, fmt.Errorf("%w: metadata %s=%q for a %s message: want one of %s", ErrProtocol, k, v, typ, strings.Join(rule[k], ", "))
		}
	}
	env := Envelope{Type: Type(typ)}
	if len(meta) > 0 {
		env.Metadata = make(map[string]string, len(meta))
		for k, v := range meta {
			env.Metadata[k] = v
		}
	}
	return env, nil
}
