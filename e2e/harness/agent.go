package harness

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agentmsg/agentmsg/internal/procs"
)

// StartTimeout is how long StartAgent waits for the stand-in's "started"
// record.
const StartTimeout = 10 * time.Second

// Record is one line of a stand-in's log.
type Record struct {
	T      string `json:"t"`
	Kind   string `json:"kind"` // started, prompt, dialog-key, interrupt
	Text   string `json:"text"`
	Queued bool   `json:"queued,omitempty"`
}

// AgentOption sets one of the stand-in's flags, or how it is started.
type AgentOption func(*agentStart)

type agentStart struct {
	args   []string
	shell  bool          // run under a shell, not as the pane's own process
	behind time.Duration // run by a launcher that waits this long first
	env    []string      // VAR=value for the pane, besides the server's environment
	launch Launcher
	exe    string // the stand-in by another name (a link to it), "" for its own
}

// Launcher starts command (the stand-in and its arguments) in a new
// session, with env added to its pane's environment, and returns the
// pane's id.
type Launcher func(session string, env, command []string) (pane string, err error)

// LaunchWith starts the stand-in another way than tmux new-session (with
// agentmsg spawn, say), at first and at every Agent.Start.
func LaunchWith(l Launcher) AgentOption { return func(st *agentStart) { st.launch = l } }

func flagOption(name, value string) AgentOption {
	return func(st *agentStart) { st.args = append(st.args, "-"+name, value) }
}

// NoCue starts the stand-in without a cue file (SetState cannot switch
// it): each stand-in polls its cue every 10 ms, and a hundred of them
// polling took most of a core from what a benchmark measures.
func NoCue() AgentOption {
	return func(st *agentStart) {
		if i := slices.Index(st.args, "-cue"); i >= 0 {
			st.args = slices.Delete(st.args, i, i+2)
		}
	}
}

// Stoppable runs the stand-in under a shell, so that Stop can freeze it:
// tmux sends SIGCONT at once to a pane's own process that stops.
func Stoppable() AgentOption { return func(st *agentStart) { st.shell = true } }

// BehindLauncher starts the stand-in the way pyenv's bash shim, npx or a
// wrapper script start an agent CLI: sh -c 'sleep WAIT; exec standin …'.
// Until then the pane's foreground command is sh, and its screen blank.
func BehindLauncher(wait time.Duration) AgentOption {
	return func(st *agentStart) { st.behind = wait }
}

// Env sets VAR=value pairs in the pane's environment (new-session -e).
func Env(kv ...string) AgentOption {
	return func(st *agentStart) { st.env = append(st.env, kv...) }
}

// OnSubmit runs command (sh -c) for each prompt the stand-in submits, with
// the prompt as JSON on stdin, as Claude Code runs a UserPromptSubmit hook.
func OnSubmit(command string) AgentOption { return flagOption("on-submit", command) }

// OnTurnEnd runs command (sh -c) when a turn ends, as Claude Code runs a
// Stop hook.
func OnTurnEnd(command string) AgentOption { return flagOption("on-turn-end", command) }

// NoBracketedPaste starts a program that never asks for bracketed paste:
// each pasted newline reaches it as Enter.
func NoBracketedPaste() AgentOption {
	return func(st *agentStart) { st.args = append(st.args, "-bracketed-paste=false") } // a bool flag takes no separate value
}

// Executable runs the stand-in through path, a link to it: tmux then names
// the pane's command after the link, as a profile's commands match it.
func Executable(path string) AgentOption { return func(st *agentStart) { st.exe = path } }

// Style is "claude" (the default) or "plain".
func Style(style string) AgentOption { return flagOption("style", style) }

// InitialState is "ready" (the default), "busy" or "dialog".
func InitialState(state string) AgentOption { return flagOption("state", state) }

// BusyAfterSubmit keeps the agent busy for d after each prompt.
func BusyAfterSubmit(d time.Duration) AgentOption { return flagOption("busy-after-submit", d.String()) }

// Queue makes Enter while busy queue the draft.
func Queue() AgentOption { return func(st *agentStart) { st.args = append(st.args, "-queue") } }

// NoQueue makes Enter while busy do nothing (the default queues, as
// Claude Code does).
func NoQueue() AgentOption {
	return func(st *agentStart) { st.args = append(st.args, "-queue=false") }
}

// FoldBytes folds pastes longer than n bytes into a label (<= 0: never).
func FoldBytes(n int) AgentOption { return flagOption("fold-bytes", strconv.Itoa(n)) }

// FoldLines folds pastes of more than n lines into a label (<= 0: never).
func FoldLines(n int) AgentOption { return flagOption("fold-lines", strconv.Itoa(n)) }

