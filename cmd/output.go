package cmd

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/agentmsg/agentmsg/delivery"
	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/internal/shell"
	"github.com/agentmsg/agentmsg/message"
	"github.com/agentmsg/agentmsg/service"
	"github.com/agentmsg/agentmsg/tmux"
)

// show and showText make text that came from another party (a message,
// metadata, a status, a name read from a file, a pane's command or screen,
// an error quoting any of them) safe to print: they are message.Printable,
// the one function for it, for one line and for several lines. JSON output
// gets JSON escapes instead (writeJSON).
func show(s string) string     { return message.PrintableLine(s) }
func showText(s string) string { return message.Printable(s) }

// showErr is err's text (errText), safe to print on one line.
func showErr(err error) string { return show(errText(err)) }

// errText is an error as the command line says it: the engine's words,
// then the flag or command that helps, which the engine does not know of.
func errText(err error) string {
	if err == nil {
		return fmt.Sprint(err)
	}
	s := err.Error()
	var pc *dispatch.PaneChoiceError
	switch {
	case errors.As(err, &pc):
		s += fmt.Sprintf("; choose one with --pane WINDOW.PANE (e.g. --pane %s), or in the config file: [panes] %q = %q", pc.Example(), pc.Target.String(), pc.Example())
	case errors.Is(err, delivery.ErrNotAgent):
		s += " (--force types it anyway)"
	case errors.Is(err, delivery.ErrTextOffBox):
		s += " (see agentmsg doctor)"
	case errors.Is(err, service.ErrNoCallerTeam):
		s += ": give --team TEAM or set AGENTMSG_TEAM (inside an agent-<team>-<name> session it is found by itself)"
	}
	return s
}

// describe is one line for a person.
func describe(o dispatch.Outcome) string {
	switch {
	case o.Verdict == delivery.Queued:
		return fmt.Sprintf("queued for %s as %s: it runs after the agent's current turn (pane %s, %s)%s", o.Target, o.ID, o.Pane, ms(o.Elapsed), pointerNote(o))
	case o.OK():
		return fmt.Sprintf("submitted to %s as %s (pane %s, %s)%s", o.Target, o.ID, o.Pane, ms(o.Elapsed), pointerNote(o))
	}
	return fmt.Sprintf("not delivered to %s (%s): %s", o.Target, o.Verdict, showErr(o.Err))
}

// pointerNote says that a long message went as a pointer (--json's
// pointer), or "".
func pointerNote(o dispatch.Outcome) string {
	if !o.Pointer {
		return ""
	}
	return "; typed as its first line and a pointer to the whole text (agentmsg read " + string(o.ID) + ")"
}

// hint says what to try next after a failed outcome, or "". serverFlag is
// what points agentmsg at the server used ("" for the one it finds itself).
func hint(o dispatch.Outcome, socket, serverFlag string) string {
	switch outcomeCode(o) {
	case ExitNotFound:
		if o.Target.IsRalph() {
			return "see the agents there: agentmsg " + serverFlag + "list"
		}
		return "see the agents there: agentmsg " + serverFlag + "list " + o.Target.Team
	case ExitNotReady:
		if errors.Is(o.Err, delivery.ErrNotAgent) {
			return "the agent has exited: start it again in that pane (or use --force to type into the shell)"
		}
		return "wait longer with --ready-timeout, or look: " + tmux.WatchCommand(tmux.Server{Socket: socket}, o.Target.Session)
	case ExitUnconfirmed:
		if errors.Is(o.Err, delivery.ErrInterrupted) {
			return "the message is kept as typed: agentmsg " + serverFlag + "deliver submits it (once)"
		}
		return "look at the agent's screen: " + tmux.WatchCommand(tmux.Server{Socket: socket}, o.Target.Session)
	}
	return ""
}

// serverFlag is "-S PATH " when socket is not the server agentmsg would
// find without flags, so that a printed command reaches the same server.
func serverFlag(lookupEnv func(string) (string, bool), socket string) string {
	if def, err := tmux.ResolveServer("", "", lookupEnv); err == nil && def.Socket == socket {
		return ""
	}
	return "-S " + shell.Quote(socket) + " "
}

func ms(d time.Duration) string {
	if d < time.Second {
		return fmt.Sprintf("%dms", d.Milliseconds())
	}
	return d.Round(100 * time.Millisecond).String()
}

// waitPrinter shows, on a terminal, what deliveries are waiting for. With
// one target it keeps one line up to date; with many it prints each change.
type waitPrinter struct {
	mu     sync.Mutex
	w      io.Writer
	inline bool
	last   map[string]delivery.State
	hinted map[string]bool // the targets told how to describe a prompt
	dirty  bool
}

func newWaitPrinter(w io.Writer, inline bool) *waitPrinter {
	return &waitPrinter{w: w, inline: inline, last: map[string]delivery.State{}, hinted: map[string]bool{}}
}

func (p *waitPrinter) wait(w dispatch.Wait) {
	p.mu.Lock()
	defer p.mu.Unlock()
	t := w.Target
	line := fmt.Sprintf("waiting for %s: %s", t, w.State)
	if w.Detail != "" {
		line += " (" + show(w.Detail) + ")"
	}
	if w.State == delivery.Unknown && !p.hinted[t.Session] {
		// Said at once: waiting will not teach the profile a prompt.
		p.hinted[t.Session] = true
		if p.dirty {
			fmt.Fprint(p.w, "\r\033[K")
		}
		fmt.Fprintln(p.w, noPromptHint(w))
	}
	if p.inline {
		fmt.Fprintf(p.w, "\r\033[K%s %s", line, w.Waited.Round(time.Second))
		p.dirty = true
		return
	}
	if p.last[t.Session] != w.State {
		p.last[t.Session] = w.State
		fmt.Fprintln(p.w, line)
	}
}

// done clears the progress line.
func (p *waitPrinter) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dirty {
		fmt.Fprint(p.w, "\r\033[K")
		p.dirty = false
	}
}
