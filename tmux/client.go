package tmux

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/GianlucaP106/gotmux/gotmux"
)

// Pane is what agentmsg needs to know about a session's active pane.
type Pane struct {
	ID      string // "%12": stable for the pane's life, used for every later command
	Session string
	Command string // foreground command (pane_current_command)
	PID     int    // the pane's first process
	InMode  bool   // copy mode or another mode that would eat keys
	Dead    bool
	Width   int
	Height  int
}

// Info is the server's own description of itself.
type Info struct {
	Version string
	PID     int
	Socket  string
}

// Client is the small surface of tmux that agentmsg uses.
type Client interface {
	Server() Server
	// Info reports the server's version and pid.
	Info(ctx context.Context) (Info, error)
	// ListPanes returns the active pane of every session.
	ListPanes(ctx context.Context) ([]Pane, error)
	// SessionPane returns the active pane of the session named exactly
	// session (never a prefix match); ErrSessionNotFound when there is none.
	SessionPane(ctx context.Context, session string) (Pane, error)
	// LeaveMode takes the pane out of copy mode or any other mode; a no-op
	// when it is in none.
	LeaveMode(ctx context.Context, pane string) error
	// Capture returns the visible screen, wrapped lines joined, plus up to
	// history lines of scrollback above it.
	Capture(ctx context.Context, pane string, history int) ([]string, error)
	// Paste types text into the pane as data through a buffer of the given
	// (unique) name, with bracketed-paste markers when the program asked for
	// them, and deletes the buffer.
	Paste(ctx context.Context, pane, buffer, text string) error
	// SendBytes sends raw bytes as keys (e.g. 0x0d for a carriage return).
	SendBytes(ctx context.Context, pane string, b ...byte) error
}

// Exec runs one tmux process per call.
type Exec struct {
	server  Server
	bin     string
	timeout time.Duration
	// Trace, when set, hears every call: its subcommands, duration, error.
	Trace func(command string, took time.Duration, err error)
}

// DefaultCommandTimeout bounds one tmux call, so a wedged server cannot hang
// a delivery forever.
const DefaultCommandTimeout = 5 * time.Second

// NewExec finds the tmux binary and returns a client for server.
func NewExec(server Server) (*Exec, error) {
	bin, err := exec.LookPath("tmux")
	if err != nil {
		return nil, ErrNotInstalled
	}
	return &Exec{server: server, bin: bin, timeout: DefaultCommandTimeout}, nil
}

func (c *Exec) Server() Server { return c.server }

// paneFormat lists the fields of a Pane. The session name comes last so that
// an oddly named session cannot shift the other fields; tmux escapes control
// characters in format output, so the 0x1f separator cannot occur in a value.
const (
	sep        = "\x1f"
	paneFormat = "#{pane_id}" + sep + "#{pane_pid}" + sep + "#{pane_in_mode}" + sep + "#{pane_dead}" + sep +
		"#{pane_width}" + sep + "#{pane_height}" + sep + "#{pane_active}" + sep + "#{window_active}" + sep +
		"#{pane_current_command}" + sep + "#{session_name}"
	paneFields = 10
)

func (c *Exec) ListPanes(ctx context.Context) ([]Pane, error) {
	out, err := c.run(ctx, nil, "list-panes", "-a", "-F", paneFormat)
	if err != nil {
		return nil, err
	}
	return parsePanes(out, true), nil
}

func (c *Exec) SessionPane(ctx context.Context, session string) (Pane, error) {
	// "=NAME:" is an exact match on the session (a bare name prefix-matches).
	out, err := c.run(ctx, nil, "list-panes", "-t", "="+session+":", "-F", paneFormat)
	if err != nil {
		return Pane{}, err
	}
	for _, p := range parsePanes(out, false) {
		if p.Session == session {
			return p, nil
		}
	}
	return Pane{}, &Error{Command: "list-panes", Socket: c.server.Socket, Stderr: "can't find session: " + session, Kind: ErrSessionNotFound}
}

// parsePanes keeps each session's active pane (of its active window when
// activeWindowOnly is set; list-panes -t already lists only that window).
func parsePanes(out []byte, activeWindowOnly bool) []Pane {
	var panes []Pane
	for line := range strings.SplitSeq(strings.TrimRight(string(out), "\n"), "\n") {
		f := strings.SplitN(line, sep, paneFields)
		if len(f) != paneFields || f[6] != "1" || (activeWindowOnly && f[7] != "1") {
			continue
		}
		pid, _ := strconv.Atoi(f[1])
		w, _ := strconv.Atoi(f[4])
		h, _ := strconv.Atoi(f[5])
		panes = append(panes, Pane{
			ID: f[0], PID: pid, InMode: f[2] == "1", Dead: f[3] == "1",
			Width: w, Height: h, Command: f[8], Session: f[9],
		})
	}
	return panes
}

