package tmux

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Pane is one pane of a session, as agentmsg needs to know it.
type Pane struct {
	ID          string // "%12": stable for the pane's life, used for every later command
	Session     string
	Window      string // "@3": the window it is in
	WindowIndex int
	WindowName  string
	Index       int    // its index in its window
	Active      bool   // the pane a bare session target reaches: the active pane of the current window
	Command     string // foreground command (pane_current_command)
	PID         int    // the pane's first process
	InMode      bool   // copy mode or another mode that would eat keys
	Dead        bool
	Width       int
	Height      int
	// BracketedPaste is whether the pane's program turned bracketed paste
	// on, as tmux 3.7 and newer report it; PasteUnknown before 3.7.
	BracketedPaste PasteMode
	// Server is the run of the tmux server the pane was found on: pane ids
	// start again at %0 when a server is replaced at the same socket.
	Server Instance

	sessionID string // "$3", while parsing
}

// PasteMode is what is known of a pane's bracketed paste.
type PasteMode int

const (
	PasteUnknown PasteMode = iota // tmux before 3.7 does not say
	PasteOff                      // each pasted line arrives as typed, Enter and all
	PasteOn                       // a paste arrives as one input
)

// Target is the tmux target that reaches this pane and no other: its
// session by exact name, its window and its id. tmux refuses it when the
// pane has left that window or session (a person moved it), where a bare
// "%N" would reach whatever pane has that id now.
func (p Pane) Target() string {
	if p.Session == "" || p.Window == "" {
		return p.ID
	}
	return "=" + p.Session + ":" + p.Window + "." + p.ID
}

// Instance is one run of a tmux server: its pid and start time. A server
// started again at the same socket is another instance, whose pane ids
// start again at %0, so a pane found on one must never be typed into on
// another (see Exec.Pinned).
type Instance struct {
	PID   int
	Start int64 // #{start_time}: seconds since the epoch
}

func (i Instance) IsZero() bool   { return i.PID == 0 && i.Start == 0 }
func (i Instance) String() string { return fmt.Sprintf("%d_%d", i.PID, i.Start) }

// marker is the hidden global environment variable that names this
// instance on the server itself (Exec.Pinned's guard).
func (i Instance) marker() string { return "AGENTMSG_SERVER_" + i.String() }

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
	// ListPanes returns every pane of every session.
	ListPanes(ctx context.Context) ([]Pane, error)
	// SessionPanes returns every pane, in every window, of the session
	// named exactly session (never a prefix match); ErrSessionNotFound when
	// there is none.
	SessionPanes(ctx context.Context, session string) ([]Pane, error)
	// Pinned is a client for typing into pane p and nothing else: every
	// command that names p reaches it by its full Target, and every
	// command list first checks that the server is still the instance p
	// was found on. A pane that moved fails with ErrPaneNotFound, a
	// server replaced at the same socket with ErrServerReplaced, instead
	// of reaching whatever has p's id now.
	Pinned(p Pane) Client
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

// Exec runs tmux client processes, one command list per process, and
// batches the calls that arrive while one runs (batch.go); with a Control
// (UseControl, the daemon) the lists go through that control client while
// it is attached. It is safe for concurrent use. A Pinned view shares its
// batches.
type Exec struct {
	*core
	pin *Pane // the pane this view is pinned to (Pinned), or nil
}

// core is what every view of one Exec shares.
type core struct {
	server  Server
	bin     string
	timeout time.Duration
	// Trace, when set, hears every call: its subcommands, duration, error.
	Trace func(command string, took time.Duration, err error)

	mu       sync.Mutex
	queue    []*call
	draining bool
	// coming counts callers that will call again in a moment (Gather);
	// arrived wakes a drainer that waits for them.
	coming     atomic.Int64
	arrived    chan struct{}
	gatherWait time.Duration
	procs      atomic.Int64 // tmux processes started, for tests and benchmarks
	textProcs  atomic.Int64 // of those, the ones whose list carried text (payloads)
	lists      atomic.Int64 // command lists run, for tests and benchmarks

	oldPaste atomic.Int32            // pasteUnknown, pasteNew or pasteOld: see payloadsOnStdin
	control  atomic.Pointer[Control] // UseControl
	// marked: the server instances known to carry their marker (Pinned).
	marked sync.Map
}

