// Package claudeharness runs the real Claude Code CLI offline in a tmux
// session on a private tmux server, talking to the fake Messages API of
// e2e/fakeapi. The fake API's log is the ground truth of what was submitted;
// the screen is what agentmsg has to read.
//
// It writes a scratch HOME that pre-accepts every first-start dialog
// (onboarding, folder trust, the custom API key), gives the agent a clean
// environment (nothing of the caller's HOME, API keys or $TMUX leaks in), and
// starts `claude --permission-mode default` in a work dir. See NOTES.md for
// what the screens look like.
package claudeharness

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/agentmsg/agentmsg/e2e/harness"
)

// FakeAPIKey is the key the agent gets. Only its last 20 characters matter:
// they are pre-approved in .claude.json.
const FakeAPIKey = "sk-ant-api03-agentmsg-e2e-fake-key-0123456789abcdefghij"

// DefaultSession is the session name used when Options.Session is empty.
const DefaultSession = "agent-e2e-claude"

// Options says how to start the agent.
type Options struct {
	Claude  string // the claude executable (see Find, Ensure); required
	Socket  string // the private tmux server socket, for -S; required
	Root    string // a scratch dir; home/ and work/ are made under it; required
	APIURL  string // the fake API's base URL, for ANTHROPIC_BASE_URL; required
	Session string // tmux session name; default DefaultSession

	// HookLog, if set, installs UserPromptSubmit and Stop hooks in the work
	// dir's .claude/settings.json that append their stdin JSON, one
	// document per line, to this file.
	HookLog string
	// KeepShell runs claude under a shell that stays after claude exits,
	// as in a person's pane: after /exit the pane shows a shell prompt.
	// Without it the pane (and the session) close when claude exits.
	KeepShell bool
	// RuntimeDir is Claude Code's XDG_RUNTIME_DIR, where an agentmsg its
	// hooks run keeps its locks: the senders' own, as one person's
	// processes share theirs (a hook locking elsewhere can type a message
	// its sender is still typing). Empty: none.
	RuntimeDir string

	Width, Height int           // window size; default 200x50
	Args          []string      // more claude arguments
	StartTimeout  time.Duration // how long Start waits for the input box; default 30s
}

// Agent is one Claude Code running in a tmux pane.
type Agent struct {
	Opts    Options
	Home    string // the scratch HOME
	Work    string // the work dir (the project)
	Pane    string // the pane id, %N
	PanePID int    // the pane's process (env, then claude or the shell)
	Started time.Time
	Ready   time.Time // when the input box first showed up empty
}

// Start writes the scratch HOME and work dir, starts claude in a new
// session on the private server, and waits until its input box is ready.
// On failure it kills the session it made and says what the screen showed.
func Start(o Options) (*Agent, error) {
	if o.Claude == "" || o.Socket == "" || o.Root == "" || o.APIURL == "" {
		return nil, errors.New("claudeharness: Claude, Socket, Root and APIURL are required")
	}
	if o.Session == "" {
		o.Session = DefaultSession
	}
	if o.Width == 0 {
		o.Width, o.Height = 200, 50
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = 30 * time.Second
	}
	a := &Agent{Opts: o, Home: filepath.Join(o.Root, "home"), Work: filepath.Join(o.Root, "work")}
	if err := WriteHome(a.Home, a.Work, FakeAPIKey); err != nil {
		return nil, err
	}
	if o.HookLog != "" {
		if err := WriteHookSettings(a.Work, o.HookLog); err != nil {
			return nil, err
		}
	}
	argv := []string{"new-session", "-d", "-s", o.Session, "-x", fmt.Sprint(o.Width), "-y", fmt.Sprint(o.Height),
		"-c", a.Work, "-P", "-F", "#{pane_id}", "--"}
	argv = append(argv, a.command()...)
	a.Started = time.Now()
	out, err := a.Tmux(argv...)
	if err != nil {
		return nil, err
	}
	a.Pane = strings.TrimSpace(out)
	if pid, err := a.Tmux("display", "-p", "-t", a.Pane, "#{pane_pid}"); err == nil {
		a.PanePID, _ = strconv.Atoi(strings.TrimSpace(pid))
	}
	screen, err := a.WaitFor(o.StartTimeout, IsReady)
	if err != nil {
		_ = a.Close()
		return nil, fmt.Errorf("claudeharness: claude not ready after %v: %w\nlast screen:\n%s", o.StartTimeout, err, screen)
	}
	a.Ready = time.Now()
	return a, nil
}

