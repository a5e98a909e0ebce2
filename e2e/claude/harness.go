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
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentmsg/agentmsg/e2e/clistest"
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

// Agent is one Claude Code running in a tmux pane (its ID; its PID is
// the pane's process: env, then claude or the shell), driven through the
// pane's methods (clistest.Pane: Tmux, Capture, Paste, Enter, Keys, Type,
// WaitFor, Close).
type Agent struct {
	*clistest.Pane
	Opts  Options
	Home  string    // the scratch HOME
	Work  string    // the work dir (the project)
	Ready time.Time // when the input box first showed up empty
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
	pane, err := clistest.StartPane(clistest.PaneOptions{TmuxBin: harness.TmuxBin(), Socket: o.Socket, Session: o.Session,
		Dir: a.Work, Width: o.Width, Height: o.Height, Argv: a.command(),
		Buffer: "claudeharness", Poll: 20 * time.Millisecond, Grace: 10 * time.Second})
	if err != nil {
		return nil, err
	}
	a.Pane = pane
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
	argv := append(clistest.PaneEnv(), a.Env()...)
	if !a.Opts.KeepShell {
		return append(argv, claude...)
	}
	script := `"$@"; echo "[claude exited $?]"; exec bash --norc --noprofile -i`
	argv = append(argv, "bash", "--norc", "--noprofile", "-c", script, "bash")
	return append(argv, claude...)
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
func CacheDir() string { return clistest.CacheDir("claude") }

// Find returns the claude executable from $AGENTMSG_CLAUDE, else from the
// cache dir scripts/claude.sh installs into; it installs nothing.
func Find() (string, error) {
	p, err := clistest.Find("AGENTMSG_CLAUDE", CacheDir(), "claude")
	if errors.Is(err, clistest.ErrNotInstalled) {
		return "", fmt.Errorf("claudeharness: Claude Code is not installed in %s (run scripts/claude.sh)", CacheDir())
	}
	if err != nil {
		return "", fmt.Errorf("claudeharness: %w", err)
	}
	return p, nil
}

// Ensure runs scripts/claude.sh (found from the module root, the nearest
// directory above the working directory holding go.mod) to install Claude
// Code if needed, and returns the executable's path.
func Ensure() (string, error) {
	p, err := clistest.Script(11*time.Minute, "claude.sh")
	if err != nil {
		return "", fmt.Errorf("claudeharness: %w", err)
	}
	return p, nil
}

// Version runs `claude --version` ("2.1.197 (Claude Code)").
func Version(claude string) (string, error) { return clistest.Version(claude, 30*time.Second) }