// DefaultCommandTimeout bounds the wait for one tmux call, so that a wedged
// server cannot hang a delivery forever. A call not answered by then is
// abandoned, never killed.
const DefaultCommandTimeout = 5 * time.Second

// NewExec returns a client for server that runs the tmux binary bin: a path,
// or "" for the first tmux on $PATH (else where a package manager puts it).
func NewExec(server Server, bin string) (*Exec, error) {
	path, err := FindBinary(bin)
	if err != nil {
		return nil, err
	}
	return &Exec{core: &core{server: server, bin: path, timeout: DefaultCommandTimeout,
		arrived: make(chan struct{}, 1), gatherWait: gatherWait}}, nil
}

// FindBinary resolves the tmux binary to run: bin itself when it is a path
// (or a name on $PATH), else the default (defaultBinary).
func FindBinary(bin string) (string, error) {
	if bin == "" {
		path, _, err := defaultBinary()
		return path, err
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		return "", fmt.Errorf("the configured tmux %q cannot be run: %w", bin, err)
	}
	return path, nil
}

// UseControl sends the command lists of c and of all its views through
// ctl while ctl is attached, and through tmux processes while it is not (a
// send never waits for it); nil goes back to processes only. ctl must be
// a control client of c's server.
func (c *Exec) UseControl(ctl *Control) error {
	if ctl != nil && ctl.Server() != c.server {
		return fmt.Errorf("the control client of %s cannot serve %s", ctl.Server().Socket, c.server.Socket)
	}
	c.control.Store(ctl)
	return nil
}

// Bin is the path of the tmux binary this client runs.
func (c *Exec) Bin() string { return c.bin }

func (c *Exec) Server() Server { return c.server }

// paneFormat lists the fields of a Pane, separated by spaces. Only the
// last field, the foreground command, is free text (it may hold spaces);
// the session and window are named by their ids ($N, @N), and their names
// read separately (sessionFormat, windowFormat), so that no free text ever
// stands between two fields. Control characters make no safe separator:
// tmux 3.4 and 3.5 print them as octal escapes ("\037"), and a session
// name can hold those four characters too.
const (
	sep        = " "
	paneFormat = "#{pane_id} #{pane_pid} #{pane_in_mode} #{pane_dead} #{pane_width} #{pane_height} " +
		"#{pane_active} #{window_active} #{session_id} #{window_id} #{pane_index} #{bracket_paste_flag}. #{pane_current_command}"
	paneFields    = 13
	sessionFormat = "#{session_id} #{session_name}"
	windowFormat  = "#{window_id} #{window_index} #{window_name}"
	// serverFormat is the instance and version of the server that answers.
	serverFormat = "#{pid} #{start_time} #{version}"
)

// ListPanes lists every pane of every session, from one moment (one call).
func (c *Exec) ListPanes(ctx context.Context) ([]Pane, error) {
	r, err := c.read(ctx,
		[]string{"list-sessions", "-F", sessionFormat},
		[]string{"list-windows", "-a", "-F", windowFormat},
		[]string{"list-panes", "-a", "-F", paneFormat})
	if err != nil {
		return nil, err
	}
	names := map[string]string{}
	for line := range strings.SplitSeq(strings.TrimSuffix(r.outs[0], "\n"), "\n") {
		if id, name, ok := strings.Cut(line, " "); ok && isID(id, '$') {
			names[id] = name
		}
	}
	return parsePanes(r.outs[2], r.server, parseWindows(r.outs[1]), func(id string) (string, bool) {
		name, ok := names[id]
		return name, ok
	}), nil
}

// SessionPanes lists every pane of the session named exactly session.
func (c *Exec) SessionPanes(ctx context.Context, session string) ([]Pane, error) {
	panes, _, err := c.sessionPanes(ctx, session, false)
	return panes, err
}

// SessionPanesScreen is SessionPanes and the visible screen of the pane
// a bare session target reaches (the one marked Active), in one round
// trip: a send needs both before it starts, and most agents' sessions have
// that one pane only.
func (c *Exec) SessionPanesScreen(ctx context.Context, session string) ([]Pane, []string, error) {
	return c.sessionPanes(ctx, session, true)
}

