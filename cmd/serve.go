package cmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agentmsg/agentmsg/config"
	"github.com/agentmsg/agentmsg/internal/buildinfo"
)

// ServeCmdOptions are agentmsg serve's inputs.
type ServeCmdOptions struct {
	Factory *Factory
	ServeOptions
	Install bool
}

// NewCmdServe is agentmsg serve: the daemon.
func NewCmdServe(f *Factory, runF func(context.Context, *ServeCmdOptions) error) *cobra.Command {
	opts := &ServeCmdOptions{Factory: f}
	c := &cobra.Command{
		Use:   "serve",
		Short: "Run the daemon: an HTTP API and event stream for apps, and fast sends for the CLI",
		Long: `serve runs agentmsg's daemon, one per user: every operation over HTTP and
JSON on a Unix socket only you can reach (<mailbox root>/serve.sock, mode 0600,
each connection's user checked), an event stream (GET /v1/events, Server-Sent
Events, resumable with Last-Event-ID), and the CLI's commands: while it runs,
agentmsg send, broadcast, deliver, list, ... run in the daemon (the same code,
the same output) over one shared control-mode client per tmux server, so a
send takes a few milliseconds instead of tens. --direct (or AGENTMSG_DIRECT=1)
runs a command in its own process anyway.

A second serve exits at once, naming the first. Stop it with Ctrl-C or
SIGTERM: it lets requests in flight end and detaches its tmux clients
cleanly. GET /v1/openapi.json describes the API.

--tcp and --token-file default to [serve] tcp and token_file in the config
file (so does the unit serve --install writes): over TCP the daemon serves
MCP at /mcp to agent CLIs, each with its own token (agentmsg mcp install
CLI --http).`,
		Example: `  agentmsg serve &
  curl --unix-socket ~/.local/state/agentmsg/serve.sock -s http://localhost/v1/agents
  curl --unix-socket ~/.local/state/agentmsg/serve.sock -s http://localhost/v1/send \
    -d '{"team":"alpha","agent":"ana","text":"hi","from":"app","ready_timeout":"1s"}'
  agentmsg serve --tcp 127.0.0.1:7676 --token-file ~/.config/agentmsg/token`,
		Args: argsBetween(0, 0, "no arguments"),
		RunE: func(c *cobra.Command, args []string) error {
			b := buildinfo.Get()
			opts.Version, opts.Commit, opts.Date = b.Version, b.Commit, b.Date
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return serveRun(c.Context(), opts)
		},
	}
	fl := c.Flags()
	fl.StringVar(&opts.Socket, "listen", "", "the Unix socket to listen on (default: <mailbox root>/serve.sock, where the CLI looks)")
	fl.StringVar(&opts.TCP, "tcp", "", "also listen on this loopback address (host:port; default: [serve] tcp in the config file); every request there needs --token-file's token, /mcp an agent's own")
	fl.StringVar(&opts.TokenFile, "token-file", "", "the bearer token for --tcp (made, mode 0600, when missing; default: [serve] token_file)")
	fl.BoolVar(&opts.AllowRemote, "allow-remote", false, "let --tcp be an address other machines can reach (it says so loudly)")
	fl.BoolVar(&opts.Direct, "no-control", false, "use no tmux control-mode client: every tmux command a process of its own")
	fl.BoolVar(&opts.Install, "install", false, "install and start a systemd user unit that runs agentmsg serve")
	return c
}

func serveRun(ctx context.Context, opts *ServeCmdOptions) error {
	f := opts.Factory
	if opts.Install {
		return installUnit(ctx, f)
	}
	if f.Serve == nil {
		return errNoDaemon
	}
	env, err := f.Env()
	if err != nil {
		return err
	}
	opts.withConfig(env.Config.Serve)
	opts.Ready = func(socket, tcp string) {
		fmt.Fprintf(f.IO.ErrOut, "agentmsg serve: listening on %s (pid %d)\n", socket, pid())
		if tcp != "" {
			fmt.Fprintf(f.IO.ErrOut, "agentmsg serve: and on TCP %s: every request there carries the token in %s (Authorization: Bearer), /mcp an agent's own\n", tcp, opts.TokenFile)
		}
	}
	return f.Serve(ctx, env, opts.ServeOptions)
}

// withConfig takes [serve] tcp and token_file where the flags say nothing.
func (o *ServeCmdOptions) withConfig(c config.ServeSettings) {
	if o.TCP == "" {
		o.TCP = c.TCP
	}
	if o.TokenFile == "" {
		o.TokenFile = c.TokenFile
	}
}
