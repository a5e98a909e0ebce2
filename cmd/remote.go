package cmd

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/agentmsg/agentmsg/app"
	"github.com/agentmsg/agentmsg/config"
	"github.com/agentmsg/agentmsg/identity"
	"github.com/agentmsg/agentmsg/internal/safesock"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/wire"
)

// When a daemon runs (agentmsg serve), the commands it can run go to it:
// the command line, the environment and stdin go over its socket, the
// command runs there over the daemon's shared tmux clients, and stdout,
// stderr and the exit code come back. The output is the same either way,
// since the same code produces it; only the time differs.

// forwarded are the commands a daemon runs for a client: those that work
// with agents and the mailbox. Not the ones that read or write files in
// the caller's directory (spawn's working directory, hooks and mcp
// install), or run long on the caller's terminal (mcp, serve, top).
var forwarded = []string{"send", "broadcast", "deliver", "list", "reply", "inbox", "read", "wait", "log",
	"request", "claim", "requests", "status", "board", "shutdown", "kill", "agents", "heartbeat", "doctor", "task", "hosts"}

// forward runs args in the daemon when one answers on its socket, and
// reports whether it did (ok false: run it here). Nothing is sent until
// the mailbox root, the socket and the process listening on it are known
// to be this user's (safesock.Dial): a root under a shared TMPDIR that
// another user made first, with their socket in it, would otherwise get
// every command line this user runs. Such a root is refused here with its
// reason, by the same check a command run here makes (mailbox.Store.Check).
func forward(ctx context.Context, ios *IOStreams, lookupEnv func(string) (string, bool), environ, args []string) (code int, ok bool) {
	if v, _ := lookupEnv("AGENTMSG_DIRECT"); v == "1" || !forwardable(args) {
		return 0, false
	}
	store := mailbox.Default(lookupEnv)
	if store.Check() != nil {
		return 0, false // run here, where the store refuses the root and says why
	}
	sock := app.DaemonSocket(store.Root)
	switch err := safesock.Check(sock); {
	case errors.Is(err, fs.ErrNotExist):
		if !autoStart(lookupEnv, store, sock) {
			return 0, false // no daemon: a look at the socket and the config is all it costs
		}
	case err != nil:
		refuseDaemon(ios, err)
		return 0, false
	}
	env := forwardedEnv(environ)
	if code, ok := forwardTo(ctx, sock, ios, env, args); ok {
		return code, true
	}
	// A socket left by a daemon that died: start one when asked to.
	if autoStart(lookupEnv, store, sock) {
		return forwardTo(ctx, sock, ios, env, args)
	}
	return 0, false
}

// refuseDaemon says why a daemon's socket was not used; the command then
// runs here.
func refuseDaemon(ios *IOStreams, err error) {
	fmt.Fprintf(ios.ErrOut, "agentmsg: not using the daemon: %v; running the command here instead\n", err)
}

// forwardedEnv is what of the caller's environment a forwarded command
// needs: the variables agentmsg reads (its own settings, the caller's tmux
// and pane, where its files live, who the caller is), never the rest of
// it (API keys, tokens of other programs). AGENTMSG_MCP_TOKEN is a secret
// no forwarded command reads.
func forwardedEnv(environ []string) []string {
	var out []string
	for _, kv := range environ {
		k, _, ok := strings.Cut(kv, "=")
		if ok && forwardedVar(k) {
			out = append(out, kv)
		}
	}
	return out
}

// forwardedVars are the variables, besides AGENTMSG_*, that forwarded
// commands read (TestForwardedEnvCoversWhatCommandsRead keeps it true).
var forwardedVars = []string{"TMUX", "TMUX_PANE", "TMUX_TMPDIR", "HOME", "USER", "LOGNAME",
	"XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR", "TMPDIR", "NO_COLOR"}

func forwardedVar(k string) bool {
	if k == identity.EnvVar {
		return false
	}
	return strings.HasPrefix(k, "AGENTMSG_") || slices.Contains(forwardedVars, k)
}

// daemonEnv is the environment a daemon started on demand gets: what it
// needs to find its files, its tmux and its hosts (ssh's agent for the
// tunnels), never the identity of the pane of the command that started it
// (AGENTMSG_FROM, AGENTMSG_TEAM, its MCP token, TMUX_PANE: an app's caller
// would have become that agent), nor that command's other secrets (API
// keys), which a tmux server the daemon starts would hand to every agent
// it spawns.
func daemonEnv(environ []string) []string {
	keep := []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "TZ", "TMPDIR", "TMUX", "TMUX_TMPDIR", "SSH_AUTH_SOCK"}
	drop := []string{"AGENTMSG_FROM", "AGENTMSG_TEAM", identity.EnvVar, "AGENTMSG_DIRECT"}
	var out []string
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case slices.Contains(drop, k):
		case slices.Contains(keep, k), strings.HasPrefix(k, "LC_"), strings.HasPrefix(k, "XDG_"), strings.HasPrefix(k, "AGENTMSG_"):
			out = append(out, kv)
		}
	}
	return out
}

// forwardable reports whether args name a command the daemon runs, and
// --direct is not among the flags.
func forwardable(args []string) bool {
	for _, a := range args {
		switch {
		case a == "--":
			return false
		case a == "--direct" || a == "--direct=true" || a == "-h" || a == "--help":
			return false
		case len(a) > 0 && a[0] != '-' && slices.Contains(forwarded, a):
			return true
		}
	}
	return false
}

