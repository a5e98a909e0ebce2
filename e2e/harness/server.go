package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/tmux"
)

// TmuxTimeout bounds every tmux call the harness makes, so that a wedged
// server fails a test instead of hanging it.
const TmuxTimeout = 30 * time.Second

// Server is a private tmux server on a socket of its own. Nothing here ever
// runs tmux without -S, so the user's own server is never touched.
type Server struct {
	Bins   Binaries
	Dir    string // short temp dir: socket, logs, cues, XDG dirs
	Socket string

	agents   atomic.Int64  // numbers log and cue files
	starting chan struct{} // agents starting now, at most startsAtOnce
	daemon   *exec.Cmd     // agentmsg serve, in DaemonMode
	direct   bool          // every run in its own process (RunsDirect)
	pid      atomic.Int64  // the tmux server's, once started: Close's last resort
}

// NewServer builds the binaries if needed and starts a server that holds
// one placeholder session (_keep), so that it outlives every agent.
func NewServer() (*Server, error) {
	if _, err := exec.LookPath(TmuxBin()); err != nil {
		return nil, fmt.Errorf("tmux is not installed: %w", err)
	}
	bins, err := Build()
	if err != nil {
		return nil, err
	}
	// Socket paths are limited to about 100 bytes, and t.TempDir() can be
	// longer than that: a short dir under /tmp it is.
	dir, err := os.MkdirTemp("/tmp", "am")
	if err != nil {
		return nil, err
	}
	s := &Server{Bins: bins, Dir: dir, Socket: filepath.Join(dir, "sock"), starting: make(chan struct{}, startsAtOnce)}
	for _, sub := range []string{"logs", "config", "config/agentmsg", "runtime", "state"} {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o700); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	if err := os.WriteFile(s.ConfigPath(), []byte(BaseConfig), 0o600); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := s.start(); err != nil {
		s.Close()
		return nil, fmt.Errorf("starting tmux server: %w", err)
	}
	if DaemonMode() {
		if err := s.StartDaemon(); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// BaseConfig is agentmsg's config file for the stand-ins. "standin" knows
// them by their command: the generic reader (they draw Claude Code's box
// or a plain "> " prompt), their folding (over 800 bytes or 3 lines, as
// Claude Code) and bracketed paste; no settle (a stand-in takes an Enter
// right after a paste, unless told to guard against one); not trusted to
// queue while busy, as a screen that only looks like Claude Code's is
// not. "nofold" is for sends that must reach them whole however long.
const BaseConfig = `[profiles.standin]
base = "generic"
commands = ["standin"]
fold_bytes = 800
fold_lines = 3
bracketed_paste = true

[profiles.nofold]
base = "generic"
bracketed_paste = true
`

// ConfigPath is the config file the server's agentmsg runs read; a test
// that adds to it keeps BaseConfig.
func (s *Server) ConfigPath() string {
	return filepath.Join(s.Dir, "config", "agentmsg", "config.toml")
}

func (s *Server) start() error {
	// -f /dev/null: no user config can change key handling or sizes.
	_, err := s.Tmux("-f", "/dev/null", "new-session", "-d", "-s", "_keep", "-x", "200", "-y", "50",
		"/bin/sh", "-c", s.watchdog())
	if err != nil {
		return err
	}
	if out, err := s.Tmux("display-message", "-p", "-t", "_keep", "#{pid}"); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(out)); err == nil {
			s.pid.Store(int64(pid))
		}
	}
	return nil
}

