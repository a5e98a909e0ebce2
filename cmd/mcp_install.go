package cmd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentmsg/agentmsg/config"
	"github.com/agentmsg/agentmsg/identity"
	"github.com/agentmsg/agentmsg/integration"
	"github.com/agentmsg/agentmsg/mailbox"
)

// MCPInstallOptions are mcp install's inputs.
type MCPInstallOptions struct {
	IO        *IOStreams
	LookupEnv func(string) (string, bool)
	JSON      func() bool

	CLI          string // claude, codex, gemini or qwen
	Print        bool   // print the merged file; write nothing
	Orchestrator bool
	Dir          string // claude: the project (default: the working directory)
	Home         string // codex, gemini, qwen: the home directory (default: $HOME)
	Command      string // the agentmsg to run (default: this executable)
	// Args go before "mcp": a -S/-L given on this command line.
	Args []string
	// Env is AGENTMSG_TEAM / AGENTMSG_FROM when --team / --from were given.
	Env map[string]string

	// HTTP: an entry for the daemon's MCP endpoint at URL (default:
	// http://<[serve] tcp>/mcp) instead of a command.
	HTTP bool
	URL  string
	// Config is the configuration, for [serve] tcp.
	Config func() (*config.Loaded, error)
	// Tokens are the MCP tokens the daemon takes.
	Tokens *identity.Tokens
	// Socket is the tmux server whose agent a token speaks for.
	Socket func() string
}

func NewCmdMCPInstall(f *Factory, runF func(context.Context, *MCPInstallOptions) error) *cobra.Command {
	opts := &MCPInstallOptions{IO: f.IO, LookupEnv: f.LookupEnv, JSON: func() bool { return f.JSON }, Config: f.Config,
		Socket: func() string { return serverSocket(f) },
		Tokens: &identity.Tokens{Path: identity.DefaultPath(mailbox.DefaultRoot(f.LookupEnv))}}
	names := integration.WithMCP()
	c := &cobra.Command{
		Use:   "install (" + strings.Join(names, " | ") + ")",
		Short: "Register agentmsg's MCP server with an agent CLI (writes its settings file; --print to only show it)",
		Long: `Install merges the entry that makes an agent CLI start "agentmsg mcp" into
that CLI's settings file, leaving every other entry as it was (an earlier
agentmsg entry is replaced):

` + mcpTable() + `
` + installHelp + `

A file that cannot be merged (not valid JSON or TOML) is left alone, and the
entry is shown to add by hand. agentmsg hooks install behaves the same way.

--team and --from given here are put into the server's environment
(AGENTMSG_TEAM, AGENTMSG_FROM); without them the server finds its identity
in the tmux session the CLI runs in. -S / -L are passed on to the server.

--http points the CLI at the daemon's MCP endpoint instead (agentmsg serve,
over TCP: --url, or http://<[serve] tcp>/mcp from the config file), where
an agent is who its token says. With --team and --from, the file is that
one agent's: a new token for it (with --orchestrator, for the lead's tools
too) is written into the entry, and the file holds a secret from then on (a
new file is made readable by you alone). Without them, the entry takes the
token from the agent's environment, AGENTMSG_MCP_TOKEN, so that agents
sharing the file each send their own (agentmsg mcp token TEAM NAME prints
one; agentmsg spawn sets it when [serve] tcp is configured). A token the
replaced entry held is revoked.`,
		Example: `  agentmsg mcp install claude
  agentmsg mcp install claude --print --orchestrator
  agentmsg --team alpha --from lead mcp install codex
  agentmsg mcp install gemini --home /tmp/home
  agentmsg --team alpha --from ana mcp install claude --http
  agentmsg mcp install codex --http --url http://127.0.0.1:7676/mcp`,
		Args:      argsBetween(1, 1, orList(names)),
		ValidArgs: names,
		RunE: func(c *cobra.Command, args []string) error {
			opts.CLI = args[0]
			if !slices.Contains(names, opts.CLI) {
				return usagef("mcp install %q: want %s", opts.CLI, orList(names))
			}
			opts.Env = map[string]string{}
			for flag, env := range map[string]string{"team": "AGENTMSG_TEAM", "from": "AGENTMSG_FROM"} {
				if fl := c.Flag(flag); fl != nil && fl.Changed {
					opts.Env[env] = fl.Value.String()
				}
			}
			opts.Args = serverArgs(c)
			if opts.Command == "" {
				exe, err := os.Executable()
				if err != nil {
					return fmt.Errorf("finding the agentmsg executable (give it with --command): %w", err)
				}
				if resolved, err := filepath.EvalSymlinks(exe); err == nil {
					exe = resolved
				}
				opts.Command = exe
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return mcpInstallRun(opts)
		},
	}
	fl := c.Flags()
	fl.BoolVar(&opts.Print, "print", false, "print the settings file as it would be written, and write nothing")
	// --write was needed before writing became the default; still accepted.
	fl.Bool("write", false, "write the file (the default now)")
	_ = fl.MarkDeprecated("write", "writing is the default now (--print only prints)")
	fl.BoolVar(&opts.Orchestrator, "orchestrator", false, "register the orchestrator's tools too (agentmsg mcp --orchestrator)")
	fl.StringVar(&opts.Dir, "dir", "", "claude: the project directory that holds .mcp.json (default: the working directory)")
	fl.StringVar(&opts.Home, "home", "", "codex, gemini, qwen: the home directory (default: $HOME; codex: $CODEX_HOME when set)")
	fl.StringVar(&opts.Command, "command", "", "the agentmsg program the CLI runs (default: this executable)")
	fl.BoolVar(&opts.HTTP, "http", false, "reach the daemon's MCP endpoint over HTTP instead of starting agentmsg mcp (needs agentmsg serve on TCP)")
	fl.StringVar(&opts.URL, "url", "", "with --http: the endpoint (default: http://<[serve] tcp>/mcp)")
	return c
}

// entry is the server entry the options ask for.
func (o *MCPInstallOptions) entry() integration.MCPServer {
	args := append(append([]string{}, o.Args...), "mcp")
	if o.Orchestrator {
		args = append(args, "--orchestrator")
	}
	e := integration.MCPServer{Command: o.Command, Args: args}
	if len(o.Env) > 0 {
		e.Env = o.Env
	}
	return e
}

func mcpInstallRun(o *MCPInstallOptions) error {
	if !o.HTTP && o.URL != "" {
		return usagef("mcp install: --url is for --http")
	}
	if o.HTTP {
		return mcpInstallHTTPRun(o)
	}
	entry := o.entry()
	rep, err := o.install(integration.MCPInstall{Server: entry})
	if err != nil {
		return installErr(err)
	}
	revoked, err := o.revoke(rep.Replaced)
	if o.JSON() {
		writeJSON(&Factory{IO: o.IO}, struct {
			integration.Report
			Entry   integration.MCPServer `json:"entry"`
			Revoked []string              `json:"revoked,omitempty"`
		}{rep.Report, entry, revoked})
		return err
	}
	if perr := printInstall(o.IO, rep.Report, o.Print, "registered agentmsg's MCP server in "+rep.Path); perr != nil {
		return perr
	}
	o.printRevoked(revoked)
	return err
}

// install runs the install r asks for, with the options' CLI and files.
func (o *MCPInstallOptions) install(r integration.MCPInstall) (integration.MCPReport, error) {
	dir := o.Dir
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return integration.MCPReport{}, err
		}
		dir = wd
	}
	r.CLI, r.Dir, r.Home, r.LookupEnv = o.CLI, dir, o.Home, o.LookupEnv
	r.Orchestrator, r.Print, r.Now = o.Orchestrator, o.Print, time.Now()
	return integration.InstallMCP(r)
}

