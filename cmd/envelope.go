package cmd

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentmsg/agentmsg/courier"
	"github.com/agentmsg/agentmsg/delivery"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
	"github.com/agentmsg/agentmsg/service"
	"github.com/agentmsg/agentmsg/wire"
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

// typesHelp lists the message types for --help: what each is for, and the
// metadata it needs as mailbox.Protocol says.
var typesHelp = func() string {
	b := strings.Builder{}
	b.WriteString(`Message types (--type; the agent sees "[type] key=value ... text"):`)
	for _, t := range []struct {
		typ        mailbox.Type
		what, note string
	}{
		{mailbox.TypeText, "plain text (the default)", ""},
		{mailbox.TypeStatus, "a status update", ""},
		{mailbox.TypeShutdownRequest, "lead to agent: finish up and stop", ""},
		{mailbox.TypeShutdownResponse, "agent to lead", " (false: defer while finishing)"},
		{mailbox.TypePlan, "agent to lead: a plan for approval", ""},
		{mailbox.TypePlanApproval, "lead to agent", ""},
		{mailbox.TypeTask, "lead to agent: a task assignment", ""},
	} {
		fmt.Fprintf(&b, "\n  %-18s %s", t.typ, t.what)
		for _, k := range slices.Sorted(maps.Keys(mailbox.Protocol[t.typ])) {
			fmt.Fprintf(&b, "; needs --meta %s=%s", k, strings.Join(mailbox.Protocol[t.typ][k], "|"))
		}
		b.WriteString(t.note)
	}
	return b.String()
}()

// metadata is --meta as a map (a key given twice: the last one). The
// service cleans and checks it with the type (service.Envelope).
func (e *envelopeFlags) metadata() (map[string]string, error) {
	var meta map[string]string
	for _, kv := range e.meta {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || message.CleanLine(k) == "" {
			return nil, usagef("--meta %q: want KEY=VALUE", kv)
		}
		if meta == nil {
			meta = map[string]string{}
		}
		meta[k] = v
	}
	return meta, nil
}

// wireResult is r as --json prints it, in the command line's words.
func wireResult(r courier.Result) wire.Outcome { return wire.NewResult(r, errText) }

// resultMark is the mark before one target's line: ✓ typed and taken,
// … kept in the inbox for later (nothing was typed), ✗ failed.
func resultMark(r courier.Result) string {
	switch {
	case !r.OK():
		return "✗"
	case r.Verdict == delivery.Deferred:
		return "…"
	}
	return "✓"
}

func describeResult(r courier.Result) string {
	if r.Host != "" && r.Outcome.OK() && r.RecordErr == nil {
		// Another host typed it: its word is all there is, no pane or
		// time of ours.
		if r.Verdict == delivery.Queued {
			return fmt.Sprintf("queued for %s on host %s as %s: it runs after the agent's current turn", r.Target, r.Host, r.ID)
		}
		return fmt.Sprintf("submitted to %s on host %s as %s%s", r.Target, r.Host, r.ID, pointerNote(r.Outcome))
	}
	if r.RecordErr != nil && r.Outcome.OK() {
		return fmt.Sprintf("%s; but %v", describe(r.Outcome), r.RecordErr)
	}
	switch r.Verdict {
	case delivery.Deferred:
		switch {
		case r.Err != nil: // interrupted, or another sender held the pane
			return fmt.Sprintf("deferred for %s as %s: %s; kept in its inbox (agentmsg deliver types it)", r.Target, r.ID, errText(r.Err))
		case r.Reason == courier.ReasonBehindOlder:
			return fmt.Sprintf("deferred for %s as %s: %s; kept in its inbox (agentmsg deliver types them in order)", r.Target, r.ID, reasonWords(r.Reason))
		case r.Reason != "":
			return fmt.Sprintf("deferred for %s as %s: %s; kept in its inbox until it is ready (agentmsg deliver types it then)", r.Target, r.ID, reasonWords(r.Reason))
		}
		return fmt.Sprintf("deferred for %s as %s: kept in its inbox until it is ready (agentmsg deliver types it then)", r.Target, r.ID)
	case delivery.Recorded:
		return fmt.Sprintf("recorded in %s's inbox as %s (not typed)", r.Target, r.ID)
	case delivery.Skipped:
		return fmt.Sprintf("skipped %s for %s, not typed: %s (it stays in the inbox)", r.ID, r.Target, errText(r.Err))
	}
	return describe(r.Outcome)
}

// reasonWords says a reason (courier.Reason*) for a person.
func reasonWords(reason string) string {
	switch reason {
	case courier.ReasonBehindOlder:
		return "behind older messages to it that still wait"
	case courier.ReasonBusy:
		return "the agent stayed busy"
	case courier.ReasonDialog:
		return "a dialog stayed open"
	case courier.ReasonDraft:
		return "a person's text stayed in its input box"
	case courier.ReasonNoBox:
		return "no input box was recognised"
	case courier.ReasonLocked:
		return "another sender held the pane"
	case courier.ReasonGone:
		return "the pane went away"
	case courier.ReasonShell:
		return "the pane shows a shell prompt"
	case courier.ReasonNotFound:
		return "the agent was not found"
	case courier.ReasonInBox:
		return "typed, and left in its input box"
	case courier.ReasonUnknown:
		return "nothing shows whether it arrived"
	case courier.ReasonTimeout:
		return "not typed within the time its sender gave (--no-queue)"
	}
	return show(reason) // interrupted, error
}

// olderLine says what became of an older message a send tried first.
func olderLine(r courier.Result) string {
	return fmt.Sprintf("tried older message %s first: %s", r.ID, olderVerdict(r))
}

// olderLines is the line, under a broadcast target's own, that says what
// became of each older message the broadcast tried first for it.
func olderLines(r courier.Result) string {
	words := make([]string, len(r.Older))
	for i, o := range r.Older {
		words[i] = string(o.ID) + " " + olderVerdict(o)
	}
	return "  older messages tried first: " + strings.Join(words, "; ")
}

// olderVerdict is an older message's verdict, and why when it waits.
func olderVerdict(r courier.Result) string {
	what := string(r.Verdict)
	if r.Reason != "" {
		what += " (" + reasonWords(r.Reason) + ")"
	}
	return what
}

// reportSent prints what one message became (send, reply) and returns its
// exit: --json's document or a line on stdout, after a line for each older
// message the send tried first; a failure also on stderr, with what to
// try next.
func reportSent(f *Factory, res service.SendResult) error {
	out := res.Result
	if f.JSON {
		writeJSON(f, wire.NewSend(res, errText))
	} else {
		if why := out.WhileBusyIgnored; why != "" {
			fmt.Fprintf(f.IO.ErrOut, "agentmsg: --while-busy does not apply to %s: %s; a busy agent's turn is waited for\n", out.Target, show(why))
		}
		for _, o := range out.Older {
			fmt.Fprintln(f.IO.Out, olderLine(o))
		}
	}
	if out.OK() {
		if !f.JSON {
			fmt.Fprintln(f.IO.Out, describeResult(out))
		}
		return nil
	}
	fmt.Fprintf(f.IO.ErrOut, "agentmsg: %s\n", describeResult(out))
	if res.Socket != "" {
		if h := hint(out.Outcome, res.Socket, serverFlag(f.LookupEnv, res.Socket)); h != "" {
			fmt.Fprintf(f.IO.ErrOut, "  %s\n", h)
		}
	}
	return exitError{wire.ResultCode(out)}
}
