package courier

import "github.com/agentmsg/agentmsg/delivery"

// BroadcastVerdict is a broadcast's one outcome, the same for every front
// end (the CLI's exit code and --json, the MCP tool's answer).
type BroadcastVerdict string

const (
	// Delivered: every target took the message (submitted or queued), or
	// it was only to be recorded and was.
	AllDelivered BroadcastVerdict = "delivered"
	// SomeDeferred: nothing failed, but some targets were not ready and
	// keep the message in their inbox until a deliver types it. Safe, and
	// not yet delivered.
	SomeDeferred BroadcastVerdict = "deferred"
	// Partial: some targets failed, others took or keep the message.
	Partial BroadcastVerdict = "partial"
	// NoneTook: every target failed.
	NoneTook BroadcastVerdict = "failed"
)

// Summary sorts a broadcast's results by what became of the message.
type Summary struct {
	Verdict                     BroadcastVerdict
	Delivered, Deferred, Failed []Result
}

// OK reports whether the broadcast went as well as it can for now: nothing
// failed (some may still be deferred).
func (s Summary) OK() bool { return len(s.Failed) == 0 }

// Summarize gives the one verdict of a broadcast's results.
func Summarize(results []Result) Summary {
	var s Summary
	for _, r := range results {
		switch {
		case r.Verdict == delivery.Deferred && r.RecordErr == nil:
			s.Deferred = append(s.Deferred, r)
		case r.OK():
			s.Delivered = append(s.Delivered, r)
		default:
			s.Failed = append(s.Failed, r)
		}
	}
	switch {
	case len(s.Failed) == 0 && len(s.Deferred) == 0:
		s.Verdict = AllDelivered
	case len(s.Failed) == 0:
		s.Verdict = SomeDeferred
	case len(s.Delivered) == 0 && len(s.Deferred) == 0:
		s.Verdict = NoneTook
	default:
		s.Verdict = Partial
	}
	return s
}