// forwardTo runs args in the daemon listening at sock. Until the daemon
// has taken the command, any failure means it runs here instead.
func forwardTo(ctx context.Context, sock string, ios *IOStreams, environ, args []string) (int, bool) {
	// The first connection is made, and its listener checked, before the
	// request exists; the run's later requests (stdin, interrupt) dial
	// and check their own.
	first, err := safesock.Dial(ctx, sock)
	if err != nil {
		if errors.Is(err, safesock.ErrNotOurs) {
			refuseDaemon(ios, err)
		}
		return 0, false // not answering: a daemon that died, or none
	}
	unused := make(chan net.Conn, 1)
	unused <- first
	defer func() {
		select {
		case c := <-unused:
			c.Close()
		default:
		}
	}()
	client := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			select {
			case c := <-unused:
				return c, nil
			default:
				return safesock.Dial(ctx, sock)
			}
		},
		DisableCompression: true,
	}}
	head, err := json.Marshal(wire.CLIRequest{Args: args, Env: environ, InTTY: ios.InTTY, ErrTTY: ios.ErrTTY})
	if err != nil {
		return 0, false
	}
	// Not ctx: a Ctrl-C interrupts the command in the daemon, which then
	// answers as it would have here.
	req, err := http.NewRequestWithContext(context.WithoutCancel(ctx), http.MethodPost, "http://agentmsg/v1/cli", bytes.NewReader(head))
	if err != nil {
		return 0, false
	}
	req.Header.Set("Content-Type", "application/x-ndjson")
	resp, err := client.Do(req)
	if err != nil {
		return 0, false // not answering: a daemon that died, or none
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, false
	}
	frames := bufio.NewReaderSize(resp.Body, 64<<10)
	var run string
	interrupted := make(chan struct{})
	defer close(interrupted)
	for first := true; ; first = false {
		line, err := frames.ReadBytes('\n')
		if err != nil {
			if first {
				return 0, false
			}
			fmt.Fprintf(ios.ErrOut, "agentmsg: the daemon went away while it ran this command (%v); what became of a message: agentmsg --direct log --id ID\n", err)
			return ExitError, true
		}
		var fr wire.CLIFrame
		if err := json.Unmarshal(line, &fr); err != nil {
			fmt.Fprintf(ios.ErrOut, "agentmsg: the daemon's answer: %v\n", err)
			return ExitError, true
		}
		if fr.Run != "" {
			run = fr.Run
			go interruptOnSignal(ctx, client, run, interrupted)
		}
		if fr.Stdin {
			go giveStdin(client, run, ios)
		}
		ios.Out.Write(fr.Stdout)
		ios.ErrOut.Write(fr.Stderr)
		if fr.Exit != nil {
			return *fr.Exit, true
		}
	}
}

// giveStdin sends stdin to the run, which asked for it (the command reads
// it); a terminal's is none.
func giveStdin(client *http.Client, run string, ios *IOStreams) {
	var in io.Reader = http.NoBody
	if !ios.InTTY && ios.In != nil {
		in = ios.In
	}
	req, err := http.NewRequest(http.MethodPost, "http://agentmsg/v1/cli/"+run+"/stdin", in)
	if err != nil {
		return
	}
	if resp, err := client.Do(req); err == nil {
		resp.Body.Close()
	}
}

// interruptOnSignal passes a Ctrl-C (ctx ending) on to the run in the
// daemon, which stops as the command would have here.
func interruptOnSignal(ctx context.Context, client *http.Client, run string, done <-chan struct{}) {
	select {
	case <-done:
		return
	case <-ctx.Done():
	}
	req, err := http.NewRequest(http.MethodPost, "http://agentmsg/v1/cli/"+run+"/interrupt", nil)
	if err != nil {
		return
	}
	c, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if resp, err := client.Do(req.WithContext(c)); err == nil {
		resp.Body.Close()
	}
}

// Daemon runs agentmsg serve (main hands in package serve's).
type Daemon func(ctx context.Context, env app.Env, opts ServeOptions) error

// ServeOptions are agentmsg serve's flags.
type ServeOptions struct {
	Socket      string
	TCP         string
	TokenFile   string
	AllowRemote bool
	Direct      bool   // no control client
	Version     string // buildinfo's: which agentmsg this is
	Commit      string
	Date        string
	// Ready hears where the daemon listens: its socket, and its TCP
	// address when it has one.
	Ready func(socket, tcp string)
}

var errNoDaemon = errors.New("this agentmsg was built without its daemon")

// autoStart starts the daemon for a command that found none, when the
// configuration asks for it ([serve] auto = true, or AGENTMSG_SERVE_AUTO=1),
// and waits, briefly, until it answers. Reports whether one answers now.
func autoStart(lookupEnv func(string) (string, bool), store *mailbox.Store, sock string) bool {
	if v, _ := lookupEnv("AGENTMSG_SERVE_AUTO"); v != "1" {
		cfg, err := config.Load(lookupEnv, "")
		if err != nil || !cfg.Serve.Auto {
			return false
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return false
	}
	if err := store.EnsureRoot(); err != nil {
		return false
	}
	logf, err := os.OpenFile(filepath.Join(filepath.Dir(sock), "serve.log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return false
	}
	defer logf.Close()
	cmd := exec.Command(exe, "serve")
	cmd.Env = daemonEnv(os.Environ())
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // outlives this command and its terminal
	if err := cmd.Start(); err != nil {
		return false
	}
	_ = cmd.Process.Release()
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		c, err := safesock.Dial(ctx, sock)
		cancel()
		if err == nil {
			c.Close()
			return true
		}
	}
	return false
}
