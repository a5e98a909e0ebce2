// Package wire is the shape of what agentmsg reports to programs: the JSON
// documents of --json, of the daemon's API and of MCP results where they
// carry verdicts, and the exit codes that go with them. Every front end
// renders results through it, so that a program reads the same fields and
// verdicts whichever way it asked.
package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
	"unicode/utf8"

	"github.com/agentmsg/agentmsg/config"
	"github.com/agentmsg/agentmsg/courier"
	"github.com/agentmsg/agentmsg/delivery"
	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
	"github.com/agentmsg/agentmsg/service"
	"github.com/agentmsg/agentmsg/target"
)

// Exit codes: the same in --help, the README, the JSON verdicts and the
// daemon's exit_code.
const (
	ExitOK          = 0 // delivered
	ExitError       = 1 // anything else: tmux missing, server unreachable, ...
	ExitUsage       = 2 // bad usage or an invalid name
	ExitNotFound    = 3 // no such target
	ExitNotReady    = 4 // busy, dialog or a person's draft the whole ready timeout
	ExitUnconfirmed = 5 // typed but not confirmed as submitted
	ExitPartial     = 6 // a broadcast in which some targets failed, or a deliver in which some messages failed
	ExitTimeout     = 7 // wait: no matching message in time
	ExitClaimed     = 8 // claim: the request was already claimed, or expired
	ExitDeferred    = 9 // shutdown --wait: the agent answered, but deferred (accept=false)
)

// ErrorCode is the exit code of an error from the engine (front ends add
// their own errors first): ExitError for anything it does not know.
func ErrorCode(err error) int {
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, target.ErrInvalid), errors.Is(err, config.ErrInvalid),
		errors.Is(err, dispatch.ErrEmptyMessage), errors.Is(err, dispatch.ErrSelf), errors.Is(err, mailbox.ErrBadName),
		errors.Is(err, mailbox.ErrProtocol), errors.Is(err, service.ErrNoCallerTeam):
		return ExitUsage
	case errors.Is(err, dispatch.ErrTargetNotFound), errors.Is(err, dispatch.ErrNoTargets), errors.Is(err, service.ErrNoTeam), errors.Is(err, service.ErrUnknownHost),
		errors.Is(err, mailbox.ErrNoRequest), errors.Is(err, mailbox.ErrNoMessage):
		return ExitNotFound
	case errors.Is(err, mailbox.ErrAlreadyClaimed), errors.Is(err, mailbox.ErrExpired):
		return ExitClaimed
	case errors.Is(err, delivery.ErrNotReady):
		return ExitNotReady
	case errors.Is(err, delivery.ErrUnconfirmed):
		return ExitUnconfirmed
	}
	return ExitError
}

// OutcomeCode is the exit code of one target's outcome.
func OutcomeCode(o dispatch.Outcome) int {
	if o.OK() {
		return ExitOK
	}
	if o.Verdict == delivery.NotFound {
		return ExitNotFound
	}
	return ErrorCode(o.Err)
}

// ResultCode is the exit code of a courier result: deferred and recorded
// messages are safe, so 0.
func ResultCode(r courier.Result) int {
	switch {
	case r.OK():
		return ExitOK
	case r.RecordErr != nil && (r.Outcome.OK() || r.Verdict == delivery.Deferred):
		// The delivery went well; its record did not.
		return ExitError
	}
	return OutcomeCode(r.Outcome)
}

// Words says an error for the reader of a document: the command line adds
// the flag that helps, the daemon the engine's words alone.
type Words func(error) string

// Plain is the engine's own words.
func Plain(err error) string { return err.Error() }

// Outcome is one target's verdict.
type Outcome struct {
	// ID is the message's; send and broadcast also print it at the top.
	ID        string           `json:"id,omitempty"`
	Team      string           `json:"team"`
	Agent     string           `json:"agent"`
	Session   string           `json:"session"`
	Pane      string           `json:"pane,omitempty"`
	Verdict   delivery.Verdict `json:"verdict" jsonschema:"what became of it for this target"`
	State     delivery.State   `json:"state,omitempty" jsonschema:"the agent's screen when the delivery ended"`
	Presses   int              `json:"presses" jsonschema:"how many times submit was pressed"`
	Typings   int              `json:"typings"`
	ElapsedMS float64          `json:"elapsed_ms"`
	ExitCode  int              `json:"exit_code"`
	Error     string           `json:"error,omitempty"`
	Profile   string           `json:"profile,omitempty"` // the agent CLI the screen was read as
	Pointer   bool             `json:"pointer,omitempty"` // typed as a pointer to agentmsg read
	// WhileBusyIgnored says why --while-busy did not apply to the agent.
	WhileBusyIgnored string `json:"while_busy_ignored,omitempty"`
	// Phases says where the time went, in milliseconds.
	Phases *Phases `json:"phases_ms,omitempty"`
	// Stored is the mailbox's delivery state, where it recorded the message.
	Stored mailbox.DeliveryState `json:"stored,omitempty" jsonschema:"the state the inbox records for the message now"`
	// Reason says in one word why it was not taken, or waits.
	Reason string `json:"reason,omitempty" enum:"Reason" jsonschema:"why it was not taken, or waits, in one word"`
	// Older are the older messages to the same agent that a send tried
	// first, oldest first (their delivery is not this message's).
	Older []Outcome `json:"older,omitempty"`
	// Host is the agent's host, when not this one (send --host).
	Host string `json:"host,omitempty"`
}

