package cmd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/agentmsg/agentmsg/config"
	"github.com/agentmsg/agentmsg/delivery"
	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
	"github.com/agentmsg/agentmsg/service"
	"github.com/agentmsg/agentmsg/target"
)

// Exit codes: the same in --help, the README and the JSON verdicts.
const (
	ExitOK          = 0 // delivered
	ExitError       = 1 // anything else: tmux missing, server unreachable, ...
	ExitUsage       = 2 // bad usage or an invalid name
	ExitNotFound    = 3 // no such target
	ExitNotReady    = 4 // busy, dialog or a person's draft the whole ready timeout
	ExitUnconfirmed = 5 // typed but not confirmed as submitted
	ExitPartial     = 6 // a broadcast in which some targets failed
	ExitTimeout     = 7 // wait: no matching message in time
	ExitClaimed     = 8 // claim: the request was already claimed, or expired
	ExitDeferred    = 9 // shutdown --wait: the agent answered, but deferred (accept=false)
)

const exitCodesHelp = `Exit codes:
  0  delivered (every target, for a broadcast)
  1  anything else: tmux missing, server unreachable, ...
  2  bad usage or an invalid name
  3  no such target (no agent session of that exact name, or none in the team), request or message
  4  not ready in time: busy, a dialog or a person's draft the whole time
  5  typed but not confirmed as submitted
  6  a broadcast in which some targets failed
  7  wait: no matching message arrived in time
  8  claim: the request was already claimed by another agent, or expired
  9  shutdown --wait: the agent deferred its shutdown (accept=false)`

// exitCode maps an error to its exit code; the one place that does.
func exitCode(err error) int {
	var ee exitError
	var ue usageError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &ue), errors.Is(err, target.ErrInvalid), errors.Is(err, config.ErrInvalid),
		errors.Is(err, dispatch.ErrEmptyMessage), errors.Is(err, dispatch.ErrSelf), errors.Is(err, mailbox.ErrBadName),
		errors.Is(err, mailbox.ErrProtocol), errors.Is(err, service.ErrNoCallerTeam):
		return ExitUsage
	case errors.Is(err, dispatch.ErrTargetNotFound), errors.Is(err, dispatch.ErrNoTargets), errors.Is(err, errNoTeam),
		errors.Is(err, mailbox.ErrNoRequest), errors.Is(err, mailbox.ErrNoMessage):
		return ExitNotFound
	case errors.Is(err, errTimedOut):
		return ExitTimeout
	case errors.Is(err, mailbox.ErrAlreadyClaimed), errors.Is(err, mailbox.ErrExpired):
		return ExitClaimed
	case errors.Is(err, delivery.ErrNotReady):
		return ExitNotReady
	case errors.Is(err, delivery.ErrUnconfirmed):
		return ExitUnconfirmed
	}
	return ExitError
}

// outcomeCode is the exit code of one target's outcome.
func outcomeCode(o dispatch.Outcome) int {
	if o.OK() {
		return ExitOK
	}
	if o.Verdict == dispatch.NotFound {
		return ExitNotFound
	}
	return exitCode(o.Err)
}

// reportError prints an error once (stderr for people; with --json also a
// JSON document on stdout) and returns the exit code.
func reportError(f *Factory, err error) int {
	code := exitCode(err)
	if err == nil || errors.Is(err, errSilent) {
		return code
	}
	fmt.Fprintf(f.IO.ErrOut, "agentmsg: %s\n", showText(errText(err)))
	if f.JSON {
		writeJSON(f, struct {
			Error    string `json:"error"`
			ExitCode int    `json:"exit_code"`
		}{errText(err), code})
	}
	return code
}

// writeJSON prints v as one indented JSON document, escaped by jsonSafe.
func writeJSON(f *Factory, v any) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		fmt.Fprintf(f.IO.ErrOut, "agentmsg: writing JSON: %v\n", err)
		return
	}
	f.IO.Out.Write(jsonSafe(b.Bytes()))
}

// jsonSafe escapes, as \uXXXX, what encoding/json leaves raw although a
// terminal would act on it: DEL, C1 controls and bidirectional controls
// (message.Unsafe). In JSON these can only be inside strings, so the
// document means the same; its own newlines stay.
func jsonSafe(doc []byte) []byte {
	if !bytes.ContainsFunc(doc, func(r rune) bool { return r >= 0x7f && message.Unsafe(r) }) {
		return doc
	}
	out := make([]byte, 0, len(doc)+32)
	for _, r := range string(doc) {
		if r >= 0x7f && message.Unsafe(r) {
			out = fmt.Appendf(out, `\u%04x`, r)
			continue
		}
		out = utf8.AppendRune(out, r)
	}
	return out
}
