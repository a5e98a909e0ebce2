package tmux

import (
	"errors"
	"fmt"
	"strings"
)

// Kinds of failure, classified from tmux's stderr (never from argv, which
// may hold anything).
var (
	ErrNotInstalled    = errors.New("tmux is not installed (macOS: brew install tmux; Debian/Ubuntu: sudo apt-get install tmux)")
	ErrNoServer        = errors.New("no tmux server is running on that socket")
	ErrSessionNotFound = errors.New("no such tmux session")
	ErrPaneNotFound    = errors.New("no such tmux pane")
	// ErrServerReplaced: the server at the socket is not the run of it
	// that the pane was found on (it was restarted), so the pane's id may
	// name another agent's pane now. It wraps ErrPaneNotFound: the pane
	// that was found is gone.
	ErrServerReplaced = fmt.Errorf("%w: the tmux server was replaced since the pane was found", ErrPaneNotFound)
	// ErrPaneDead: the pane's program has exited and the pane stays
	// (remain-on-exit); nothing was typed into it. It wraps ErrPaneNotFound:
	// the agent that was found is gone.
	ErrPaneDead = fmt.Errorf("%w: its program has exited", ErrPaneNotFound)
)

// Error is a failed tmux command with what tmux said.
type Error struct {
	Command  string // the tmux subcommand(s), e.g. "paste-buffer"; never the data
	Socket   string
	ExitCode int
	Stderr   string
	Kind     error // one of the Err* above, or nil
}

func (e *Error) Error() string {
	if e.Kind == ErrNoServer {
		// tmux's own words differ by command ("no server running",
		// "error connecting to ... (No such file or directory)", "no
		// sessions"); one sentence serves the reader better.
		return fmt.Sprintf("no tmux server is running on %s (start one, or choose another with -L NAME or -S PATH)", e.Socket)
	}
	if e.Kind == ErrServerReplaced {
		return fmt.Sprintf("the tmux server on %s was restarted since the agent's pane was found there; nothing was run on the new one", e.Socket)
	}
	msg := strings.TrimSpace(e.Stderr)
	if msg == "" {
		msg = fmt.Sprintf("exit status %d", e.ExitCode)
	}
	return fmt.Sprintf("tmux %s on %s: %s", e.Command, e.Socket, msg)
}

func (e *Error) Unwrap() error { return e.Kind }

func classify(stderr string) error {
	switch {
	case strings.Contains(stderr, "no server running"),
		strings.Contains(stderr, "error connecting to"),
		// "server exited unexpectedly", or a control client's "%exit
		// server exited" (kill-server).
		strings.Contains(stderr, "server exited"),
		// attach-session on a socket with no server starts one that has
		// no sessions and exits at once: for us, no server.
		strings.Contains(stderr, "no sessions"):
		return ErrNoServer
	case strings.Contains(stderr, "unknown variable: AGENTMSG_SERVER_"):
		return ErrServerReplaced
	case strings.Contains(stderr, "can't find session"),
		// A server with no sessions yet (one starting up at the socket)
		// answers a command that needs a session so.
		strings.Contains(stderr, "no current target"):
		return ErrSessionNotFound
	case strings.Contains(stderr, "target pane has exited"): // tmux 3.4 and newer, pasting
		return ErrPaneDead
	case strings.Contains(stderr, "can't find pane"),
		strings.Contains(stderr, "can't find window"):
		return ErrPaneNotFound
	}
	return nil
}