// Phases are where a delivery's time went, in milliseconds.
type Phases struct {
	Lock    float64 `json:"lock"`
	Ready   float64 `json:"ready"`
	Type    float64 `json:"type"`
	Settle  float64 `json:"settle"`
	Confirm float64 `json:"confirm"`
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// NewOutcome is o as a document.
func NewOutcome(o dispatch.Outcome, words Words) Outcome {
	j := Outcome{
		ID:   string(o.ID),
		Team: o.Target.Team, Agent: o.Target.Agent(), Session: o.Target.Session, Pane: o.Pane,
		Verdict: o.Verdict, State: o.State, Presses: o.Presses, Typings: o.Typings,
		ElapsedMS: ms(o.Elapsed), ExitCode: OutcomeCode(o),
		Profile: o.Profile, Pointer: o.Pointer, WhileBusyIgnored: o.WhileBusyIgnored,
	}
	if p := o.Phases; p != (delivery.Phases{}) {
		j.Phases = &Phases{ms(p.Lock), ms(p.Ready), ms(p.Type), ms(p.Settle), ms(p.Confirm)}
	}
	if o.Err != nil {
		j.Error = words(o.Err)
	}
	return j
}

// NewResult is r as a document: its outcome and what the mailbox recorded.
func NewResult(r courier.Result, words Words) Outcome {
	j := NewOutcome(r.Outcome, words)
	j.Stored, j.Reason, j.Host = r.State, r.Reason, r.Host
	if j.Reason == "" && !r.OK() {
		j.Reason = courier.Reason(r.Outcome)
	}
	j.ExitCode = ResultCode(r)
	for _, o := range r.Older {
		j.Older = append(j.Older, NewResult(o, words))
	}
	return j
}

// Send is the report of one message to one agent (send, reply).
type Send struct {
	ID   string `json:"id,omitempty" jsonschema:"the message's id; absent when nothing was recorded (no such agent)"`
	From string `json:"from"`
	Outcome
	// Replayed: a retry of a message sent before under the id its app
	// chose; the verdict is what its inbox records, nothing was sent again.
	Replayed bool `json:"replayed,omitempty" jsonschema:"this id was sent before with this message: the answer is what its inbox records, and nothing was sent again"`
}

// NewSend is res as a document. A message to no such agent, never
// recorded, has no id: nothing could be looked up by it.
func NewSend(res service.SendResult, words Words) Send {
	doc := Send{ID: string(res.Result.ID), From: res.From, Outcome: NewResult(res.Result, words), Replayed: res.Replayed}
	if res.Result.State == "" && res.Host == "" && res.Result.Verdict == delivery.NotFound {
		doc.ID, doc.Outcome.ID = "", ""
	}
	return doc
}

// Broadcast is the report of one message to a team, or to every agent.
type Broadcast struct {
	ID        string                   `json:"id"`
	From      string                   `json:"from"`
	Team      string                   `json:"team,omitempty"`
	All       bool                     `json:"all"`
	Verdict   courier.BroadcastVerdict `json:"verdict" jsonschema:"one verdict over every target"`
	Delivered int                      `json:"delivered"`
	Deferred  int                      `json:"deferred"`
	Failed    int                      `json:"failed"`
	ExitCode  int                      `json:"exit_code"`
	Results   []Outcome                `json:"results"`
}

// NewBroadcast is res, a broadcast to team (or all), as a document.
func NewBroadcast(res service.BroadcastResult, team string, all bool, words Words) Broadcast {
	code := ExitOK
	if !res.OK() {
		code = ExitPartial
	}
	out := make([]Outcome, len(res.Results))
	for i, r := range res.Results {
		out[i] = NewResult(r, words)
	}
	return Broadcast{ID: string(res.ID), From: res.From, Team: team, All: all, Verdict: res.Verdict,
		Delivered: len(res.Delivered), Deferred: len(res.Deferred), Failed: len(res.Failed), ExitCode: code, Results: out}
}

// Deliver is the report of deliver passes: every message tried.
type Deliver struct {
	Delivered int       `json:"delivered"` // submitted or queued by the agent
	Tried     int       `json:"tried"`     // messages tried, deferrals included
	Results   []Outcome `json:"results"`
}

// NewDeliver is what deliver passes typed, as a document.
func NewDeliver(all []courier.Typing, words Words) Deliver {
	out := make([]Outcome, len(all))
	taken := 0
	for i, t := range all {
		out[i] = NewResult(t.Result, words)
		if t.Outcome.OK() {
			taken++
		}
	}
	return Deliver{Delivered: taken, Tried: len(all), Results: out}
}

// Error is the document of a failed call.
type Error struct {
	Error    string `json:"error" jsonschema:"what went wrong, in a sentence a person can act on"`
	ExitCode int    `json:"exit_code" jsonschema:"the CLI's exit code for the same outcome (docs/exit-codes.md)"`
	// Code and Field are for a program: what went wrong in a stable
	// word, and the field of the request it is about.
	Code  Code   `json:"code" jsonschema:"what went wrong, in a stable word"`
	Field string `json:"field,omitempty" jsonschema:"the field of the body or query it is about"`
}

// Encode writes v as one indented JSON document, made safe for a
// terminal (Safe).
func Encode(w io.Writer, v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(Safe(b.Bytes()))
	return err
}

// Safe escapes, as \uXXXX, what encoding/json leaves raw although a
// terminal would act on it: DEL, C1 controls and bidirectional controls
// (message.Unsafe). In JSON these can only be inside strings, so the
// document means the same; its own newlines stay.
func Safe(doc []byte) []byte {
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

// Agent is one agent on a tmux server with its screen's state (list).
type Agent struct {
	Team    string         `json:"team"`
	Agent   string         `json:"agent"`
	Session string         `json:"session"`
	Pane    string         `json:"pane"`
	Command string         `json:"command"`
	PID     int            `json:"pid"`
	InMode  bool           `json:"in_mode"`
	State   delivery.State `json:"state" jsonschema:"its screen, as its profile reads it"`
	Detail  string         `json:"detail,omitempty"`
	Profile string         `json:"profile,omitempty"` // the profile the screen was read as
}

// Agents is the agents of a tmux server (list).
type Agents struct {
	Socket string  `json:"socket"`
	Agents []Agent `json:"agents"`
}

// NewAgents is agents, found on the server at socket, as a document.
func NewAgents(socket string, agents []dispatch.Agent) Agents {
	out := Agents{Socket: socket, Agents: []Agent{}}
	for _, a := range agents {
		out.Agents = append(out.Agents, Agent{a.Target.Team, a.Target.Agent(), a.Target.Session, a.Pane.ID,
			a.Pane.Command, a.Pane.PID, a.Pane.InMode, a.State, a.Detail, a.Profile})
	}
	return out
}

// Inbox is what an inbox shows one reader (inbox).
type Inbox struct {
	Team     string             `json:"team"`
	Agent    string             `json:"agent"`
	Reader   string             `json:"reader"`
	Messages []mailbox.Envelope `json:"messages"`
}

// CLIRequest is POST /v1/cli's body: a command line a client forwards to
// the daemon, to run there as it would have run in the client.
type CLIRequest struct {
	Args []string `json:"args"`
	// Env is the client's environment (KEY=VALUE): the command finds its
	// caller, server and mailbox in it as it would in the client.
	Env    []string `json:"env"`
	InTTY  bool     `json:"in_tty,omitempty"`
	ErrTTY bool     `json:"err_tty,omitempty"`
}

// CLIFrame is one line of POST /v1/cli's answer: first the run's id (for
// POST /v1/cli/{run}/interrupt and .../stdin), then output as it comes,
// then the exit code. Stdin, once, asks the client for its stdin: the
// command reads it (POST /v1/cli/{run}/stdin streams it).
type CLIFrame struct {
	Run    string `json:"run,omitempty"`
	Stdin  bool   `json:"stdin,omitempty"`
	Stdout []byte `json:"stdout,omitempty"`
	Stderr []byte `json:"stderr,omitempty"`
	Exit   *int   `json:"exit,omitempty"`
}

// EncodeLine writes v as one line of JSON (for streams), made safe for a
// terminal (Safe).
func EncodeLine(w io.Writer, v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(Safe(b.Bytes()))
	return err
}
