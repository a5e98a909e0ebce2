package chaos

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentmsg/agentmsg/e2e/harness"
)

// worldSpec is what a round runs on, drawn from its seed.
type worldSpec struct {
	agents      []agentSpec
	servers     int  // 1, or 2: a second server with some of the same names
	hooks       bool // stand-ins run agentmsg's own prompt-submit and turn-end hooks
	disk        bool // the mailbox is on a small tmpfs that a step can fill
	daemon      bool // agentmsg serve runs, and the senders go through it
	askerPrompt string
}

type agentSpec struct {
	server    int
	team      string
	name      string
	prog      progKind
	busyAfter time.Duration // stand-ins: busy this long after each prompt
	hooks     bool
	spawned   bool // started by agentmsg spawn, which registers its pane
}

func (a agentSpec) session() string { return "agent-" + a.team + "-" + a.name }

// world is a round's servers, agents and the programs beside them.
type world struct {
	spec    worldSpec
	bins    harness.Binaries
	home    string // config, runtime, state, logs, scripts
	mailbox string // AGENTMSG_HOME on a tmpfs, or "" (under home)
	env     []string
	servers []*server
	agents  []*agent
	decoys  []*decoy
	daemon  *daemon // while it runs (spec.daemon)
}

type server struct {
	*harness.Server
	name  string // A, B
	alias string // the socket through a symlinked directory: another spelling of it
	// The commands agentmsg's hooks install writes for Claude Code.
	submitHook, turnEndHook string
}

type agent struct {
	spec agentSpec
	srv  *server
	prog *Program
	log  string
	sa   *harness.Agent // stand-ins
	pane string         // others
	argv []string       // others: the tmux command that starts it
	// extras are the programs beside it in its session, live ones only.
	extras []*decoy
}

// decoy is a program beside an agent: nothing is ever sent to it.
type decoy struct {
	kind progKind
	log  string
	pane string
	prog *Program
}

// Pane is the agent's pane now (it changes when its server restarts).
func (a *agent) Pane() string {
	if a.sa != nil {
		return a.sa.Pane
	}
	return a.pane
}

const mailboxSize = "16m"

func newWorld(spec worldSpec) (w *world, err error) {
	bins, err := harness.Build()
	if err != nil {
		return nil, err
	}
	home, err := os.MkdirTemp("/tmp", "chs")
	if err != nil {
		return nil, err
	}
	w = &world{spec: spec, bins: bins, home: home}
	defer func() {
		if err != nil {
			w.Close()
			w = nil
		}
	}()
	for _, d := range []string{"config/agentmsg", "runtime", "state", "logs", "bin", "hooks"} {
		if err := os.MkdirAll(filepath.Join(home, d), 0o700); err != nil {
			return nil, err
		}
	}
	if spec.disk {
		if err := w.mountMailbox(); err != nil {
			return nil, err
		}
	}
	w.env = append(harness.AgentmsgEnv(home, "lead"), "AGENTMSG_TMUX="+harness.TmuxBin())
	if w.mailbox != "" {
		w.env = append(w.env, "AGENTMSG_HOME="+w.mailbox)
	}
	if err := w.writeFiles(); err != nil {
		return nil, err
	}
	for i := range spec.servers {
		s, err := harness.NewServer()
		if err != nil {
			return nil, err
		}
		srv := &server{Server: s, name: string(rune('A' + i))}
		w.servers = append(w.servers, srv)
		link := filepath.Join(home, "alias"+srv.name)
		if err := os.Symlink(s.Dir, link); err != nil {
			return nil, err
		}
		srv.alias = filepath.Join(link, filepath.Base(s.Socket))
		if spec.hooks {
			if err := w.installHooks(srv); err != nil {
				return nil, err
			}
		}
	}
	for _, as := range spec.agents {
		a := &agent{spec: as, srv: w.servers[as.server]}
		a.prog = &Program{Label: a.label(), QueueUnseen: as.prog == progStandin}
		w.agents = append(w.agents, a)
	}
	if err := w.startAgents(w.agents); err != nil {
		return w, err
	}
	if spec.daemon {
		return w, w.startDaemon()
	}
	return w, nil
}

func (a *agent) label() string { return a.srv.name + "/" + a.spec.team + "/" + a.spec.name }

