package tmux

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Sessions is what starting, stopping and watching agents needs of tmux,
// beside what a delivery needs (Client). *Exec implements it; tests of the
// lifecycle's logic use a fake.
type Sessions interface {
	Client
	// NewSession creates a detached session named exactly session running
	// argv in dir with env added, and returns its pane and first process.
	NewSession(ctx context.Context, session, dir string, env, argv []string) (pane string, pid int, err error)
	// KillSession ends the session named exactly session; one already gone
	// is no error.
	KillSession(ctx context.Context, session string) error
	// HasSession reports whether a session named exactly session exists.
	HasSession(ctx context.Context, session string) (bool, error)
	// Activity is the last output time of every session, by name.
	Activity(ctx context.Context) (map[string]time.Time, error)
}

// ErrDuplicateSession is new-session's "duplicate session" (an exact name).
var ErrDuplicateSession = errors.New("a session of that name exists")

// NewSession creates a detached 200x50 session named exactly session,
// running argv in dir with env (KEY=VALUE) added. tmux execs argv itself
// when it has two or more words, so no shell re-reads it. It starts the
// server when none runs on the socket. It returns the pane's id and first
// process.
//
// The new-session command reaches tmux as a file it sources (sourced),
// never as a tmux process's arguments: /proc/PID/cmdline is readable by
// every local user, and env holds secrets (the agent's MCP token, whatever
// a user passes with spawn --env).
func (c *Exec) NewSession(ctx context.Context, session, dir string, env, argv []string) (pane string, pid int, err error) {
	args := []string{"new-session", "-d", "-P", "-F", "#{pane_id}" + sep + "#{pane_pid}",
		"-s", session, "-x", "200", "-y", "50"}
	if dir != "" {
		args = append(args, "-c", dir)
	}
	for _, kv := range env {
		args = append(args, "-e", kv)
	}
	args = append(append(args, "--"), argv...)
	// tmux makes its own socket directory (0700) when it starts a server
	// on its default path, but not for -S, which every agentmsg call uses:
	// on a machine where no server has run yet, the first spawn made none.
	if err := os.Mkdir(filepath.Dir(c.server.Socket), 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", 0, fmt.Errorf("making tmux's socket directory: %w", err)
	}
	out, err := c.sourced(ctx, args)
	if err != nil {
		var te *Error
		if errors.As(err, &te) && strings.Contains(te.Stderr, "duplicate session") {
			te.Kind = ErrDuplicateSession
		}
		return "", 0, err
	}
	id, p, _ := strings.Cut(strings.TrimSpace(string(out)), sep)
	pid, _ = strconv.Atoi(p)
	return id, pid, nil
}

// sourced runs cmd, a command that changes the server, in a tmux process
// of its own that reads it from a file it sources: an in-memory file
// written whole before the process starts (as a paste's text), quoted
// byte for byte (controlArg), so nothing of cmd is on the process's
// command line. start-server first, since source-file alone starts none.
// It runs alone, not in a batched command list: a command that fails
// inside a sourced file does not end the list, so its list's markers
// could not tell that it failed; alone, the exit code and stderr do.
func (c *Exec) sourced(ctx context.Context, cmd []string) ([]byte, error) {
	line := controlLine([][]string{cmd}, nil) + "\n"
	onStdin := c.payloadsOnStdin()
	args := []string{"-S", c.server.Socket, "start-server", ";", "source-file", listArg(payloadArg(0), onStdin)}
	start := time.Now()
	c.procs.Add(1)
	res := runProc(ctx, c.bin, args, []string{line}, onStdin, c.timeout, true)
	var err error
	switch {
	case res.err == errAbandoned:
		msg := abandonedMessage(c.timeout, true)
		err = &Error{Command: cmd[0], Socket: c.server.Socket, Stderr: msg, ExitCode: -1, Kind: classify(msg)}
	case res.err != nil:
		err = &Error{Command: cmd[0], Socket: c.server.Socket, Stderr: res.err.Error(), ExitCode: -1}
	case res.exitCode != 0 || res.stderr != "":
		stderr := strings.TrimSpace(res.stderr)
		if stderr == "" {
			stderr = "exit status " + strconv.Itoa(res.exitCode)
		}
		err = &Error{Command: cmd[0], Socket: c.server.Socket, Stderr: stderr, ExitCode: res.exitCode, Kind: classify(stderr)}
	}
	if c.Trace != nil {
		c.Trace(cmd[0], time.Since(start), err)
	}
	return res.stdout, err
}

// KillSession ends the session named exactly session; one already gone
// (or a server gone with it) is no error.
func (c *Exec) KillSession(ctx context.Context, session string) error {
	_, err := c.do(ctx, true, nil, "kill-session", "-t", "="+session)
	if errors.Is(err, ErrSessionNotFound) || errors.Is(err, ErrNoServer) {
		return nil
	}
	return err
}

// HasSession reports whether a session named exactly session exists.
func (c *Exec) HasSession(ctx context.Context, session string) (bool, error) {
	_, err := c.run(ctx, "has-session", "-t", "="+session)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, ErrSessionNotFound), errors.Is(err, ErrNoServer):
		return false, nil
	}
	return false, err
}

// Activity is the last output time of every session's active window, by
// session name (#{window_activity}); empty when no server runs.
func (c *Exec) Activity(ctx context.Context) (map[string]time.Time, error) {
	out, err := c.run(ctx, "list-windows", "-a", "-F", "#{window_active}"+sep+"#{window_activity}"+sep+"#{session_name}")
	if errors.Is(err, ErrNoServer) {
		return map[string]time.Time{}, nil
	}
	if err != nil {
		return nil, err
	}
	m := map[string]time.Time{}
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		// The session name last: nothing it holds can shift the others.
		f := strings.SplitN(line, sep, 3)
		if len(f) != 3 || f[0] != "1" {
			continue
		}
		if sec, err := strconv.ParseInt(f[1], 10, 64); err == nil && sec > 0 {
			m[f[2]] = time.Unix(sec, 0)
		}
	}
	return m, nil
}

// SwitchClient makes the tmux client the caller runs in show pane: its
// session, its window, and the pane itself as the active one. tmux finds
// that client from the caller's $TMUX, so it is only for a caller inside
// this server; one with no client attached fails ("no current client").
func (c *Exec) SwitchClient(ctx context.Context, pane string) error {
	_, err := c.do(ctx, true, nil, "switch-client", "-t", c.target(pane))
	return err
}

// Changes is a fingerprint of every pane on the server (its id, its
// window and the window's last output, its mode, whether it is dead, its
// foreground command, its session) and the newest output time among them.
// A watcher that finds the fingerprint unchanged since a look at the
// screens that began in a later second than that newest output knows no
// screen has changed since: it costs one command, where a look costs a
// capture per pane. (#{window_activity} counts in whole seconds, so output
// in the second a look began may have come after it.)
func (c *Exec) Changes(ctx context.Context) (fingerprint string, newest time.Time, err error) {
	out, err := c.run(ctx, "list-panes", "-a", "-F",
		"#{window_activity} #{pane_id} #{window_id} #{pane_in_mode} #{pane_dead} #{session_id} #{pane_current_command}"+sep+"#{session_name}")
	if errors.Is(err, ErrNoServer) {
		return "", time.Time{}, nil
	}
	if err != nil {
		return "", time.Time{}, err
	}
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		sec, _, _ := strings.Cut(line, " ")
		if n, err := strconv.ParseInt(sec, 10, 64); err == nil && n > newest.Unix() {
			newest = time.Unix(n, 0)
		}
	}
	return string(out), newest, nil
}