// revoke takes back the tokens of the entries an install replaced: the
// file no longer holds them. It returns whose they were ("alpha/ana").
func (o *MCPInstallOptions) revoke(tokens []string) ([]string, error) {
	var whose []string
	for _, t := range tokens {
		g, ok, err := o.Tokens.Forget(t)
		if err != nil {
			return whose, fmt.Errorf("revoking the token the replaced entry held (agentmsg mcp token --revoke TEAM NAME revokes it): %w", err)
		}
		if ok {
			whose = append(whose, g.Team+"/"+g.Name)
		}
	}
	return whose, nil
}

func (o *MCPInstallOptions) printRevoked(whose []string) {
	for _, w := range whose {
		fmt.Fprintf(o.IO.Out, "revoked %s's token, which the replaced entry held\n", w)
	}
}

// mcpTable is, for --help, where each CLI's MCP servers are registered.
func mcpTable() string {
	var b strings.Builder
	for _, name := range integration.WithMCP() {
		cli, _ := integration.Lookup(name)
		m := cli.MCP
		where, key := "~/"+m.Path, "mcpServers.agentmsg"
		if m.Base == integration.Project {
			where = m.Path + " in the project (--dir, default: here)"
		}
		if m.EnvDir != "" {
			where += " ($" + m.EnvDir + ", or --home)"
		} else if m.Base == integration.Home {
			where += " (--home)"
		}
		if m.Format == integration.TOML {
			key = "[mcp_servers.agentmsg]"
		}
		fmt.Fprintf(&b, "  %-7s %s: %s\n", name, where, key)
	}
	return b.String()
}