// writeFiles writes the config (profiles for the REPLs), python's REPL
// script and the read loop's binary name.
func (w *world) writeFiles() error {
	// The stand-ins' own profiles: an agent's CLI is one agentmsg knows,
	// as it is for a user (without them a split running a configured REPL
	// was the one known pane of an agent's session, and took its
	// messages). The plain program runs as "plain" (a link), a program
	// that takes no bracketed paste.
	config := harness.BaseConfig + `
[profiles.plain]
base = "generic"
commands = ["plain"]
bracketed_paste = false

[profiles.pyrepl]
base = "generic"
commands = ["python3"]
ready = '^>>>$'

[profiles.asker]
base = "generic"
commands = ["asker"]
ready = '^ask>$'
`
	if err := os.WriteFile(filepath.Join(w.home, "config/agentmsg/config.toml"), []byte(config), 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(w.home, "bin/repl.py"), []byte(replScript), 0o600); err != nil {
		return err
	}
	// tmux names a pane's command after the file run: a symlink to bash
	// called asker is "asker", not a shell agentmsg would refuse.
	if err := os.Symlink(w.bins.Standin, filepath.Join(w.home, "bin/plain")); err != nil {
		return err
	}
	return os.Symlink("/bin/bash", filepath.Join(w.home, "bin/asker"))
}

// mountMailbox puts the mailbox on a tmpfs of its own, which fillDisk can
// fill. A watchdog unmounts it if this process dies without Close.
func (w *world) mountMailbox() error {
	dir := filepath.Join(w.home, "mbox")
	if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+mailboxSize+",mode=0700", "tmpfs", dir).CombinedOutput(); err != nil {
		return fmt.Errorf("mounting a tmpfs for the mailbox: %v: %s", err, out)
	}
	w.mailbox = dir
	watch := exec.Command("/bin/sh", "-c", fmt.Sprintf(
		"while kill -0 %d 2>/dev/null && mountpoint -q '%s'; do sleep 1; done; mountpoint -q '%s' && umount -l '%s'; rm -rf '%s'",
		os.Getpid(), dir, dir, dir, w.home))
	if err := watch.Start(); err != nil {
		return err
	}
	go watch.Wait() // it ends with this process or the mount, whichever goes first
	return nil
}

// installHooks runs agentmsg's own installer for Claude Code and keeps the
// commands it wrote: where receipts go is agentmsg's business.
func (w *world) installHooks(srv *server) error {
	dir := filepath.Join(w.home, "hooks", srv.name)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	res, err := w.run(nil, "-S", srv.Socket, "hooks", "install", "claude", "--dir", dir)
	if err != nil || res.Code != 0 {
		return fmt.Errorf("hooks install: %v %s", err, res)
	}
	b, err := os.ReadFile(filepath.Join(dir, ".claude", "settings.json"))
	if err != nil {
		return err
	}
	var settings struct {
		Hooks map[string][]struct {
			Hooks []struct{ Command string }
		}
	}
	if err := json.Unmarshal(b, &settings); err != nil {
		return err
	}
	command := func(event string) (string, error) {
		for _, g := range settings.Hooks[event] {
			for _, h := range g.Hooks {
				return h.Command, nil
			}
		}
		return "", fmt.Errorf("hooks install wrote no %s hook: %s", event, b)
	}
	if srv.submitHook, err = command("UserPromptSubmit"); err != nil {
		return err
	}
	srv.turnEndHook, err = command("Stop")
	return err
}

// run runs agentmsg to the end in the world's environment.
func (w *world) run(stdin *string, args ...string) (harness.Result, error) {
	var res harness.Result
	cmd := exec.Command(w.bins.Agentmsg, args...)
	cmd.Env = w.env
	if stdin != nil {
		cmd.Stdin = strings.NewReader(*stdin)
	}
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.WaitDelay = 2 * time.Second
	start := time.Now()
	err := cmd.Run()
	res = harness.Result{Stdout: out.String(), Stderr: errb.String(), Elapsed: time.Since(start)}
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr):
		res.Code, err = exitErr.ExitCode(), nil
	default:
		res.Code = -1
	}
	return res, err
}

// paneEnv is what a hook run in a pane needs to find what the senders use.
func (w *world) paneEnv() []string {
	var env []string
	for _, kv := range w.env {
		if strings.HasPrefix(kv, "XDG_") || strings.HasPrefix(kv, "AGENTMSG_HOME=") || strings.HasPrefix(kv, "AGENTMSG_TMUX=") {
			env = append(env, kv)
		}
	}
	return env
}

