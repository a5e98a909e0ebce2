package hosts

import (
	"os"
	"strings"

	"github.com/agentmsg/agentmsg/target"
)

// DefaultName is this machine's host name as a host name: its first label,
// lower-cased, with anything else a subject cannot hold made '-'.
func DefaultName() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "localhost"
	}
	h, _, _ = strings.Cut(strings.ToLower(h), ".")
	h = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '-'
	}, h)
	h = strings.TrimLeft(h, "-_")
	if len(h) > 63 {
		h = h[:63]
	}
	if target.CheckHost(h) != nil {
		return "localhost"
	}
	return h
}

// Kinds of packet.
const (
	KindMessage = "msg" // a message to an agent of the receiving host
	KindEvent   = "ev"  // a state change of a message the receiving host sent
)

// subjectRoot begins every subject of the bus.
const subjectRoot = "agentmsg"

// subject is where a packet of kind from host from to host to travels.
func subject(kind, to, from string) string {
	return subjectRoot + "." + kind + "." + to + "." + from
}

// parseSubject is subject's inverse.
func parseSubject(s string) (kind, to, from string, ok bool) {
	parts := strings.Split(s, ".")
	if len(parts) != 4 || parts[0] != subjectRoot {
		return "", "", "", false
	}
	return parts[1], parts[2], parts[3], true
}

// streamName is host's stream on the bus.
func streamName(host string) string { return "AGENTMSG_" + host }

// presenceBucket is the key-value bucket of every host's presence.
const presenceBucket = "agentmsg_hosts"

// outboxStream is the embedded server's stream of what waits to go out.
const outboxStream = "AGENTMSG_OUTBOX"

// outboxSubject is where a packet for host to waits in the outbox.
func outboxSubject(kind, to string) string { return "outbox." + kind + "." + to }
