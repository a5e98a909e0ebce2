// Package clisharness runs the real agent CLIs, Claude Code, Codex, Gemini
// CLI, Qwen Code and Factory's Droid, offline in a tmux session on a private tmux server,
// each talking to its API's stand-in in e2e/fakeapi, whose log is the
// ground truth of what was submitted. See NOTES.md and
// ../../../shared/FIELD-NOTES.md for the recipes; e2e/claude holds the
// Claude Code recipe (claudeharness) and its deeper tests.
//
// It writes a scratch HOME with each CLI's config (no trust dialog, no
// update check, no telemetry, the fake API), gives the agent a clean
// environment (nothing of the caller's HOME, keys or $TMUX leaks in), and
// starts it directly (the pane's command is then "node") or under a shell
// wrapper that stays after it exits (the command is then "bash").
package clisharness

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

	"github.com/agentmsg/agentmsg/delivery"
	claudeharness "github.com/agentmsg/agentmsg/e2e/claude"
	"github.com/agentmsg/agentmsg/profile"
)

// The CLIs.
const (
	Claude = "claude"
	Codex  = "codex"
	Gemini = "gemini"
	Qwen   = "qwen"
	Droid  = "droid"
)

// All are the CLIs this package runs, in the order tests take them.
var All = []string{Claude, Codex, Gemini, Qwen, Droid}

// DefaultCodexModel is a model Codex 0.169 knows and offers no upgrade
// for; an older one ("gpt-5.6-sol") opens its "Try new model" menu.
const DefaultCodexModel = "gpt-6.1-sol"

// Options says how to start one CLI.
type Options struct {
	CLI     string // Claude, Codex, Gemini, Qwen or Droid
	Exe     string // its executable (see Find); required
	Socket  string // the private tmux server socket; required
	Root    string // a scratch dir; home/ and work/ are made under it; required
	APIURL  string // the fake API's base URL; required
	Session string // tmux session name; default agent-e2e-CLI

	Width, Height int  // default 120x40
	Truecolor     bool // COLORTERM=truecolor
	// Wrapper runs the CLI under `bash -c` that stays as a shell after it
	// exits (as in a person's pane): the pane's command is "bash", and
	// after the CLI quits a shell prompt shows.
	Wrapper bool
	// Untrusted leaves the work dir untrusted: the CLI opens its "trust
	// this folder?" menu at start, a startup menu a person answers.
	Untrusted bool
	// RuntimeDir is the agent's XDG_RUNTIME_DIR, where an agentmsg its
	// hooks run keeps its locks: the senders' own, as one person's
	// processes share theirs. A hook locking elsewhere than the sender
	// typed a message the sender was typing (seen in CI: Codex's Stop
	// hook's deliver, 1 run in 7). Empty: none (TMPDIR then).
	RuntimeDir string
	// Model, for Codex: the configured model (default DefaultCodexModel).
	Model string
	// LoadingPhrases, for Gemini CLI and Qwen Code: the phrases their
	// busy row shows (ui.customWittyPhrases) instead of their own, picked
	// at random. A long one pushes the row's "esc to cancel" past the
	// pane's width.
	LoadingPhrases []string
	// Ready is the screen the start waits for; default: the CLI's reader
	// says Ready.
	Ready        func(lines []string) bool
	StartTimeout time.Duration // default 90s: Node CLIs start slowly on a loaded machine
}

// Agent is one CLI running in a tmux pane.
type Agent struct {
	Opts    Options
	Home    string
	Work    string
	Pane    string
	PanePID int
	Started time.Time
	Ready   time.Time
}

// Reader is the screen reader agentmsg uses for the CLI.
func Reader(cli string) delivery.ScreenReader {
	p, _ := profile.Lookup(cli)
	return p.Reader
}

