package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// RunTimeout bounds one agentmsg run unless the caller's context ends
// sooner: above the CLI's default 30 s ready timeout, so that only a real
// hang trips it.
const RunTimeout = 40 * time.Second

// Result is one finished agentmsg run.
type Result struct {
	Stdout, Stderr string
	Code           int
	Elapsed        time.Duration
}

func (r Result) String() string {
	return fmt.Sprintf("exit %d after %s\nstdout:\n%s\nstderr:\n%s", r.Code, r.Elapsed.Round(time.Millisecond), r.Stdout, r.Stderr)
}

// Run runs agentmsg -S SOCKET args... with no stdin.
func (s *Server) Run(args ...string) (Result, error) {
	return s.Exec(context.Background(), nil, s.withSocket(args)...)
}

// RunStdin runs agentmsg -S SOCKET args... with stdin as its input.
func (s *Server) RunStdin(stdin string, args ...string) (Result, error) {
	return s.Exec(context.Background(), strings.NewReader(stdin), s.withSocket(args)...)
}

func (s *Server) withSocket(args []string) []string {
	return append([]string{"-S", s.Socket}, args...)
}

// Exec runs agentmsg with exactly args (no -S added) in the server's
// hermetic environment, within RunTimeout. A nil stdin reads as empty. The
// error is for a run that could not start or did not finish; a non-zero
// exit is in Result.Code.
func (s *Server) Exec(ctx context.Context, stdin io.Reader, args ...string) (Result, error) {
	return s.ExecEnv(ctx, stdin, nil, args...)
}

// RunEnv is Run with env added to the environment (later entries win).
func (s *Server) RunEnv(env []string, args ...string) (Result, error) {
	return s.ExecEnv(context.Background(), nil, env, s.withSocket(args)...)
}

// ExecEnv is Exec with env added to the environment (later entries win).
func (s *Server) ExecEnv(ctx context.Context, stdin io.Reader, env []string, args ...string) (Result, error) {
	ctx, cancel := context.WithTimeout(ctx, RunTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.Bins.Agentmsg, args...)
	cmd.Env = append(s.Env(), env...)
	cmd.Stdin = stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// A tmux child left holding the pipes must not keep Wait blocked.
	cmd.WaitDelay = 2 * time.Second
	start := time.Now()
	err := cmd.Run()
	res := Result{Stdout: stdout.String(), Stderr: stderr.String(), Code: -1, Elapsed: time.Since(start)}
	var exitErr *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return res, fmt.Errorf("agentmsg %s: no exit within %s: %w\n%s", strings.Join(args, " "), RunTimeout, ctx.Err(), res)
	case err == nil:
		res.Code = 0
	case errors.As(err, &exitErr):
		res.Code = exitErr.ExitCode()
	default:
		return res, fmt.Errorf("agentmsg %s: %w", strings.Join(args, " "), err)
	}
	return res, nil
}

// Env is agentmsg's environment: AgentmsgEnv in the server's dir, sender
// "tester", and the tmux the server runs.
func (s *Server) Env() []string {
	env := append(AgentmsgEnv(s.Dir, "tester"), "AGENTMSG_TMUX="+TmuxBin()) // the matrix's tmux, or $PATH's
	if s.direct {
		env = append(env, Direct)
	}
	return env
}

// RunsDirect makes every agentmsg this server's tests run a process of its
// own, and stops the server's daemon in DaemonMode (its own deliver passes
// would be a second deliverer): for a test of what only a process shows (a
// sender killed, stopped or interrupted mid-send, its pid in a lock file,
// its own environment choosing where locks go).
func (s *Server) RunsDirect() error {
	s.direct = true
	return s.StopDaemon()
}

// AgentmsgEnv is an environment for an agentmsg under test: the caller's,
// without anything that would point it at another tmux server or another
// configuration, with sender from and every XDG dir inside dir (config
// file, mailbox, locks), and tmux's default socket directory too.
func AgentmsgEnv(dir, from string) []string {
	env := withoutVars(os.Environ(), "TMUX", "TMUX_PANE", "TMUX_TMPDIR", "AGENTMSG_*",
		"XDG_CONFIG_HOME", "XDG_RUNTIME_DIR", "XDG_STATE_HOME")
	return append(env,
		// tmux's default server, for a run that names none, is one in dir:
		// a test never reaches the user's, nor leaves files beside it.
		"TMUX_TMPDIR="+dir,
		"AGENTMSG_FROM="+from,
		// Every change of a message's state is checked against the
		// documented state machine (mailbox.Transitions).
		"AGENTMSG_CHECK_TRANSITIONS=1",
		"XDG_CONFIG_HOME="+filepath.Join(dir, "config"),
		"XDG_RUNTIME_DIR="+filepath.Join(dir, "runtime"),
		"XDG_STATE_HOME="+filepath.Join(dir, "state"),
	)
}