func (w *world) startAgents(agents []*agent) error {
	errs := make([]error, len(agents))
	var wg sync.WaitGroup
	for i, a := range agents {
		wg.Go(func() { errs[i] = w.startAgent(a) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// startAgent starts a, or starts it again after its server restarted.
func (w *world) startAgent(a *agent) error {
	if a.sa != nil {
		return a.sa.Start()
	}
	if a.argv != nil {
		return w.startProgram(a)
	}
	switch a.spec.prog {
	case progStandin, progPlain:
		var opts []harness.AgentOption
		if a.spec.prog == progPlain {
			opts = append(opts, harness.Style("plain"), harness.NoBracketedPaste(), harness.Executable(filepath.Join(w.home, "bin/plain")))
		}
		if a.spec.busyAfter > 0 {
			opts = append(opts, harness.BusyAfterSubmit(a.spec.busyAfter))
		}
		if a.spec.hooks {
			opts = append(opts, harness.OnSubmit(a.srv.submitHook), harness.OnTurnEnd(a.srv.turnEndHook),
				harness.Env(w.paneEnv()...))
		}
		if a.spec.spawned {
			opts = append(opts, harness.LaunchWith(w.spawn(a)))
		}
		sa, err := a.srv.Server.StartAgent(a.spec.session(), opts...)
		if err != nil {
			return err
		}
		a.sa, a.log = sa, sa.LogPath
		return nil
	}
	a.log = w.newLog()
	a.argv = append([]string{"new-session", "-d", "-P", "-F", "#{pane_id}", "-s", a.spec.session(), "-x", "200", "-y", "50", "--"},
		w.command(a.spec.prog, a.log)...)
	return w.startProgram(a)
}

// spawn starts a stand-in with agentmsg spawn, which registers the pane it
// starts in: the agent's pane, whatever else its session comes to hold.
func (w *world) spawn(a *agent) harness.Launcher {
	return func(session string, env, command []string) (string, error) {
		args := []string{"-S", a.srv.Socket, "--json", "spawn", a.spec.team, a.spec.name, "--agent", "claude"}
		for _, kv := range env {
			args = append(args, "--env", kv)
		}
		res, err := w.run(nil, append(append(args, "--"), command...)...)
		if err != nil || res.Code != 0 {
			return "", fmt.Errorf("spawn %s: %v %s", a.label(), err, res)
		}
		var rep struct{ Pane string }
		if err := json.Unmarshal([]byte(res.Stdout), &rep); err != nil || rep.Pane == "" {
			return "", fmt.Errorf("spawn %s: no pane in its report: %v %s", a.label(), err, res)
		}
		return rep.Pane, nil
	}
}

var logs struct {
	sync.Mutex
	n int
}

func (w *world) newLog() string {
	logs.Lock()
	defer logs.Unlock()
	logs.n++
	return filepath.Join(w.home, "logs", fmt.Sprintf("prog%d.log", logs.n))
}

// command runs a program of kind that records what it reads in log.
func (w *world) command(kind progKind, log string) []string {
	switch kind {
	case progPython:
		return []string{"python3", "-q", filepath.Join(w.home, "bin/repl.py"), log}
	case progAsker:
		return []string{filepath.Join(w.home, "bin/asker"), "-c", askerLoop, "asker", log, w.spec.askerPrompt}
	case progShell:
		return []string{"env", "HISTFILE=" + log, "HISTSIZE=100000", "HISTFILESIZE=100000", "PROMPT_COMMAND=history -a",
			"PS1=$ ", "bash", "--norc", "--noprofile", "-i"}
	}
	return []string{w.bins.Standin, "-log", log, "-queue"}
}

// prompt is what kind shows when it waits for input.
func (w *world) prompt(kind progKind) string {
	switch kind {
	case progPython:
		return ">>>"
	case progAsker:
		return strings.TrimSpace(w.spec.askerPrompt)
	case progShell:
		return "$"
	}
	return "? for shortcuts"
}

func (w *world) startProgram(a *agent) error {
	out, err := a.srv.Server.Tmux(a.argv...)
	if err != nil {
		return err
	}
	a.pane = strings.TrimSpace(out)
	return w.waitPrompt(a.srv, a.pane, w.prompt(a.spec.prog))
}

// waitPrompt waits for a program to show its prompt: it reads input from
// then on.
func (w *world) waitPrompt(srv *server, pane, prompt string) error {
	deadline := time.Now().Add(harness.StartTimeout)
	for {
		screen, err := srv.Capture(pane)
		if err == nil && strings.Contains(screen, prompt) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s on %s: no %q on screen after %s (%v):\n%s", pane, srv.name, prompt, harness.StartTimeout, err, screen)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// addExtra starts a program beside a: in a new window, or in a split of
// its pane; detached leaves the agent's pane the active one.
func (w *world) addExtra(a *agent, kind progKind, split, detached bool) (*decoy, error) {
	d := &decoy{kind: kind, log: w.newLog()}
	args := []string{"new-window", "-t", "=" + a.spec.session() + ":"}
	if split {
		args = []string{"split-window", "-t", a.Pane()}
	}
	if detached {
		args = append(args, "-d")
	}
	args = append(append(args, "-P", "-F", "#{pane_id}", "--"), w.command(kind, d.log)...)
	out, err := a.srv.Server.Tmux(args...)
	if err != nil {
		return nil, err
	}
	d.pane = strings.TrimSpace(out)
	d.prog = &Program{Label: fmt.Sprintf("%s beside %s (%s %s)", kind, a.label(), map[bool]string{true: "split", false: "window"}[split], d.pane)}
	a.extras = append(a.extras, d)
	w.decoys = append(w.decoys, d)
	return d, w.waitPrompt(a.srv, d.pane, w.prompt(kind))
}

// restart kills srv and starts its agents again in order (pane ids then
// go to other agents than before); what ran beside them is gone.
func (w *world) restart(srv *server, order []*agent) error {
	if err := srv.Restart(); err != nil {
		return err
	}
	now := time.Now()
	for _, a := range order {
		a.extras = nil
		a.prog.Restarts = append(a.prog.Restarts, now)
		if err := w.startAgent(a); err != nil {
			return err
		}
	}
	return nil
}

// fillDisk fills the mailbox's tmpfs, then frees leave bytes.
func (w *world) fillDisk(leave int) error {
	path := filepath.Join(w.mailbox, "filler")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			break // full
		}
	}
	if leave == 0 {
		return nil
	}
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	return f.Truncate(max(0, fi.Size()-int64(leave)))
}

func (w *world) freeDisk() error {
	err := os.Remove(filepath.Join(w.mailbox, "filler"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// programs is every program whose record the oracle reads, read now.
func (w *world) programs() ([]*Program, error) {
	var progs []*Program
	for _, a := range w.agents {
		if err := a.prog.read(a.spec.prog, a.log); err != nil {
			return nil, err
		}
		progs = append(progs, a.prog)
	}
	for _, d := range w.decoys {
		if err := d.prog.read(d.kind, d.log); err != nil {
			return nil, err
		}
		progs = append(progs, d.prog)
	}
	return progs, nil
}

func (p *Program) read(kind progKind, log string) error {
	prompts, odd, err := readRecord(kind, log)
	if err != nil {
		return fmt.Errorf("%s: %w", p.Label, err)
	}
	p.Prompts, p.Odd = prompts, odd
	return nil
}

// logSizes is the size of every record, to see whether anything still
// happens.
func (w *world) logSizes() string {
	var b strings.Builder
	for _, a := range w.agents {
		b.WriteString(fileSize(a.log) + " ")
	}
	for _, d := range w.decoys {
		b.WriteString(fileSize(d.log) + " ")
	}
	return b.String()
}

func fileSize(path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return "-"
	}
	return strconv.FormatInt(fi.Size(), 10)
}

// Close takes down every server and the mailbox's mount, and removes
// every file of the world.
func (w *world) Close() error {
	errs := []error{w.stopDaemon()}
	for _, s := range w.servers {
		errs = append(errs, s.Close())
	}
	if w.mailbox != "" {
		if out, err := exec.Command("umount", w.mailbox).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("umount %s: %v: %s", w.mailbox, err, out))
			exec.Command("umount", "-l", w.mailbox).Run()
		}
	}
	errs = append(errs, os.RemoveAll(w.home))
	return errors.Join(errs...)
}

// extraPanes are the panes of the programs beside a.
func (a *agent) extraPanes() []string {
	var panes []string
	for _, d := range a.extras {
		panes = append(panes, d.pane)
	}
	return panes
}