func (c *Exec) LeaveMode(ctx context.Context, pane string) error {
	_, err := c.run(ctx, nil, "copy-mode", "-q", "-t", pane)
	return err
}

func (c *Exec) Capture(ctx context.Context, pane string, history int) ([]string, error) {
	args := []string{"capture-pane", "-p", "-J", "-t", pane}
	if history > 0 {
		args = append(args, "-S", strconv.Itoa(-history))
	}
	out, err := c.run(ctx, nil, args...)
	if err != nil {
		return nil, err
	}
	return strings.Split(strings.TrimSuffix(string(out), "\n"), "\n"), nil
}

func (c *Exec) Paste(ctx context.Context, pane, buffer, text string) error {
	// One tmux call: load the buffer from stdin (no argv parsing, no size
	// limit), paste it with bracketed-paste markers (-p), LF kept as LF (-r),
	// and delete it (-d).
	_, err := c.run(ctx, strings.NewReader(text),
		"load-buffer", "-b", buffer, "-", ";",
		"paste-buffer", "-p", "-d", "-r", "-b", buffer, "-t", pane)
	if err != nil {
		// The paste failed after the load: do not leave our text behind.
		_, _ = c.run(context.WithoutCancel(ctx), nil, "delete-buffer", "-b", buffer)
	}
	return err
}

func (c *Exec) SendBytes(ctx context.Context, pane string, b ...byte) error {
	args := []string{"send-keys", "-t", pane, "-H"}
	for _, x := range b {
		args = append(args, fmt.Sprintf("%02x", x))
	}
	_, err := c.run(ctx, nil, args...)
	return err
}

// Info asks the server for its version and pid.
func (c *Exec) Info(ctx context.Context) (Info, error) {
	out, err := c.run(ctx, nil, "display-message", "-p", "#{version}"+sep+"#{pid}")
	if err != nil {
		return Info{}, err
	}
	version, pid, _ := strings.Cut(strings.TrimSpace(string(out)), sep)
	n, _ := strconv.Atoi(pid)
	return Info{Version: version, PID: n, Socket: c.server.Socket}, nil
}

// SessionNames lists the server's session names through gotmux, which is
// sound for this: a session name cannot hold the ":" of gotmux's "-:-"
// field separator. Another field it reads (the session's directory) can,
// and gotmux panics then; that case falls back to the direct runner.
func (c *Exec) SessionNames(ctx context.Context) (names []string, err error) {
	if names, ok := c.sessionNamesGotmux(); ok {
		return names, nil
	}
	out, err := c.run(ctx, nil, "list-sessions", "-F", "#{session_name}")
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(out)), nil
}

func (c *Exec) sessionNamesGotmux() (names []string, ok bool) {
	defer func() {
		if recover() != nil {
			names, ok = nil, false
		}
	}()
	t, err := gotmux.NewTmux(c.server.Socket)
	if err != nil {
		return nil, false
	}
	sessions, err := t.ListSessions()
	if err != nil {
		return nil, false
	}
	for _, s := range sessions {
		names = append(names, s.Name)
	}
	return names, true
}

func (c *Exec) run(ctx context.Context, stdin *strings.Reader, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bin, append([]string{"-S", c.server.Socket}, args...)...)
	if stdin != nil {
		cmd.Stdin = stdin
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	if c.Trace != nil {
		c.Trace(commandNames(args), time.Since(start), err)
	}
	if err == nil {
		return stdout.Bytes(), nil
	}
	e := &Error{Command: commandNames(args), Socket: c.server.Socket, Stderr: stderr.String(), ExitCode: -1}
	var exitErr *exec.ExitError
	switch {
	case ctx.Err() != nil:
		e.Stderr = fmt.Sprintf("no answer within %s (%v)", c.timeout, ctx.Err())
	case errors.As(err, &exitErr):
		e.ExitCode = exitErr.ExitCode()
	default:
		e.Stderr = err.Error()
	}
	e.Kind = classify(e.Stderr)
	return nil, e
}

// commandNames names the subcommands of a call for error messages, leaving
// out every argument (those may hold message text).
func commandNames(args []string) string {
	names := []string{args[0]}
	for i, a := range args[:len(args)-1] {
		if a == ";" {
			names = append(names, args[i+1])
		}
	}
	return strings.Join(names, "+")
}
