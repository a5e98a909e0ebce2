// Package clistest is what the harnesses of the real agent CLIs share
// (e2e/claude's claudeharness and e2e/clis's clisharness): a program in a
// pane of a private tmux server, driven and read as a person would (paste,
// keys, the screen), closed with every process it started; and finding,
// installing and asking the version of a CLI that scripts/claude.sh or
// scripts/clis.sh install from npm into a cache dir.
package clistest

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
	"time"
)

// PaneOptions says where to start a program and how to drive it.
type PaneOptions struct {
	TmuxBin string // the tmux executable
	Socket  string // the private tmux server's socket, for -S
	Session string // the session to make
	Dir     string // the pane's working directory
	Width   int
	Height  int
	Argv    []string // the pane's command
	// Buffer prefixes the names of Paste's tmux buffers (a name of the
	// harness, so that a buffer left behind says whose it is).
	Buffer string
	// Poll is how often WaitFor captures the screen.
	Poll time.Duration
	// Grace is how long Close waits for the pane's processes to exit
	// before it kills what is left.
	Grace time.Duration
}

// Pane is a program running in a pane of a private tmux server.
type Pane struct {
	PaneOptions
	ID      string // the pane id, %N
	PID     int    // the pane's process (0 when tmux did not say)
	Started time.Time
}

// StartPane starts o.Argv in a new session on the server at o.Socket (the
// server starts with it when there is none). It does not wait for the
// program: the caller waits for the screen it needs (WaitFor).
func StartPane(o PaneOptions) (*Pane, error) {
	p := &Pane{PaneOptions: o}
	argv := []string{"new-session", "-d", "-s", o.Session, "-x", fmt.Sprint(o.Width), "-y", fmt.Sprint(o.Height),
		"-c", o.Dir, "-P", "-F", "#{pane_id}", "--"}
	argv = append(argv, o.Argv...)
	p.Started = time.Now()
	out, err := p.Tmux(argv...)
	if err != nil {
		return nil, err
	}
	p.ID = strings.TrimSpace(out)
	if pid, err := p.Tmux("display", "-p", "-t", p.ID, "#{pane_pid}"); err == nil {
		p.PID, _ = strconv.Atoi(strings.TrimSpace(pid))
	}
	return p, nil
}

// PaneEnv starts a pane's argv: env -i, keeping only what tmux gives every
// pane ($TMUX, $TMUX_PANE), which a real agent has and its hooks name
// their receipts' recipient with; the agent's environment follows, then
// its command.
func PaneEnv() []string {
	return []string{"/bin/sh", "-c", `exec env -i TMUX="$TMUX" TMUX_PANE="$TMUX_PANE" "$@"`, "sh"}
}

// Tmux runs one tmux command on the private server, with no $TMUX so that
// it can never reach another server.
func (p *Pane) Tmux(args ...string) (string, error) { return p.tmuxIn(nil, args...) }

func (p *Pane) tmuxIn(stdin []byte, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, p.TmuxBin, append([]string{"-S", p.Socket, "-f", "/dev/null"}, args...)...)
	cmd.Env = withoutTMUX(os.Environ())
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("tmux %s: %v: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}

func withoutTMUX(env []string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "TMUX=") && !strings.HasPrefix(kv, "TMUX_PANE=") {
			out = append(out, kv)
		}
	}
	return out
}

// Capture returns the visible screen, wrapped lines joined (capture-pane -p -J).
func (p *Pane) Capture() (string, error) { return p.Tmux("capture-pane", "-p", "-J", "-t", p.ID) }

// Paste types text as one bracketed paste through a named buffer.
func (p *Pane) Paste(text string) error {
	buf := fmt.Sprintf("%s-%d", p.Buffer, time.Now().UnixNano())
	if _, err := p.tmuxIn([]byte(text), "load-buffer", "-b", buf, "-"); err != nil {
		return err
	}
	_, err := p.Tmux("paste-buffer", "-p", "-d", "-b", buf, "-t", p.ID)
	return err
}

// Enter sends a raw carriage return.
func (p *Pane) Enter() error {
	_, err := p.Tmux("send-keys", "-t", p.ID, "-H", "0d")
	return err
}

