package cmd

import (
	"errors"
	"fmt"

	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/wire"
)

// Exit codes: the same in --help, the README and the JSON verdicts (package
// wire holds them, for every front end).
const (
	ExitOK          = wire.ExitOK
	ExitError       = wire.ExitError
	ExitUsage       = wire.ExitUsage
	ExitNotFound    = wire.ExitNotFound
	ExitNotReady    = wire.ExitNotReady
	ExitUnconfirmed = wire.ExitUnconfirmed
	ExitPartial     = wire.ExitPartial
	ExitTimeout     = wire.ExitTimeout
	ExitClaimed     = wire.ExitClaimed
	ExitDeferred    = wire.ExitDeferred
)

const exitCodesHelp = `Exit codes:
  0  delivered (every target, for a broadcast)
  1  anything else: tmux missing, server unreachable, ...
  2  bad usage or an invalid name
  3  no such target (no agent session of that exact name, or none in the team), request or message
  4  not ready in time: busy, a dialog or a person's draft the whole time
  5  typed but not confirmed as submitted
  6  a broadcast in which some targets failed, or a deliver in which some messages failed
  7  wait: no matching message arrived in time
  8  claim: the request was already claimed by another agent, or expired
  9  shutdown --wait: the agent deferred its shutdown (accept=false)`

// spawnExitHelp and killExitHelp are the exit codes of commands that type
// nothing: none of a delivery's.
const spawnExitHelp = `Exit codes:
  0  spawned
  1  anything else: the session exists already, tmux missing, server unreachable, ...
  2  bad usage or an invalid name`

const killExitHelp = `Exit codes:
  0  killed: every process it collected ended, and the session was removed
  1  anything else: a process survived (it is named), tmux missing, server unreachable, ...
  2  bad usage or an invalid name
  3  no agent session of that exact name`

// exitCode maps an error to its exit code: the command line's own errors
// here, the engine's in package wire.
func exitCode(err error) int {
	var ee exitError
	var ue usageError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &ue):
		return ExitUsage
	case errors.Is(err, errTimedOut):
		return ExitTimeout
	}
	return wire.ErrorCode(err)
}

// outcomeCode is the exit code of one target's outcome.
func outcomeCode(o dispatch.Outcome) int { return wire.OutcomeCode(o) }

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

// writeJSON prints v as one indented JSON document (wire.Encode).
func writeJSON(f *Factory, v any) {
	if err := wire.Encode(f.IO.Out, v); err != nil {
		fmt.Fprintf(f.IO.ErrOut, "agentmsg: writing JSON: %v\n", err)
	}
}