// DropEnter ignores the first n Enters that would submit.
func DropEnter(n int) AgentOption { return flagOption("drop-enter", strconv.Itoa(n)) }

// EnterGuard turns an Enter within d of typing into a newline.
func EnterGuard(d time.Duration) AgentOption { return flagOption("enter-guard", d.String()) }

// EchoDelay shows each submitted prompt in the transcript d late.
func EchoDelay(d time.Duration) AgentOption { return flagOption("echo-delay", d.String()) }

// OutputLines prints n lines of output under each submitted prompt.
func OutputLines(n int) AgentOption { return flagOption("output-lines", strconv.Itoa(n)) }

// Agent is one stand-in running in its own session.
type Agent struct {
	Server  *Server
	Session string
	Pane    string // "%N", used for every command after start
	LogPath string
	CuePath string
	shell   bool // started under a shell (Stoppable)
	stopped int  // the pid Stop froze
	start   func() (pane string, err error)
}

// StartAgent starts the stand-in in a new 200x50 session and waits for it
// to log "started".
func (s *Server) StartAgent(session string, opts ...AgentOption) (*Agent, error) {
	// Files are numbered, not named after the session: a test may use
	// session names no file should carry.
	n := s.agents.Add(1)
	a := &Agent{
		Server:  s,
		Session: session,
		LogPath: filepath.Join(s.Dir, "logs", fmt.Sprintf("agent%d.log", n)),
		CuePath: filepath.Join(s.Dir, "logs", fmt.Sprintf("agent%d.cue", n)),
	}
	// -queue: like Claude Code, whose screen the stand-in draws, it queues
	// what is submitted while it is busy (NoQueue turns that off).
	st := agentStart{args: []string{"-log", a.LogPath, "-cue", a.CuePath, "-queue"}}
	for _, o := range opts {
		o(&st)
	}
	// More than one argument after the options: tmux runs the program
	// itself, no shell in between to reinterpret anything. Under a shell,
	// the arguments go as "$@", not through its parser.
	exe := s.Bins.Standin
	if st.exe != "" {
		exe = st.exe
	}
	command := []string{exe}
	switch {
	case st.shell:
		a.shell = true
		command = []string{"/bin/sh", "-c", `"$0" "$@"; exit $?`, exe}
	case st.behind > 0:
		command = []string{"/bin/sh", "-c", fmt.Sprintf(`sleep %.3f; exec "$0" "$@"`, st.behind.Seconds()), exe}
	}
	command = append(command, st.args...)
	if st.launch == nil {
		st.launch = s.newSession
	}
	a.start = func() (string, error) { return st.launch(session, st.env, command) }
	if err := a.Start(); err != nil {
		return nil, err
	}
	return a, nil
}

// startsAtOnce bounds the agents a server starts at once. Each start is a
// tmux client, a stand-in's start-up and a poll of its log and session
// every 10 ms; 500 of them at once kept a 2-core machine so busy that a
// tmux client's output pipe outlived the harness's WaitDelay.
const startsAtOnce = 16

// Start runs the agent again with the same program, options and log, in a
// new session of its name: after its server was restarted, or its session
// ended. It waits for the new start in the log.
func (a *Agent) Start() error {
	a.Server.starting <- struct{}{}
	defer func() { <-a.Server.starting }()
	recs, err := a.Records()
	if err != nil {
		return err
	}
	if a.Pane, err = a.start(); err != nil {
		return err
	}
	return a.waitStarted(countKind(recs, "started"))
}

// newSession is the usual Launcher: a 200x50 session of its own.
func (s *Server) newSession(session string, env, command []string) (string, error) {
	args := []string{"new-session", "-d", "-P", "-F", "#{pane_id}", "-s", session, "-x", "200", "-y", "50"}
	for _, kv := range env {
		args = append(args, "-e", kv)
	}
	out, err := s.Tmux(append(append(args, "--"), command...)...)
	return strings.TrimSpace(out), err
}

func countKind(recs []Record, kind string) int {
	n := 0
	for _, r := range recs {
		if r.Kind == kind {
			n++
		}
	}
	return n
}

