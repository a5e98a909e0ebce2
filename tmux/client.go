package tmux

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
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

	sessionID string // "$3", while parsing
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
	// Paste types text into the pane as data through a buffer of its own,
	// with bracketed-paste markers when the program asked for them, and
	// deletes the buffer.
	Paste(ctx context.Context, pane, text string) error
	// SendBytes sends raw bytes as keys (e.g. 0x0d for a carriage return).
	SendBytes(ctx context.Context, pane string, b ...byte) error
}

// Exec runs tmux client processes (never a control client: see doc.go),
// one command list per process, and batches the calls that arrive while one
// runs (batch.go). It is safe for concurrent use.
type Exec struct {
	server  Server
	bin     string
	timeout time.Duration
	// Trace, when set, hears every call: its subcommands, duration, error.
	Trace func(command string, took time.Duration, err error)

	mu       sync.Mutex
	queue    []*call
	draining bool
	procs    atomic.Int64 // tmux processes started, for tests and benchmarks

	oldPaste atomic.Int32 // pasteUnknown, pasteNew or pasteOld: see payloadsOnStdin
}

// DefaultCommandTimeout bounds the wait for one tmux call, so that a wedged
// server cannot hang a delivery forever. A call not answered by then is
// abandoned, never killed.
const DefaultCommandTimeout = 5 * time.Second

// NewExec returns a client for server that runs the tmux binary bin: a path,
// or "" for the first tmux on $PATH.
func NewExec(server Server, bin string) (*Exec, error) {
	path, err := FindBinary(bin)
	if err != nil {
		return nil, err
	}
	return &Exec{server: server, bin: path, timeout: DefaultCommandTimeout}, nil
}

// FindBinary resolves the tmux binary to run: bin itself when it is a path
// (or a name on $PATH), else "tmux" on $PATH.
func FindBinary(bin string) (string, error) {
	if bin == "" {
		path, err := exec.LookPath("tmux")
		if err != nil {
			return "", ErrNotInstalled
		}
		return path, nil
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		return "", fmt.Errorf("the configured tmux %q cannot be run: %w", bin, err)
	}
	return path, nil
}

// Bin is the path of the tmux binary this client runs.
func (c *Exec) Bin() string { return c.bin }

func (c *Exec) Server() Server { return c.server }

// paneFormat lists the fields of a Pane, separated by spaces. Only the
// last field, the foreground command, is free text (it may hold spaces);
// the session is named by its id ($N), and its name read separately
// (sessionFormat), so that no free text ever stands between two fields.
// Control characters make no safe separator: tmux 3.4 and 3.5 print them
// as octal escapes ("\037"), and a session name can hold those four
// characters too.
const (
	sep        = " "
	paneFormat = "#{pane_id} #{pane_pid} #{pane_in_mode} #{pane_dead} #{pane_width} #{pane_height} " +
		"#{pane_active} #{window_active} #{session_id} #{pane_current_command}"
	paneFields    = 10
	sessionFormat = "#{session_id} #{session_name}"
)

func (c *Exec) ListPanes(ctx context.Context) ([]Pane, error) {
	// One call, so that names and panes come from the same moment.
	sessions, panes, err := c.twoInOne(ctx,
		[]string{"list-sessions", "-F", sessionFormat},
		[]string{"list-panes", "-a", "-F", paneFormat})
	if err != nil {
		return nil, err
	}
	names := map[string]string{}
	for line := range strings.SplitSeq(strings.TrimSuffix(sessions, "\n"), "\n") {
		if id, name, ok := strings.Cut(line, " "); ok && isID(id, '$') {
			names[id] = name
		}
	}
	return parsePanes([]byte(panes), true, func(id string) (string, bool) {
		name, ok := names[id]
		return name, ok
	}), nil
}

func (c *Exec) SessionPane(ctx context.Context, session string) (Pane, error) {
	// "=NAME:" is an exact match on the session (a bare name prefix-matches).
	out, err := c.run(ctx, "list-panes", "-t", "="+session+":", "-F", paneFormat)
	if err != nil {
		return Pane{}, err
	}
	return c.sessionPane(string(out), session)
}

// sessionPane is session's one active pane in list-panes -t output.
func (c *Exec) sessionPane(list, session string) (Pane, error) {
	panes := parsePanes([]byte(list), false, func(string) (string, bool) { return session, true })
	if len(panes) == 1 {
		return panes[0], nil
	}
	return Pane{}, &Error{Command: "list-panes", Socket: c.server.Socket, Stderr: "can't find session: " + session, Kind: ErrSessionNotFound}
}

// parsePanes keeps each session's active pane (of its active window when
// activeWindowOnly is set; list-panes -t already lists only that window),
// naming sessions by their id. A line that does not parse, or a session
// that seems to have two active panes (a foreground command whose name
// holds a newline could forge a line), is left out: better no target than
// a wrong one.
func parsePanes(out []byte, activeWindowOnly bool, sessionName func(id string) (string, bool)) []Pane {
	var panes []Pane
	seen := map[string]int{}
	for line := range strings.SplitSeq(strings.TrimRight(string(out), "\n"), "\n") {
		f := strings.SplitN(line, sep, paneFields)
		if len(f) != paneFields || !isID(f[0], '%') || !isID(f[8], '$') || f[6] != "1" || (activeWindowOnly && f[7] != "1") {
			continue
		}
		name, ok := sessionName(f[8])
		if !ok {
			continue
		}
		pid, err1 := strconv.Atoi(f[1])
		w, err2 := strconv.Atoi(f[4])
		h, err3 := strconv.Atoi(f[5])
		if err1 != nil || err2 != nil || err3 != nil {
			continue
		}
		seen[f[8]]++
		panes = append(panes, Pane{
			ID: f[0], PID: pid, InMode: f[2] == "1", Dead: f[3] == "1",
			Width: w, Height: h, Command: f[9], Session: name, sessionID: f[8],
		})
	}
	kept := panes[:0]
	for _, p := range panes {
		if seen[p.sessionID] == 1 {
			kept = append(kept, p)
		}
	}
	return kept
}

