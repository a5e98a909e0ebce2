// Command standin is a stand-in agent for agentmsg's end-to-end tests. It
// runs in a tmux pane, draws an input box the way Claude Code does (or a
// plain "> " prompt), understands bracketed paste, can be made busy or show
// a permission dialog on cue, and appends every submitted prompt to a log
// file. The log, not the screen, is the ground truth of what it received.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"golang.org/x/term"
)

const (
	escTimeout   = 30 * time.Millisecond
	cuePollEvery = 10 * time.Millisecond
)

type options struct {
	logPath string
	cuePath string
	initial agentState
	cfg     config
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("standin", flag.ContinueOnError)
	fs.StringVar(&o.logPath, "log", "", "append one JSON record per line to this file (required)")
	fs.StringVar(&o.cfg.style, "style", "claude", "screen style: claude or plain")
	state := fs.String("state", "ready", "initial state: ready, busy or dialog")
	fs.StringVar(&o.cuePath, "cue", "", "file polled every 10ms; its trimmed contents ready|busy|dialog switch the state")
	fs.DurationVar(&o.cfg.busyAfterSubmit, "busy-after-submit", 0, "stay busy this long after each submitted prompt")
	fs.BoolVar(&o.cfg.queue, "queue", false, "while busy, Enter queues the draft, submitted when busy ends")
	fs.IntVar(&o.cfg.foldBytes, "fold-bytes", 800, "a paste longer than this many bytes is shown folded (<=0: never)")
	fs.IntVar(&o.cfg.foldLines, "fold-lines", 3, "a paste with more lines than this is shown folded (<=0: never)")
	fs.IntVar(&o.cfg.dropEnter, "drop-enter", 0, "ignore the first N Enters that would submit")
	fs.DurationVar(&o.cfg.enterGuard, "enter-guard", 0, "an Enter this soon after typing or pasting inserts a newline")
	fs.DurationVar(&o.cfg.echoDelay, "echo-delay", 0, "a submitted prompt shows in the transcript this late (a slow redraw)")
	fs.IntVar(&o.cfg.outputLines, "output-lines", 0, "print this many lines of output under each submitted prompt")
	fs.BoolVar(&o.cfg.bracketedPaste, "bracketed-paste", true, "ask the terminal for bracketed paste (false: a pasted newline is Enter)")
	fs.StringVar(&o.cfg.onSubmit, "on-submit", "", "run this with sh -c for each submitted prompt (a queued one when it is sent), "+
		`{"hook_event_name":"UserPromptSubmit","prompt":TEXT} on its stdin, as Claude Code runs its UserPromptSubmit hook`)
	fs.StringVar(&o.cfg.onTurnEnd, "on-turn-end", "", "run this with sh -c when a turn ends (busy-after-submit runs out, "+
		"or a cue ends busy), as Claude Code runs its Stop hook")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.logPath == "" {
		return o, errors.New("-log is required")
	}
	if o.cfg.style != "claude" && o.cfg.style != "plain" {
		return o, fmt.Errorf("-style %q: want claude or plain", o.cfg.style)
	}
	st, ok := stateNames[*state]
	if !ok {
		return o, fmt.Errorf("-state %q: want ready, busy or dialog", *state)
	}
	o.initial = st
	return o, nil
}

func main() {
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "standin:", err)
		}
		os.Exit(2)
	}
	code, err := run(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "standin:", err)
	}
	os.Exit(code)
}

// eventLog appends records to the log file, each with a single write(2) on
// an O_APPEND file so that a reader never sees half a line.
type eventLog struct{ f *os.File }

func openEventLog(path string) (*eventLog, error) {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	return &eventLog{f: f}, nil
}

func (l *eventLog) write(recs []record) error {
	for _, r := range recs {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false) // keep <, > and & readable in the log
		if err := enc.Encode(r); err != nil {
			return err
		}
		if _, err := l.f.Write(b.Bytes()); err != nil {
			return err
		}
	}
	return nil
}

// terminal owns the tty modes the stand-in changes and puts them back.
type terminal struct {
	fd    int
	saved *term.State
}

func setupTerminal(style string, bracketedPaste bool) (*terminal, error) {
	t := &terminal{fd: int(os.Stdin.Fd())}
	if term.IsTerminal(t.fd) {
		st, err := term.MakeRaw(t.fd)
		if err != nil {
			return nil, err
		}
		t.saved = st
	}
	modes := ""
	if bracketedPaste {
		modes += "\x1b[?2004h"
	}
	if style == "claude" {
		modes += "\x1b[?25l" // Ink hides the cursor and draws its own
	}
	os.Stdout.WriteString(modes)
	return t, nil
}

func (t *terminal) restore() {
	os.Stdout.WriteString("\r\n\x1b[?2004l\x1b[?25h")
	if t.saved != nil {
		term.Restore(t.fd, t.saved)
	}
}

func terminalSize() (int, int) {
	w, h, err := term.GetSize(int(os.Stdout.Fd()))
	if err != nil || w <= 0 || h <= 0 {
		return 80, 24
	}
	return w, h
}

// readInput forwards stdin in chunks as read(2) returns them; the channel
// closes at end of input.
func readInput(out chan<- []byte) {
	defer close(out)
	buf := make([]byte, 64*1024)
	for {
		n, err := os.Stdin.Read(buf)
		if n > 0 {
			out <- append([]byte(nil), buf[:n]...)
		}
		if err != nil {
			return
		}
	}
}

// pollCue sends the trimmed contents of the cue file whenever they change to
// something non-empty.
func pollCue(path string, out chan<- string) {
	last := ""
	for range time.Tick(cuePollEvery) {
		cur := ""
		if b, err := os.ReadFile(path); err == nil {
			cur = strings.TrimSpace(string(b))
		}
		if cur != last {
			last = cur
			if cur != "" {
				out <- cur
			}
		}
	}
}
