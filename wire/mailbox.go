package wire

import (
	"fmt"
	"strings"
	"time"

	"github.com/agentmsg/agentmsg/hosts"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
	"github.com/agentmsg/agentmsg/service"
)

// The documents of the mailbox: log, log --id, wait, and a person's
// settling of a message (handled, retry).

// Log is the messages kept in the inboxes, oldest first (log).
type Log struct {
	Messages []service.LogEntry `json:"messages"`
}

// History is one message's delivery history in every inbox that holds
// it (log --id).
type History struct {
	ID     message.ID            `json:"id"`
	Copies []service.HistoryCopy `json:"copies"`
	// Remote is a message this host sent to another: the state that host
	// last reported of each copy.
	Remote []hosts.Sent `json:"remote,omitempty" jsonschema:"sent from here to another host: the state that host last reported"`
}

// FilterText says what a filter selects, for people: "from lead, of type
// claim"; "" for every message.
func FilterText(fl service.Filter) string {
	var parts []string
	if fl.Sender != "" {
		parts = append(parts, "from "+fl.Sender)
	}
	if fl.Type != "" {
		parts = append(parts, "of type "+string(fl.Type))
	}
	if fl.ReplyTo != "" {
		parts = append(parts, "replying to "+string(fl.ReplyTo))
	}
	return strings.Join(parts, ", ")
}

// WaitTimedOut says that no message fl selects came within timeout
// (wait's ExitTimeout).
func WaitTimedOut(fl service.Filter, timeout time.Duration) string {
	what := FilterText(fl)
	if what != "" {
		what = " " + what
	}
	return fmt.Sprintf("no message%s arrived within %s", what, timeout)
}

// Settled is a message's record after a person settled it: handled (never
// typed), or sent back to deliver (retry), with the pass that followed.
type Settled struct {
	ID       string           `json:"id"`
	Team     string           `json:"team"`
	Agent    string           `json:"agent"`
	Delivery mailbox.Delivery `json:"delivery"`
	Pass     *Deliver         `json:"pass,omitempty"`
}