// Start writes the scratch HOME and work dir, starts the CLI in a new
// session and waits until its input box is ready. On failure it kills the
// session it made and says what the screen showed.
func Start(o Options) (*Agent, error) {
	if o.Exe == "" || o.Socket == "" || o.Root == "" || o.APIURL == "" {
		return nil, errors.New("clisharness: Exe, Socket, Root and APIURL are required")
	}
	if o.Session == "" {
		o.Session = "agent-e2e-" + o.CLI
	}
	if o.Width == 0 {
		o.Width, o.Height = 120, 40
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = 90 * time.Second
	}
	if o.Model == "" {
		o.Model = DefaultCodexModel
	}
	if o.Ready == nil {
		r := Reader(o.CLI)
		o.Ready = func(lines []string) bool { return r.Read(lines).State == delivery.Ready }
	}
	a := &Agent{Opts: o, Home: filepath.Join(o.Root, "home"), Work: filepath.Join(o.Root, "work")}
	if err := a.writeHome(); err != nil {
		return nil, err
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
	screen, err := a.WaitFor(o.StartTimeout, func(s string) bool { return o.Ready(strings.Split(s, "\n")) })
	if err != nil {
		_ = a.Close()
		return nil, fmt.Errorf("clisharness: %s not ready after %v: %w\nlast screen:\n%s", o.CLI, o.StartTimeout, err, screen)
	}
	a.Ready = time.Now()
	return a, nil
}

// Env is the agent's whole environment: nothing is inherited.
func (a *Agent) Env() []string {
	env := []string{
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"HOME=" + a.Home,
		"TMPDIR=" + filepath.Join(a.Home, "tmp"), // its sockets and caches go with the test
		"TERM=tmux-256color",
		"LANG=C.UTF-8",
		"SHELL=/bin/bash",
		"NO_UPDATE_NOTIFIER=1",
	}
	if a.Opts.Truecolor {
		env = append(env, "COLORTERM=truecolor")
	}
	if a.Opts.RuntimeDir != "" {
		env = append(env, "XDG_RUNTIME_DIR="+a.Opts.RuntimeDir)
	}
	switch a.Opts.CLI {
	case Claude:
		env = append(env, "ANTHROPIC_API_KEY="+claudeharness.FakeAPIKey, "ANTHROPIC_BASE_URL="+a.Opts.APIURL,
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1")
	case Codex:
		env = append(env, "CODEX_HOME="+filepath.Join(a.Home, ".codex"), "FAKE_OPENAI_API_KEY=fake-key")
	case Gemini:
		env = append(env, "GEMINI_API_KEY=fake-key", "GOOGLE_GEMINI_BASE_URL="+a.Opts.APIURL)
	case Qwen:
		env = append(env, "OPENAI_API_KEY=fake-key", "OPENAI_BASE_URL="+a.Opts.APIURL+"/v1", "OPENAI_MODEL=qwen3-coder-plus")
	case Droid:
		// Its Airgap Mode: no Factory login, only custom models, no
		// telemetry or update checks (DROID.md).
		env = append(env, "FACTORY_AIRGAP_ENABLED=1")
	}
	return env
}

// paneEnv starts a pane's argv: env -i, keeping only what tmux gives every
// pane ($TMUX, $TMUX_PANE), which a real agent has and its hooks name
// their receipts' recipient with; Env follows.
func paneEnv() []string {
	return []string{"/bin/sh", "-c", `exec env -i TMUX="$TMUX" TMUX_PANE="$TMUX_PANE" "$@"`, "sh"}
}

// command is the pane's argv: env -i with Env, then the CLI (or a shell
// that runs it and stays).
func (a *Agent) command() []string {
	cli := []string{a.Opts.Exe}
	switch a.Opts.CLI {
	case Codex:
		// Without it Codex starts an app-server daemon that outlives tmux.
		cli = append(cli, "--no-daemon")
	case Claude:
		// Ask before running tools, whatever a settings file says.
		cli = append(cli, "--permission-mode", "default")
	}
	argv := append(paneEnv(), a.Env()...)
	if !a.Opts.Wrapper {
		return append(argv, cli...)
	}
	script := `"$@"; echo "[` + a.Opts.CLI + ` exited $?]"; exec bash --norc --noprofile -i`
	argv = append(argv, "bash", "--norc", "--noprofile", "-c", script, "bash")
	return append(argv, cli...)
}

// writeHome writes each CLI's configuration into the scratch HOME: the
// fake API, the work dir trusted, no update checks or telemetry.
func (a *Agent) writeHome() error {
	for _, d := range []string{a.Home, filepath.Join(a.Home, "tmp"), a.Work} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	write := func(rel, text string) error {
		p := filepath.Join(a.Home, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return err
		}
		return os.WriteFile(p, []byte(text), 0o600)
	}
	trust := !a.Opts.Untrusted
	switch a.Opts.CLI {
	case Claude:
		if err := claudeharness.WriteHome(a.Home, a.Work, claudeharness.FakeAPIKey); err != nil || trust {
			return err
		}
		return untrustClaude(filepath.Join(a.Home, ".claude.json"))
	case Codex:
		projects := fmt.Sprintf("\n[projects.%q]\ntrust_level = \"trusted\"\n", a.Work)
		if !trust {
			projects = ""
		}
		return write(".codex/config.toml", fmt.Sprintf(`model = %q
model_provider = "fake"
check_for_update_on_startup = false

[model_providers.fake]
name = "fake"
base_url = "%s/v1"
env_key = "FAKE_OPENAI_API_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false
%s`, a.Opts.Model, a.Opts.APIURL, projects))
	case Gemini, Qwen:
		dir := ".gemini"
		auth := "gemini-api-key"
		if a.Opts.CLI == Qwen {
			dir, auth = ".qwen", "openai"
		}
		s := map[string]any{
			"security": map[string]any{"auth": map[string]any{"selectedType": auth}},
			"general":  map[string]any{"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
			"privacy":  map[string]any{"usageStatisticsEnabled": false},
		}
		if len(a.Opts.LoadingPhrases) > 0 {
			s["ui"] = map[string]any{"customWittyPhrases": a.Opts.LoadingPhrases}
		}
		settings, _ := json.Marshal(s)
		trusted, _ := json.Marshal(map[string]string{a.Work: "TRUST_FOLDER"})
		if err := write(dir+"/settings.json", string(settings)); err != nil || !trust {
			return err
		}
		return write(dir+"/trustedFolders.json", string(trusted))
	case Droid:
		// A custom model at the fake API's Chat Completions (the first
		// custom model is the default in Airgap Mode), the work dir trusted.
		settings := map[string]any{
			"customModels": []any{map[string]any{
				"model": "fake-chat", "displayName": "Fake Chat", "baseUrl": a.Opts.APIURL + "/v1",
				"apiKey": "fake-key", "provider": "generic-chat-completion-api", "maxOutputTokens": 4096,
			}},
			"logoAnimation": "off",
		}
		if trust {
			settings["trustedFolders"] = map[string]any{a.Work: map[string]any{"trustedAt": "2026-01-01T00:00:00.000Z"}}
		}
		b, _ := json.Marshal(settings)
		return write(".factory/settings.json", string(b))
	}
	return fmt.Errorf("clisharness: unknown CLI %q", a.Opts.CLI)
}

// untrustClaude drops the projects (and their accepted trust dialog) from
// Claude Code's .claude.json.
func untrustClaude(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var cfg map[string]any
	if err := json.Unmarshal(b, &cfg); err != nil {
		return err
	}
	delete(cfg, "projects")
	if b, err = json.MarshalIndent(cfg, "", "  "); err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

// Tmux runs one tmux command on the private server, with no $TMUX so that
// it can never reach another server.
func (a *Agent) Tmux(args ...string) (string, error) { return a.tmuxIn(nil, args...) }

func (a *Agent) tmuxIn(stdin []byte, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "tmux", append([]string{"-S", a.Opts.Socket, "-f", "/dev/null"}, args...)...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TMUX") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
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

// Capture returns the visible screen, wrapped lines joined.
func (a *Agent) Capture() (string, error) { return a.Tmux("capture-pane", "-p", "-J", "-t", a.Pane) }

// Command is the pane's current command, as tmux names it.
func (a *Agent) Command() (string, error) {
	out, err := a.Tmux("display", "-p", "-t", a.Pane, "#{pane_current_command}")
	return strings.TrimSpace(out), err
}

// Paste types text as one bracketed paste through a named buffer.
func (a *Agent) Paste(text string) error {
	buf := fmt.Sprintf("clisharness-%d", time.Now().UnixNano())
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

// Keys sends tmux key names (Escape, Down, ...).
func (a *Agent) Keys(keys ...string) error {
	_, err := a.Tmux(append([]string{"send-keys", "-t", a.Pane}, keys...)...)
	return err
}

// Type sends text as literal keystrokes, as a person typing would.
func (a *Agent) Type(text string) error {
	_, err := a.Tmux("send-keys", "-t", a.Pane, "-l", "--", text)
	return err
}

// Read is the CLI's reader's reading of the screen now.
func (a *Agent) Read() (delivery.Reading, string, error) {
	s, err := a.Capture()
	if err != nil {
		return delivery.Reading{}, s, err
	}
	return Reader(a.Opts.CLI).Read(strings.Split(s, "\n")), s, nil
}

// WaitFor polls the screen every 50ms until cond holds, and returns that
// screen; on timeout the last screen and an error.
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
		time.Sleep(50 * time.Millisecond)
	}
}

// WaitState waits until the CLI's reader reads the screen as state.
func (a *Agent) WaitState(timeout time.Duration, state delivery.State) (string, error) {
	r := Reader(a.Opts.CLI)
	return a.WaitFor(timeout, func(s string) bool { return r.Read(strings.Split(s, "\n")).State == state })
}

// Close kills the agent's session and waits up to 15s for the pane's
// processes to exit (the CLIs write into HOME while they shut down). The
// caller still owns the server.
func (a *Agent) Close() error {
	pids := descendants(a.PanePID)
	_, err := a.Tmux("kill-session", "-t", "="+a.Opts.Session)
	deadline := time.Now().Add(15 * time.Second)
	for _, pid := range pids {
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
	}
	// Anything left (a Node child that ignored SIGHUP) is ours: end it.
	for _, pid := range pids {
		if alive(pid) {
			if p, err := os.FindProcess(pid); err == nil {
				_ = p.Kill()
			}
		}
	}
	return err
}

// descendants returns pid and all its descendants, from /proc.
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

// CacheDir is where scripts/clis.sh installs the CLI.
func CacheDir(cli string) string {
	base := os.Getenv("AGENTMSG_CACHE")
	if base == "" {
		home, _ := os.UserHomeDir()
		base = filepath.Join(home, ".cache", "agentmsg")
	}
	return filepath.Join(base, cli)
}

// envName is the variable that names a CLI's executable: AGENTMSG_CODEX,
// AGENTMSG_GEMINI, AGENTMSG_QWEN.
func envName(cli string) string { return "AGENTMSG_" + strings.ToUpper(cli) }

// Find returns the CLI's executable from $AGENTMSG_<CLI>, else from the
// cache dir scripts/clis.sh installs into; it installs nothing.
func Find(cli string) (string, error) {
	if cli == Claude {
		return claudeharness.Find()
	}
	if p := os.Getenv(envName(cli)); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("clisharness: %s: %w", envName(cli), err)
		}
		return p, nil
	}
	p := filepath.Join(CacheDir(cli), "node_modules", ".bin", cli)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("clisharness: %s is not installed in %s (run scripts/clis.sh %s)", cli, CacheDir(cli), cli)
	}
	return p, nil
}

// Ensure runs scripts/clis.sh CLI (found from the module root) to install
// the CLI if needed, and returns the executable's path.
func Ensure(cli string) (string, error) {
	if cli == Claude {
		return claudeharness.Ensure()
	}
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
			return "", errors.New("clisharness: go.mod not found above the working directory")
		}
		dir = parent
	}
	ctx, cancel := context.WithTimeout(context.Background(), 16*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(dir, "scripts", "clis.sh"), cli)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("clisharness: scripts/clis.sh %s: %v: %s", cli, err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

// ErrNoNPM: the CLI is not installed, and without npm it cannot be; a test
// skips on it.
var ErrNoNPM = errors.New("npm is missing")

// Executable finds the CLI (Find), else installs it (Ensure) when npm is
// there; without npm the error wraps ErrNoNPM.
func Executable(cli string) (string, error) {
	p, err := Find(cli)
	if err == nil {
		return p, nil
	}
	if _, lerr := exec.LookPath("npm"); lerr != nil {
		return "", fmt.Errorf("%w, so %s cannot be installed: %v", ErrNoNPM, cli, err)
	}
	return Ensure(cli)
}

// Version runs `CLI --version`.
func Version(exe string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, exe, "--version").Output()
	return strings.TrimSpace(string(out)), err
}
