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
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentmsg/agentmsg/delivery"
	claudeharness "github.com/agentmsg/agentmsg/e2e/claude"
	"github.com/agentmsg/agentmsg/e2e/clistest"
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

// Agent is one CLI running in a tmux pane, driven through the pane's
// methods (clistest.Pane: Tmux, Capture, Paste, Enter, Keys, Type,
// WaitFor, Close).
type Agent struct {
	*clistest.Pane
	Opts  Options
	Home  string
	Work  string
	Ready time.Time
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
	pane, err := clistest.StartPane(clistest.PaneOptions{TmuxBin: "tmux", Socket: o.Socket, Session: o.Session,
		Dir: a.Work, Width: o.Width, Height: o.Height, Argv: a.command(),
		Buffer: "clisharness", Poll: 50 * time.Millisecond, Grace: 15 * time.Second})
	if err != nil {
		return nil, err
	}
	a.Pane = pane
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
	argv := append(clistest.PaneEnv(), a.Env()...)
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

// Command is the pane's current command, as tmux names it.
func (a *Agent) Command() (string, error) {
	out, err := a.Tmux("display", "-p", "-t", a.ID, "#{pane_current_command}")
	return strings.TrimSpace(out), err
}

// Read is the CLI's reader's reading of the screen now.
func (a *Agent) Read() (delivery.Reading, string, error) {
	s, err := a.Capture()
	if err != nil {
		return delivery.Reading{}, s, err
	}
	return Reader(a.Opts.CLI).Read(strings.Split(s, "\n")), s, nil
}

// WaitState waits until the CLI's reader reads the screen as state.
func (a *Agent) WaitState(timeout time.Duration, state delivery.State) (string, error) {
	r := Reader(a.Opts.CLI)
	return a.WaitFor(timeout, func(s string) bool { return r.Read(strings.Split(s, "\n")).State == state })
}

// CacheDir is where scripts/clis.sh installs the CLI.
func CacheDir(cli string) string { return clistest.CacheDir(cli) }

// envName is the variable that names a CLI's executable: AGENTMSG_CODEX,
// AGENTMSG_GEMINI, AGENTMSG_QWEN.
func envName(cli string) string { return "AGENTMSG_" + strings.ToUpper(cli) }

// Find returns the CLI's executable from $AGENTMSG_<CLI>, else from the
// cache dir scripts/clis.sh installs into; it installs nothing.
func Find(cli string) (string, error) {
	if cli == Claude {
		return claudeharness.Find()
	}
	p, err := clistest.Find(envName(cli), CacheDir(cli), cli)
	if errors.Is(err, clistest.ErrNotInstalled) {
		return "", fmt.Errorf("clisharness: %s is not installed in %s (run scripts/clis.sh %s)", cli, CacheDir(cli), cli)
	}
	if err != nil {
		return "", fmt.Errorf("clisharness: %w", err)
	}
	return p, nil
}

// Ensure runs scripts/clis.sh CLI (found from the module root) to install
// the CLI if needed, and returns the executable's path.
func Ensure(cli string) (string, error) {
	if cli == Claude {
		return claudeharness.Ensure()
	}
	p, err := clistest.Script(16*time.Minute, "clis.sh", cli)
	if err != nil {
		return "", fmt.Errorf("clisharness: %w", err)
	}
	return p, nil
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
func Version(exe string) (string, error) { return clistest.Version(exe, 60*time.Second) }