// waitStarted waits for the log to hold more than before "started" records.
func (a *Agent) waitStarted(before int) error {
	deadline := time.Now().Add(StartTimeout)
	for {
		recs, err := a.Records()
		if err != nil {
			return err
		}
		if countKind(recs, "started") > before {
			return nil
		}
		if _, err := a.Server.Tmux("has-session", "-t", "="+a.Session); err != nil {
			return fmt.Errorf("stand-in in %s exited before it started: %w", a.Session, err)
		}
		if time.Now().After(deadline) {
			screen, _ := a.Capture()
			return fmt.Errorf("stand-in in %s did not start within %s; screen:\n%s", a.Session, StartTimeout, screen)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Records reads the whole log; a missing log is an empty one.
func (a *Agent) Records() ([]Record, error) {
	b, err := os.ReadFile(a.LogPath)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var recs []Record
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for sc.Scan() {
		var r Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("%s: bad log line %q: %w", a.LogPath, sc.Text(), err)
		}
		recs = append(recs, r)
	}
	return recs, sc.Err()
}

// Received is the text of every prompt the agent submitted, in order.
func (a *Agent) Received() ([]string, error) {
	return a.OfKind("prompt")
}

// OfKind is the text of every record of kind.
func (a *Agent) OfKind(kind string) ([]string, error) {
	recs, err := a.Records()
	var out []string
	for _, r := range recs {
		if r.Kind == kind {
			out = append(out, r.Text)
		}
	}
	return out, err
}

// WaitReceived polls the log until it holds at least n prompts or timeout
// passes, and returns what it holds then.
func (a *Agent) WaitReceived(n int, timeout time.Duration) ([]string, error) {
	deadline := time.Now().Add(timeout)
	for {
		got, err := a.Received()
		if err != nil || len(got) >= n {
			return got, err
		}
		if time.Now().After(deadline) {
			return got, fmt.Errorf("%s: %d of %d prompts after %s", a.Session, len(got), n, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// SetState cues the stand-in into "ready", "busy" or "dialog". The stand-in
// acts on a change of the cue file only, so cueing the same word twice in a
// row does nothing the second time.
func (a *Agent) SetState(state string) error {
	// Write then rename: the stand-in never reads half a word.
	tmp := a.CuePath + ".tmp"
	if err := os.WriteFile(tmp, []byte(state+"\n"), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, a.CuePath)
}

// Type types text into the agent's box as a person would.
func (a *Agent) Type(text string) error { return a.Server.TypeLiteral(a.Pane, text) }

// Press sends key names (Enter, Escape) to the agent's pane.
func (a *Agent) Press(keys ...string) error { return a.Server.PressKeys(a.Pane, keys...) }

// Capture returns the agent's visible screen.
func (a *Agent) Capture() (string, error) { return a.Server.Capture(a.Pane) }

// WaitScreen polls the screen until it contains want or timeout passes.
func (a *Agent) WaitScreen(want string, timeout time.Duration) (string, error) {
	deadline := time.Now().Add(timeout)
	for {
		screen, err := a.Capture()
		if err != nil || strings.Contains(screen, want) {
			return screen, err
		}
		if time.Now().After(deadline) {
			return screen, fmt.Errorf("%s: screen does not show %q after %s", a.Session, want, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// PID is the pane's first process: the stand-in itself. Use it, not a
// process search by name, to signal the stand-in.
func (a *Agent) PID() (int, error) {
	out, err := a.Server.Tmux("display-message", "-p", "-t", a.Pane, "#{pane_pid}")
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(out))
}

// Stop freezes the stand-in (SIGSTOP), as a hung agent is: it reads no
// input and draws nothing until Continue. It needs Stoppable.
func (a *Agent) Stop() error {
	if !a.shell {
		return errors.New("Stop needs a stand-in started with Stoppable")
	}
	pid, err := a.PID()
	if err != nil {
		return err
	}
	all, err := procs.All()
	if err != nil {
		return err
	}
	var children []int
	for _, p := range all {
		if p.PPID == pid {
			children = append(children, p.PID)
		}
	}
	if len(children) != 1 {
		return fmt.Errorf("the shell in %s has children %v, want the stand-in alone", a.Session, children)
	}
	a.stopped = children[0]
	if err := syscall.Kill(a.stopped, syscall.SIGSTOP); err != nil {
		return err
	}
	// The signal takes effect asynchronously: wait for state T.
	deadline := time.Now().Add(5 * time.Second)
	for {
		p, err := procs.Get(a.stopped)
		if err != nil {
			return err
		}
		if p.State == 'T' {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the stand-in in %s did not stop: state %c", a.Session, p.State)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Continue thaws a stand-in that Stop froze.
func (a *Agent) Continue() error {
	if a.stopped == 0 {
		return nil
	}
	return syscall.Kill(a.stopped, syscall.SIGCONT)
}

// Kill ends the agent's session.
func (a *Agent) Kill() error {
	_, err := a.Server.Tmux("kill-session", "-t", "="+a.Session)
	return err
}