func (c *Exec) sessionPanes(ctx context.Context, session string, screen bool) ([]Pane, []string, error) {
	// "=NAME:" is an exact match on the session (a bare name prefix-matches).
	at := "=" + session + ":"
	cmds := [][]string{
		{"list-panes", "-s", "-t", at, "-F", paneFormat},
		{"list-windows", "-t", at, "-F", windowFormat},
	}
	if screen {
		cmds = append(cmds, []string{"capture-pane", "-p", "-J", "-t", at})
	}
	r, err := c.read(ctx, cmds...)
	if err != nil {
		return nil, nil, err
	}
	panes := parsePanes(r.outs[0], r.server, parseWindows(r.outs[1]), func(string) (string, bool) { return session, true })
	if len(panes) == 0 {
		return nil, nil, &Error{Command: "list-panes", Socket: c.server.Socket, Stderr: "can't find session: " + session, Kind: ErrSessionNotFound}
	}
	var lines []string
	if screen {
		lines = strings.Split(strings.TrimSuffix(r.outs[2], "\n"), "\n")
	}
	return panes, lines, nil
}

// window is what a pane's listing says of its window.
type window struct {
	index int
	name  string
}

// parseWindows reads list-windows output in windowFormat, by window id.
func parseWindows(out string) map[string]window {
	ws := map[string]window{}
	for line := range strings.SplitSeq(strings.TrimSuffix(out, "\n"), "\n") {
		f := strings.SplitN(line, sep, 3)
		if len(f) != 3 || !isID(f[0], '@') {
			continue
		}
		if i, err := strconv.Atoi(f[1]); err == nil {
			ws[f[0]] = window{index: i, name: f[2]}
		}
	}
	return ws
}

// parsePanes reads list-panes output in paneFormat, naming sessions by
// their id. A line that does not parse, or a session that seems to have
// two active panes (a foreground command whose name holds a newline could
// forge a line), leaves that session out: better no target than a wrong
// one.
func parsePanes(out string, server Instance, windows map[string]window, sessionName func(id string) (string, bool)) []Pane {
	var panes []Pane
	active := map[string]int{}
	bad := map[string]bool{}
	for line := range strings.SplitSeq(strings.TrimRight(out, "\n"), "\n") {
		f := strings.SplitN(line, sep, paneFields)
		if len(f) != paneFields || !isID(f[0], '%') || !isID(f[8], '$') || !isID(f[9], '@') {
			if len(f) > 8 && isID(f[8], '$') {
				bad[f[8]] = true
			}
			continue
		}
		name, ok := sessionName(f[8])
		if !ok {
			continue
		}
		pid, err1 := strconv.Atoi(f[1])
		w, err2 := strconv.Atoi(f[4])
		h, err3 := strconv.Atoi(f[5])
		idx, err4 := strconv.Atoi(f[10])
		if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
			bad[f[8]] = true
			continue
		}
		win := windows[f[9]]
		p := Pane{
			ID: f[0], PID: pid, InMode: f[2] == "1", Dead: f[3] == "1",
			Width: w, Height: h, Command: f[12], Session: name, sessionID: f[8],
			BracketedPaste: pasteMode(f[11]),
			Window:         f[9], WindowIndex: win.index, WindowName: win.name, Index: idx,
			Active: f[6] == "1" && f[7] == "1", Server: server,
		}
		if p.Active {
			active[f[8]]++
		}
		panes = append(panes, p)
	}
	kept := panes[:0]
	for _, p := range panes {
		if !bad[p.sessionID] && active[p.sessionID] == 1 {
			kept = append(kept, p)
		}
	}
	return kept
}

