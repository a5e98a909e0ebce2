package cmd

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/agentmsg/agentmsg/mailbox"
)

// How messages and table cells are printed for people.

// msgLabel is what a message is, in brackets after its sender: "text",
// "request REQ_x", "reply to MSG_y".
func msgLabel(e mailbox.Envelope) string {
	parts := []string{string(e.Type)}
	if e.RequestID != "" {
		parts = append(parts, e.RequestID)
	}
	if e.ReplyTo != "" {
		parts = append(parts, "reply to "+string(e.ReplyTo))
	}
	if e.To == mailbox.Broadcast {
		parts = append(parts, "to all")
	}
	// The metadata a receiver dispatches on (state=blocked, accept=false).
	parts = append(parts, e.MetaPairs()...)
	return show(strings.Join(parts, ", "))
}

// indentRest indents every line of s after the first, so that a
// multi-line message stays under its heading.
func indentRest(s, indent string) string {
	return strings.ReplaceAll(s, "\n", "\n"+indent)
}

// writeMessage prints one message for a person: id, time, sender, label,
// then the content.
func writeMessage(w io.Writer, e mailbox.Envelope) { writeLabelled(w, e, msgLabel(e)) }

// writeInboxMessage is writeMessage with where the message's delivery got
// (inbox): "(text; waiting to be typed)".
func writeInboxMessage(w io.Writer, e mailbox.Envelope) {
	label := msgLabel(e)
	if e.Delivery != nil {
		label += "; " + stateWords(e.Delivery.State)
	}
	writeLabelled(w, e, label)
}

func writeLabelled(w io.Writer, e mailbox.Envelope, label string) {
	fmt.Fprintf(w, "[%s] %s from %s (%s): %s\n", show(string(e.ID)), e.Timestamp.Local().Format("2006-01-02 15:04:05"),
		show(e.From), label, indentRest(showText(e.Content), "  "))
}

// stateWords says a delivery state for a person reading the inbox.
func stateWords(st mailbox.DeliveryState) string {
	switch st {
	case mailbox.StatePending, mailbox.StateDeferred:
		return "waiting to be typed"
	case mailbox.StateTyping:
		return "being typed"
	case mailbox.StateTyped:
		return "typed, not submitted"
	case mailbox.StateInbox:
		return "to read"
	case mailbox.StateFailed:
		return "not delivered"
	case mailbox.StateHandled:
		return "handled by a person"
	}
	return show(string(st)) // submitted, queued, read, skipped
}

// writePrompt prints messages as a block for an agent's next prompt.
func writePrompt(w io.Writer, envs []mailbox.Envelope) {
	if len(envs) == 0 {
		return
	}
	noun := "messages"
	if len(envs) == 1 {
		noun = "message"
	}
	fmt.Fprintf(w, "You have %d new %s:\n", len(envs), noun)
	for _, e := range envs {
		fmt.Fprintf(w, "[%s] from %s (%s): %s\n", show(string(e.ID)), show(e.From), msgLabel(e), indentRest(showText(e.Content), "  "))
	}
	fmt.Fprintln(w, "Answer one with: agentmsg reply <id> <message>")
}

// isTerminal reports whether w is a terminal (for redrawing a screen).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// cell shortens s to n runes for a table cell, on one line, safe to print.
func cell(s string, n int) string {
	s = show(strings.Join(strings.Fields(s), " "))
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// orDash is s, or "-" for an empty table cell.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// sinceText is how long before now t was, for people: "12s", "3m", "2h", "4d".
func sinceText(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := max(now.Sub(t), 0)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	}
	return fmt.Sprintf("%dd ago", int(d.Hours()/24))
}
