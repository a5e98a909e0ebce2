package cmd

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentmsg/agentmsg/courier"
	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
)

// envelopeFlags are the typed-message flags of send and broadcast.
type envelopeFlags struct {
	typ  string
	meta []string
}

func (e *envelopeFlags) register(c *cobra.Command) {
	c.Flags().StringVar(&e.typ, "type", "text", "message type: "+strings.Join(typeNames(), ", "))
	c.Flags().StringArrayVar(&e.meta, "meta", nil, "metadata KEY=VALUE (repeatable); see the rules per type below")
}

func typeNames() []string { return mailbox.TypeNames() }

const typesHelp = `Message types (--type; the agent sees "[type] key=value ... text"):
  text               plain text (the default)
  status             a status update; needs --meta state=idle|working|blocked|pr_pending|complete|failed
  shutdown-request   lead to agent: finish up and stop
  shutdown-response  agent to lead; needs --meta accept=true|false (false: defer while finishing)
  plan               agent to lead: a plan for approval
  plan-approval      lead to agent; needs --meta approve=true|false
  task               lead to agent: a task assignment`

// build checks the flags against the protocol (mailbox.Protocol) and
// returns an envelope without id, sender or content. Metadata is typed
// with the message, so its keys and values are cleaned like it, each to
// one line (message.CleanLine), before they are checked and stored.
func (e *envelopeFlags) build() (mailbox.Envelope, error) {
	var meta map[string]string
	for _, kv := range e.meta {
		k, v, ok := strings.Cut(kv, "=")
		k, v = message.CleanLine(k), message.CleanLine(v)
		if !ok || k == "" {
			return mailbox.Envelope{}, usagef("--meta %q: want KEY=VALUE", kv)
		}
		if meta == nil {
			meta = map[string]string{}
		}
		meta[k] = v
	}
	env, err := mailbox.Check(e.typ, meta)
	if err != nil {
		return env, usageError{err}
	}
	return env, nil
}

// courier joins the mailbox to a dispatcher.
func (f *Factory) courier(d *dispatch.Dispatcher) (*courier.Courier, error) {
	store, err := f.Mailbox()
	if err != nil {
		return nil, err
	}
	cfg, err := f.Config()
	if err != nil {
		return nil, err
	}
	return &courier.Courier{Store: store, Dispatch: d, Locks: f.locks(),
		Keep: mailbox.Retention{MaxCount: cfg.Settings.KeepCount, MaxAge: cfg.Settings.KeepAge}}, nil
}

// resultCode is the exit code of a courier result: deferred and recorded
// messages are safe, so 0.
func resultCode(r courier.Result) int {
	switch {
	case r.OK():
		return ExitOK
	case r.RecordErr != nil && (r.Outcome.OK() || r.Verdict == courier.Deferred):
		// The delivery went well; its record did not.
		return ExitError
	}
	return outcomeCode(r.Outcome)
}

// resultJSON is outcomeJSON plus what the mailbox recorded.
type resultJSON struct {
	outcomeJSON
	Stored string `json:"stored,omitempty"` // the mailbox's delivery state
}

func toResultJSON(r courier.Result) resultJSON {
	j := resultJSON{outcomeJSON: toJSON(r.Outcome), Stored: string(r.State)}
	j.ExitCode = resultCode(r)
	return j
}

func describeResult(r courier.Result) string {
	if r.RecordErr != nil && r.Outcome.OK() {
		return fmt.Sprintf("%s; but %v", describe(r.Outcome), r.RecordErr)
	}
	switch r.Verdict {
	case courier.Deferred:
		if r.Err != nil { // interrupted, or another sender held the pane
			return fmt.Sprintf("deferred for %s as %s: %v; kept in its inbox (agentmsg deliver types it)", r.Target, r.ID, r.Err)
		}
		return fmt.Sprintf("deferred for %s as %s: kept in its inbox until it is ready (agentmsg deliver types it then)", r.Target, r.ID)
	case courier.Recorded:
		return fmt.Sprintf("recorded in %s's inbox as %s (not typed)", r.Target, r.ID)
	case courier.Skipped:
		return fmt.Sprintf("skipped %s for %s, not typed: %v (it stays in the inbox)", r.ID, r.Target, r.Err)
	}
	return describe(r.Outcome)
}