// pasteMode reads #{bracket_paste_flag}, followed by a dot so that the
// empty expansion of tmux before 3.7 still fills its field.
func pasteMode(field string) PasteMode {
	switch field {
	case "1.":
		return PasteOn
	case "0.":
		return PasteOff
	}
	return PasteUnknown
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

// reading is the answer to several read commands run in one round trip.
type reading struct {
	outs   []string // each command's output
	server Instance // the server that answered
}

// read runs read commands in one round trip and returns each one's
// output. Marker lines between them tell them apart; the first carries the
// server's instance and version, so that knowing them costs no call of its
// own. A server instance seen for the first time gets its marker (Pinned's
// guard) before read returns.
func (c *Exec) read(ctx context.Context, cmds ...[]string) (reading, error) {
	nonce := newNonce()
	mark := func(i int) string { return "agentmsg-mark-" + nonce + "-" + strconv.Itoa(i) }
	list := [][]string{{"display-message", "-p", mark(0) + " " + serverFormat}}
	for i, cmd := range cmds {
		list = append(list, cmd)
		if i < len(cmds)-1 {
			list = append(list, []string{"display-message", "-p", mark(i + 1)})
		}
	}
	firstContact := c.firstContact()
	if firstContact {
		// The hidden variables, to learn whether this instance is marked.
		list = append(list, []string{"display-message", "-p", mark(len(cmds))}, []string{"show-environment", "-g", "-h"})
	}
	out, err := c.doCommands(ctx, false, nil, list)
	if err != nil {
		return reading{}, err
	}
	bad := &Error{Command: cmds[0][0], Socket: c.server.Socket, Stderr: "tmux's answer lacked its markers", ExitCode: -1}
	head, rest, ok := strings.Cut(string(out), mark(0)+" ")
	if !ok || head != "" {
		return reading{}, bad
	}
	info, rest, ok := strings.Cut(rest, "\n")
	if !ok {
		return reading{}, bad
	}
	r := reading{}
	f := strings.SplitN(info, " ", 3)
	if len(f) != 3 {
		return reading{}, bad
	}
	r.server.PID, _ = strconv.Atoi(f[0])
	r.server.Start, _ = strconv.ParseInt(f[1], 10, 64)
	c.noteVersion(Version(f[2]))
	n := len(cmds)
	if firstContact {
		n++
	}
	for i := 1; i < n; i++ {
		out, after, ok := strings.Cut(rest, mark(i)+"\n")
		if !ok {
			return reading{}, bad
		}
		r.outs = append(r.outs, out)
		rest = after
	}
	r.outs = append(r.outs, rest)
	if firstContact {
		hidden := r.outs[len(cmds)]
		r.outs = r.outs[:len(cmds)]
		if slices.Contains(strings.Split(hidden, "\n"), r.server.marker()+"=1") {
			c.marked.Store(r.server, true)
		}
	}
	if err := c.mark(ctx, r.server); err != nil {
		return reading{}, err
	}
	return r, nil
}

// firstContact reports whether this client has yet to learn of any
// server instance.
func (c *Exec) firstContact() bool {
	none := true
	c.marked.Range(func(any, any) bool { none = false; return false })
	return none
}

// mark gives server instance s its marker, a hidden global environment
// variable named after it (Instance.marker), unless it is known to have
// one: Pinned's guard asks for that variable, and only the instance that
// carries it answers. The variable is set only where the server's own pid
// and start time match, so a server that replaced s between our look and
// this call never gets s's name. Once per instance and process; hidden
// variables are not passed to the programs in new panes.
func (c *Exec) mark(ctx context.Context, s Instance) error {
	if s.IsZero() {
		return nil
	}
	if _, ok := c.marked.Load(s); ok {
		return nil
	}
	_, err := c.core.submit(ctx, &call{write: true, alone: true, cmds: [][]string{{"if-shell", "-F",
		"#{==:#{pid}_#{start_time}," + s.String() + "}",
		"set-environment -g -h " + s.marker() + " 1"}}})
	if err != nil {
		return err
	}
	c.marked.Store(s, true)
	return nil
}

// Pinned is a view of c for typing into p only (see Client.Pinned).
func (c *Exec) Pinned(p Pane) Client {
	return &Exec{core: c.core, pin: &p}
}

// target is how a command names pane: by its full Target when this view is
// pinned to it.
func (c *Exec) target(pane string) string {
	if c.pin != nil && pane == c.pin.ID {
		return c.pin.Target()
	}
	return pane
}

// LeaveModeCapture leaves any mode the pane is in and captures its visible
// screen, in one round trip.
func (c *Exec) LeaveModeCapture(ctx context.Context, pane string) ([]string, error) {
	pane = c.target(pane)
	out, err := c.run(ctx, "copy-mode", "-q", "-t", pane, ";", "capture-pane", "-p", "-J", "-t", pane)
	if err != nil {
		return nil, err
	}
	return strings.Split(strings.TrimSuffix(string(out), "\n"), "\n"), nil
}

// LookForeground captures the pane's visible screen and says its
// foreground command (pane_current_command), in one round trip, leaving
// any mode first when leave is set: a delivery that waits for its agent
// sees a launcher (a wrapper script, npx, pyenv's shim) hand the pane to
// the agent in the looks it takes anyway, at no tmux process more.
func (c *Exec) LookForeground(ctx context.Context, pane string, leave bool) ([]string, string, error) {
	pane = c.target(pane)
	// The command first: the screen after it is every line that is left.
	args := []string{"display-message", "-p", "-t", pane, "#{pane_current_command}", ";", "capture-pane", "-p", "-J", "-t", pane}
	if leave {
		args = append([]string{"copy-mode", "-q", "-t", pane, ";"}, args...)
	}
	out, err := c.run(ctx, args...)
	if err != nil {
		return nil, "", err
	}
	command, screen, _ := strings.Cut(string(out), "\n")
	return strings.Split(strings.TrimSuffix(screen, "\n"), "\n"), command, nil
}

func (c *Exec) LeaveMode(ctx context.Context, pane string) error {
	_, err := c.run(ctx, "copy-mode", "-q", "-t", c.target(pane))
	return err
}

func (c *Exec) Capture(ctx context.Context, pane string, history int) ([]string, error) {
	args := []string{"capture-pane", "-p", "-J", "-t", c.target(pane)}
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
	//
	// Only into a live pane: tmux before 3.4 segfaults on a bracketed
	// paste into a pane whose program has exited and that stays
	// (remain-on-exit), ending every session (measured: 3.2a and 3.3a;
	// 3.4 and 3.7c refuse it). A look a moment before cannot rule that out,
	// so the server itself checks, in the turn that pastes: if-shell -F
	// runs no shell, and nothing ends a pane between its two commands.
	// The pane is named by its full target in a command that fails when
	// the target does not reach it, and sends nothing: send-keys with no
	// key (if-shell and display-message fall back to another pane when
	// theirs is missing, and a pane that moved to another window must fail
	// the list). Inside the command strings, which tmux parses, it is
	// named by its id (unique on this server).
	// Each branch runs two commands, so that through a control client the
	// call's answer is the same number of blocks either way (call.inserted).
	out, err := c.core.submit(ctx, &call{write: true, pin: c.pinned(), payloads: []string{text}, inserted: 2, cmds: [][]string{
		{"load-buffer", "-b", buffer, payloadArg(0)},
		{"send-keys", "-t", c.target(pane)},
		{"if-shell", "-F", "-t", pane, "#{pane_dead}",
			"delete-buffer -b " + buffer + " ; display-message -p " + paneDeadMark,
			"paste-buffer -p -d -r -b " + buffer + " -t " + pane + " ; display-message -p ''"},
	}})
	if err == nil && bytes.Contains(out, []byte(paneDeadMark)) {
		return &Error{Command: "paste-buffer", Socket: c.server.Socket, Stderr: "target pane has exited", Kind: ErrPaneDead}
	}
	if err != nil {
		// The paste failed after the load: do not leave our text behind.
		_, _ = c.do(context.WithoutCancel(ctx), true, nil, "delete-buffer", "-b", buffer)
	}
	return err
}

// paneDeadMark is what Paste's command list prints instead of pasting
// into a dead pane.
const paneDeadMark = "agentmsg-pane-dead"

func (c *Exec) SendBytes(ctx context.Context, pane string, b ...byte) error {
	args := []string{"send-keys", "-t", c.target(pane), "-H"}
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

// defaultBinary is the first tmux on $PATH, else one in the directories
// where the system's package manager installs it (packageDirs: Homebrew's
// on macOS), which a daemon started by launchd or a desktop app often has
// no $PATH to; why says which.
func defaultBinary() (path, why string, err error) {
	return lookTmux(exec.LookPath, packageDirs)
}

func lookTmux(lookPath func(string) (string, error), dirs []string) (path, why string, err error) {
	if path, err := lookPath("tmux"); err == nil {
		return path, "the first tmux on $PATH", nil
	}
	for _, d := range dirs {
		p := filepath.Join(d, "tmux")
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, "not on $PATH; the one in " + d, nil
		}
	}
	return "", "", ErrNotInstalled
}