// Env is the agent's whole environment: nothing is inherited.
func (a *Agent) Env() []string {
	path := "/usr/local/bin:/usr/bin:/bin"
	env := []string{
		"PATH=" + path,
		"HOME=" + a.Home,
		"TMPDIR=" + filepath.Join(a.Home, "tmp"), // its per-folder files go with the test
		"TERM=tmux-256color",
		"LANG=C.UTF-8",
		"SHELL=/bin/bash",
		"ANTHROPIC_API_KEY=" + FakeAPIKey,
		"ANTHROPIC_BASE_URL=" + a.Opts.APIURL,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
	}
	if a.Opts.RuntimeDir != "" {
		env = append(env, "XDG_RUNTIME_DIR="+a.Opts.RuntimeDir)
	}
	return env
}

// command is the pane's argv: env -i with Env, then claude (or a shell
// that runs claude and stays).
func (a *Agent) command() []string {
	claude := append([]string{a.Opts.Claude, "--permission-mode", "default"}, a.Opts.Args...)
	// env -i, keeping only what tmux gives every pane ($TMUX,
	// $TMUX_PANE), which a real agent has and its hooks name their
	// receipts' recipient with.
	argv := append([]string{"/bin/sh", "-c", `exec env -i TMUX="$TMUX" TMUX_PANE="$TMUX_PANE" "$@"`, "sh"}, a.Env()...)
	if !a.Opts.KeepShell {
		return append(argv, claude...)
	}
	script := `"$@"; echo "[claude exited $?]"; exec bash --norc --noprofile -i`
	argv = append(argv, "bash", "--norc", "--noprofile", "-c", script, "bash")
	return append(argv, claude...)
}

// Tmux runs one tmux command on the private server, with no $TMUX so that
// it can never reach another server.
func (a *Agent) Tmux(args ...string) (string, error) {
	return a.tmuxIn(nil, args...)
}