// isID reports whether s is a tmux id: the prefix (%, $ or @) and digits.
func isID(s string, prefix byte) bool {
	if len(s) < 2 || s[0] != prefix {
		return false
	}
	for i := 1; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// SessionPaneScreen is SessionPane and the pane's visible screen, in one
// round trip (a send needs both before it starts).
func (c *Exec) SessionPaneScreen(ctx context.Context, session string) (Pane, []string, error) {
	list, screen, err := c.twoInOne(ctx,
		[]string{"list-panes", "-t", "=" + session + ":", "-F", paneFormat},
		[]string{"capture-pane", "-p", "-J", "-t", "=" + session + ":"})
	if err != nil {
		return Pane{}, nil, err
	}
	p, err := c.sessionPane(list, session)
	if err != nil {
		return Pane{}, nil, err
	}
	return p, strings.Split(strings.TrimSuffix(screen, "\n"), "\n"), nil
}

// twoInOne runs two read commands in one round trip and returns each one's
// output. A marker line between them tells them apart, and carries the
// server's version, so that knowing it costs no call of its own.
func (c *Exec) twoInOne(ctx context.Context, first, second []string) (string, string, error) {
	mark := "agentmsg-mark-" + newNonce()
	out, err := c.doCommands(ctx, false, nil, [][]string{first, {"display-message", "-p", mark + " #{version}"}, second})
	if err != nil {
		return "", "", err
	}
	a, rest, ok := strings.Cut(string(out), mark+" ")
	version, b, ok2 := strings.Cut(rest, "\n")
	if !ok || !ok2 {
		return "", "", &Error{Command: first[0] + "+" + second[0], Socket: c.server.Socket, Stderr: "tmux's answer lacked its marker", ExitCode: -1}
	}
	c.noteVersion(Version(version))
	return a, b, nil
}

// LeaveModeCapture leaves any mode the pane is in and captures its visible
// screen, in one round trip.
func (c *Exec) LeaveModeCapture(ctx context.Context, pane string) ([]string, error) {
	out, err := c.run(ctx, "copy-mode", "-q", "-t", pane, ";", "capture-pane", "-p", "-J", "-t", pane)
	if err != nil {
		return nil, err
	}
	return strings.Split(strings.TrimSuffix(string(out), "\n"), "\n"), nil
}

func (c *Exec) LeaveMode(ctx context.Context, pane string) error {
	_, err := c.run(ctx, "copy-mode", "-q", "-t", pane)
	return err
}

func (c *Exec) Capture(ctx context.Context, pane string, history int) ([]string, error) {
	args := []string{"capture-pane", "-p", "-J", "-t", pane}
	if history > 0 {
		args = append(args, "-S", strconv.Itoa(-history))
	}
	out, err := c.run(ctx, args...)
	if err != nil {
		return nil, err
	}
	return strings.Split(strings.TrimSuffix(string(out), "\n"), "\n"), nil
}

func (c *Exec) Paste(ctx context.Context, pane, text string) error {
	// A buffer of our own, named so that no two pastes (a broadcast types
	// into many panes at once, other processes too) can meet.
	buffer := "agentmsg-" + newNonce()
	// One command list: load the buffer from an anonymous file written
	// whole before tmux starts (no argv parsing, no size limit, nothing
	// cut short or left on disk if we die), paste it with bracketed-paste
	// markers (-p), LF kept as LF (-r), and delete it (-d).
	_, err := c.do(ctx, true, []string{text},
		"load-buffer", "-b", buffer, payloadArg(0), ";",
		"paste-buffer", "-p", "-d", "-r", "-b", buffer, "-t", pane)
	if err != nil {
		// The paste failed after the load: do not leave our text behind.
		_, _ = c.do(context.WithoutCancel(ctx), true, nil, "delete-buffer", "-b", buffer)
	}
	return err
}

func (c *Exec) SendBytes(ctx context.Context, pane string, b ...byte) error {
	args := []string{"send-keys", "-t", pane, "-H"}
	for _, x := range b {
		args = append(args, fmt.Sprintf("%02x", x))
	}
	_, err := c.do(ctx, true, nil, args...)
	return err
}

// Info asks the server for its version and pid.
func (c *Exec) Info(ctx context.Context) (Info, error) {
	out, err := c.run(ctx, "display-message", "-p", "#{version}"+sep+"#{pid}")
	if err != nil {
		return Info{}, err
	}
	version, pid, _ := strings.Cut(strings.TrimSpace(string(out)), sep)
	n, _ := strconv.Atoi(pid)
	return Info{Version: version, PID: n, Socket: c.server.Socket}, nil
}

// run runs a command that only reads.
func (c *Exec) run(ctx context.Context, args ...string) ([]byte, error) {
	return c.do(ctx, false, nil, args...)
}
