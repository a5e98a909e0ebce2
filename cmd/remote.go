package cmd

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/agentmsg/agentmsg/app"
	"github.com/agentmsg/agentmsg/config"
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
// reports whether it did (ok false: run it here).
func forward(ctx context.Context, ios *IOStreams, lookupEnv func(string) (string, bool), environ, args []string) (code int, ok bool) {
	if v, _ := lookupEnv("AGENTMSG_DIRECT"); v == "1" || !forwardable(args) {
		return 0, false
	}
	sock := app.DaemonSocket(mailbox.DefaultRoot(lookupEnv))
	if _, err := os.Stat(sock); err != nil && !autoStart(lookupEnv, sock) {
		return 0, false // no daemon: a stat and a look at the config is all it costs
	}
	if code, ok := forwardTo(ctx, sock, ios, environ, args); ok {
		return code, true
	}
	// A socket left by a daemon that died: start one when asked to.
	if autoStart(lookupEnv, sock) {
		return forwardTo(ctx, sock, ios, environ, args)
	}
	return 0, false
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
	client := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
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
	Direct      bool // no control client
	Version     string
	Ready       func(socket string)
}

var errNoDaemon = errors.New("this agentmsg was built without its daemon")

// autoStart starts the daemon for a command that found none, when the
// configuration asks for it ([serve] auto = true, or AGENTMSG_SERVE_AUTO=1),
// and waits, briefly, until it answers. Reports whether one answers now.
func autoStart(lookupEnv func(string) (string, bool), sock string) bool {
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
	if err := os.MkdirAll(filepath.Dir(sock), 0o700); err != nil {
		return false
	}
	logf, err := os.OpenFile(filepath.Join(filepath.Dir(sock), "serve.log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return false
	}
	defer logf.Close()
	cmd := exec.Command(exe, "serve")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // outlives this command and its terminal
	if err := cmd.Start(); err != nil {
		return false
	}
	_ = cmd.Process.Release()
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if c, err := net.Dial("unix", sock); err == nil {
			c.Close()
			return true
		}
	}
	return false
}