// Restart replaces the server with a new one at the same socket, as a
// person restarting tmux does: every session is gone, and the new server
// numbers its panes from %0 again. Agents come back with Agent.Start.
func (s *Server) Restart() error {
	if _, err := s.Tmux("kill-server"); err != nil {
		return err
	}
	// kill-server returns before the old server has gone, and a client that
	// reaches it then would start the new session in the dying server.
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := s.Tmux("list-sessions")
		if err != nil && (strings.Contains(err.Error(), "no server running") || strings.Contains(err.Error(), "error connecting")) {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the old server on %s is still there after kill-server (%v)", s.Socket, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// A server started right after another left fails now and then
	// (FIELD-NOTES: 7 of 30): try again for a while.
	for {
		err := s.start()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// watchdog is the _keep session's program: it keeps the server up while
// this process lives, and takes the server and its dir down when this
// process dies without calling Close (a test binary killed on timeout).
func (s *Server) watchdog() string {
	// The shell ignores the hangup that kill-server sends its own pane, so
	// that it lives on to remove the dir (the socket must stay until then:
	// without it kill-server cannot reach the server). Once its own server
	// ($PPID) has gone, by Close or Restart, it has nothing left to guard.
	return fmt.Sprintf("trap '' HUP TERM; while kill -0 %d 2>/dev/null; do kill -0 $PPID 2>/dev/null || exit 0; sleep 1; done; "+
		"[ -f '%s' ] && kill -TERM $(cat '%s') 2>/dev/null && sleep 2; '%s' -S '%s' kill-server; rm -rf '%s'",
		os.Getpid(), s.daemonPIDFile(), s.daemonPIDFile(), TmuxBin(), s.Socket, s.Dir)
}

// Close kills the server and removes its dir, socket included (kill-server
// leaves the socket file behind).
func (s *Server) Close() error {
	derr := s.StopDaemon()
	err := s.killServer()
	if rmErr := os.RemoveAll(s.Dir); rmErr != nil {
		err = errors.Join(err, rmErr)
	}
	return errors.Join(derr, err)
}

// killServer ends the server: kill-server, again for a while when the
// client itself cannot run (fork failing with EAGAIN on a machine out of
// processes), then SIGTERM to the server's own pid. A CI run beside
// others hit that limit: the client failed, Close removed the dir with
// the socket in it, and the server, out of reach, lived on with its agent.
func (s *Server) killServer() error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := s.Tmux("kill-server")
		if err == nil || strings.Contains(err.Error(), "no server running") || strings.Contains(err.Error(), "error connecting") {
			return nil // gone now, or already: closed twice, or the watchdog was faster
		}
		if time.Now().After(deadline) {
			if pid := int(s.pid.Load()); pid > 0 {
				if kerr := syscall.Kill(pid, syscall.SIGTERM); kerr == nil || errors.Is(kerr, syscall.ESRCH) {
					return nil
				}
			}
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Tmux runs one tmux command on this server and returns its stdout.
func (s *Server) Tmux(args ...string) (string, error) {
	return s.tmuxStdin(nil, args...)
}

func (s *Server) tmuxStdin(stdin []byte, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), TmuxTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, TmuxBin(), append([]string{"-S", s.Socket}, args...)...)
	cmd.Env = tmuxEnv()
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = time.Second
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("tmux %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// tmuxEnv is the caller's environment without the variables that tie a
// tmux client to the server it runs in; SHELL is fixed so that a shell
// pane behaves the same on every machine.
func tmuxEnv() []string {
	env := withoutVars(os.Environ(), "TMUX", "TMUX_PANE", "SHELL", "AGENTMSG_*")
	return append(env, "SHELL=/bin/sh")
}

func withoutVars(env []string, names ...string) []string {
	var out []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		drop := false
		for _, n := range names {
			if name == n || strings.HasSuffix(n, "*") && strings.HasPrefix(name, strings.TrimSuffix(n, "*")) {
				drop = true
			}
		}
		if !drop {
			out = append(out, kv)
		}
	}
	return out
}

// NewShellSession starts a session running /bin/sh: a pane that is not an
// agent. It returns the pane id.
func (s *Server) NewShellSession(session string) (string, error) {
	out, err := s.Tmux("new-session", "-d", "-P", "-F", "#{pane_id}", "-s", session, "-x", "200", "-y", "50", "/bin/sh")
	return strings.TrimSpace(out), err
}

// Capture returns the visible screen of a pane (or "=SESSION:").
func (s *Server) Capture(target string) (string, error) {
	return s.Tmux("capture-pane", "-p", "-J", "-t", target)
}

// TypeLiteral types text into a pane as a person would, as data (-l), never
// as key names.
func (s *Server) TypeLiteral(pane, text string) error {
	_, err := s.Tmux("send-keys", "-t", pane, "-l", "--", text)
	return err
}

// PressKeys sends key names (Enter, Escape, C-c) to a pane.
func (s *Server) PressKeys(pane string, keys ...string) error {
	_, err := s.Tmux(append([]string{"send-keys", "-t", pane}, keys...)...)
	return err
}

// Sessions lists the server's session names.
func (s *Server) Sessions() ([]string, error) {
	out, err := s.Tmux("list-sessions", "-F", "#{session_name}")
	if err != nil {
		return nil, err
	}
	return strings.Split(strings.TrimSpace(out), "\n"), nil
}

// TmuxBin is the tmux the tests run: $AGENTMSG_TMUX (a build of the version
// matrix, see scripts/test) or the first tmux on $PATH. The agentmsg under
// test inherits AGENTMSG_TMUX, so both sides use the same tmux.
func TmuxBin() string {
	if v := os.Getenv("AGENTMSG_TMUX"); v != "" {
		return v
	}
	if p, err := exec.LookPath("tmux"); err == nil {
		return p
	}
	return "tmux"
}

// TmuxVersion is what the tmux under test says of itself ("tmux 3.3a").
func TmuxVersion() string {
	out, err := exec.Command(TmuxBin(), "-V").Output()
	if err != nil {
		return "tmux (version unknown: " + err.Error() + ")"
	}
	return strings.TrimSpace(string(out))
}

// RemoveSettled removes dir and keeps removing it until it stays gone for a
// moment (at most 10 s): a real agent CLI killed with its tmux server may
// still be writing its state into a home under dir as it exits.
func RemoveSettled(dir string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
		time.Sleep(300 * time.Millisecond)
		if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s keeps coming back", dir)
		}
	}
}

// Mailbox is the store the server's agentmsg runs use (XDG_STATE_HOME
// inside the server's dir), in this server's place.
func (s *Server) Mailbox() *mailbox.Store {
	store := mailbox.New(filepath.Join(s.Dir, "state", "agentmsg"))
	host, _ := os.Hostname()
	socket, err := tmux.CanonicalSocket(s.Socket)
	if err != nil {
		socket = s.Socket
	}
	store.Place = mailbox.Place{Host: host, Socket: socket}
	return store
}