// Keys sends tmux key names (Escape, C-s, Down, ...).
func (p *Pane) Keys(keys ...string) error {
	_, err := p.Tmux(append([]string{"send-keys", "-t", p.ID}, keys...)...)
	return err
}

// Type sends text as literal keystrokes, as a person typing would.
func (p *Pane) Type(text string) error {
	_, err := p.Tmux("send-keys", "-t", p.ID, "-l", "--", text)
	return err
}

// WaitFor polls the screen every Poll until cond holds, and returns that
// screen; on timeout it returns the last screen and an error.
func (p *Pane) WaitFor(timeout time.Duration, cond func(string) bool) (string, error) {
	deadline := time.Now().Add(timeout)
	var screen string
	for {
		s, err := p.Capture()
		if err != nil {
			return screen, err
		}
		screen = s
		if cond(screen) {
			return screen, nil
		}
		if time.Now().After(deadline) {
			return screen, fmt.Errorf("condition not met within %v", timeout)
		}
		time.Sleep(p.Poll)
	}
}

// Close kills the pane's session (its program gets SIGHUP) and waits up
// to Grace for the pane's processes to exit: the CLIs write into their
// HOME while they shut down, so removing the scratch dir any sooner can
// fail. Anything left then (a Node child that ignored SIGHUP) is killed,
// or it writes its session log into HOME after the test has removed it
// (seen once in CI, under load). The caller still owns the server: kill
// it with `kill-server` on the socket.
func (p *Pane) Close() error {
	pids := descendants(p.PID)
	_, err := p.Tmux("kill-session", "-t", "="+p.Session)
	deadline := time.Now().Add(p.Grace)
	for _, pid := range pids {
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
	}
	for _, pid := range pids {
		if alive(pid) {
			if proc, err := os.FindProcess(pid); err == nil {
				_ = proc.Kill()
			}
			for end := time.Now().Add(2 * time.Second); alive(pid) && time.Now().Before(end); {
				time.Sleep(20 * time.Millisecond)
			}
		}
	}
	return err
}

// descendants returns pid and all its descendants, read from /proc (empty
// where there is no /proc).
func descendants(pid int) []int {
	if pid <= 0 {
		return nil
	}
	children := map[int][]int{}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, st := range stats {
		b, err := os.ReadFile(st)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may hold spaces and parens.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		me, _ := strconv.Atoi(strings.Fields(s)[0])
		children[ppid] = append(children[ppid], me)
	}
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}

// alive reports whether a process exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && !strings.HasPrefix(strings.TrimSpace(s[i+1:]), "Z")
}

// CacheDir is where scripts/claude.sh and scripts/clis.sh install a CLI:
// $AGENTMSG_CACHE/NAME, by default ~/.cache/agentmsg/NAME.
func CacheDir(name string) string {
	base := os.Getenv("AGENTMSG_CACHE")
	if base == "" {
		home, _ := os.UserHomeDir()
		base = filepath.Join(home, ".cache", "agentmsg")
	}
	return filepath.Join(base, name)
}

// ErrNotInstalled: Find found no executable.
var ErrNotInstalled = errors.New("not installed")

// Find returns the executable that the environment variable env names
// (which must exist), else bin as npm installs it under dir
// (node_modules/.bin), else an error wrapping ErrNotInstalled. It installs
// nothing.
func Find(env, dir, bin string) (string, error) {
	if p := os.Getenv(env); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s: %w", env, err)
		}
		return p, nil
	}
	p := filepath.Join(dir, "node_modules", ".bin", bin)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%w: %w", ErrNotInstalled, err)
	}
	return p, nil
}

// Script runs bash scripts/NAME args from the module root (the nearest
// directory above the working directory holding go.mod) for at most
// timeout, and returns what it printed, trimmed: the install scripts print
// the executable's path.
func Script(timeout time.Duration, name string, args ...string) (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found above the working directory")
		}
		dir = parent
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", append([]string{filepath.Join(dir, "scripts", name)}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s: %v: %s", strings.Join(append([]string{"scripts/" + name}, args...), " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

// Version runs `EXE --version` for at most timeout.
func Version(exe string, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, exe, "--version").Output()
	return strings.TrimSpace(string(out)), err
}