func (a *Agent) tmuxIn(stdin []byte, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	full := append([]string{"-S", a.Opts.Socket, "-f", "/dev/null"}, args...)
	cmd := exec.CommandContext(ctx, harness.TmuxBin(), full...)
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
func (a *Agent) Capture() (string, error) {
	return a.Tmux("capture-pane", "-p", "-J", "-t", a.Pane)
}

// Paste types text as one bracketed paste through a named buffer.
func (a *Agent) Paste(text string) error {
	buf := fmt.Sprintf("claudeharness-%d", time.Now().UnixNano())
	if _, err := a.tmuxIn([]byte(text), "load-buffer", "-b", buf, "-"); err != nil {
		return err
	}
	_, err := a.Tmux("paste-buffer", "-p", "-d", "-b", buf, "-t", a.Pane)
	return err
}

// Enter sends a raw carriage return.
func (a *Agent) Enter() error {
	_, err := a.Tmux("send-keys", "-t", a.Pane, "-H", "0d")
	return err
}

// Keys sends tmux key names (Escape, C-s, ...).
func (a *Agent) Keys(keys ...string) error {
	_, err := a.Tmux(append([]string{"send-keys", "-t", a.Pane}, keys...)...)
	return err
}

// Type sends text as literal keystrokes, as a person typing would.
func (a *Agent) Type(text string) error {
	_, err := a.Tmux("send-keys", "-t", a.Pane, "-l", "--", text)
	return err
}

// WaitFor polls the screen every 20ms until cond holds, and returns that
// screen; on timeout it returns the last screen and an error.
func (a *Agent) WaitFor(timeout time.Duration, cond func(string) bool) (string, error) {
	deadline := time.Now().Add(timeout)
	var screen string
	for {
		s, err := a.Capture()
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
		time.Sleep(20 * time.Millisecond)
	}
}

// Close kills the agent's session (claude gets SIGHUP) and waits up to 10s
// for the pane's processes to exit: Claude Code writes into its HOME while
// it shuts down, so removing the scratch dir any sooner can fail. The
// caller still owns the server: kill it with `kill-server` on the socket.
func (a *Agent) Close() error {
	pids := descendants(a.PanePID)
	_, err := a.Tmux("kill-session", "-t", "="+a.Opts.Session)
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range pids {
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
	}
	// Anything left is ours: end it, or it writes its session log into
	// HOME after the test has removed it (seen once in CI, under load).
	for _, pid := range pids {
		if alive(pid) {
			if p, err := os.FindProcess(pid); err == nil {
				_ = p.Kill()
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

// WriteHome writes a scratch HOME whose .claude.json skips every first
// start dialog: onboarding (theme, login), trust of the work dir, and the
// "use this API key?" question (approved by the key's last 20 characters).
// It makes the work dir too.
func WriteHome(home, work, apiKey string) error {
	if err := os.MkdirAll(filepath.Join(home, "tmp"), 0o700); err != nil {
		return err
	}
	if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}
	last20 := apiKey
	if len(last20) > 20 {
		last20 = last20[len(last20)-20:]
	}
	cfg := map[string]any{
		"hasCompletedOnboarding": true,
		"customApiKeyResponses":  map[string]any{"approved": []string{last20}, "rejected": []string{}},
		"projects": map[string]any{
			work: map[string]any{"hasTrustDialogAccepted": true},
		},
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(home, ".claude.json"), b, 0o600)
}

// WriteHookSettings writes work/.claude/settings.json with a
// UserPromptSubmit and a Stop hook, each appending its stdin (one JSON
// document) and a newline to hookLog.
func WriteHookSettings(work, hookLog string) error {
	dir := filepath.Join(work, ".claude")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	cmd := fmt.Sprintf("cat >> %s; echo >> %s", shellQuote(hookLog), shellQuote(hookLog))
	hook := []any{map[string]any{"hooks": []any{map[string]any{"type": "command", "command": cmd}}}}
	settings := map[string]any{"hooks": map[string]any{"UserPromptSubmit": hook, "Stop": hook}}
	b, err := json.MarshalIndent(settings, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "settings.json"), b, 0o644)
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// CacheDir is where scripts/claude.sh installs Claude Code.
func CacheDir() string {
	base := os.Getenv("AGENTMSG_CACHE")
	if base == "" {
		home, _ := os.UserHomeDir()
		base = filepath.Join(home, ".cache", "agentmsg")
	}
	return filepath.Join(base, "claude")
}

// Find returns the claude executable from $AGENTMSG_CLAUDE, else from the
// cache dir scripts/claude.sh installs into; it installs nothing.
func Find() (string, error) {
	if p := os.Getenv("AGENTMSG_CLAUDE"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("claudeharness: AGENTMSG_CLAUDE: %w", err)
		}
		return p, nil
	}
	p := filepath.Join(CacheDir(), "node_modules", ".bin", "claude")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("claudeharness: Claude Code is not installed in %s (run scripts/claude.sh)", CacheDir())
	}
	return p, nil
}

// Ensure runs scripts/claude.sh (found from the module root, the nearest
// directory above the working directory holding go.mod) to install Claude
// Code if needed, and returns the executable's path.
func Ensure() (string, error) {
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
			return "", errors.New("claudeharness: go.mod not found above the working directory")
		}
		dir = parent
	}
	ctx, cancel := context.WithTimeout(context.Background(), 11*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(dir, "scripts", "claude.sh"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("claudeharness: scripts/claude.sh: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

// Version runs `claude --version` ("2.1.197 (Claude Code)").
func Version(claude string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, claude, "--version").Output()
	return strings.TrimSpace(string(out)), err
}
