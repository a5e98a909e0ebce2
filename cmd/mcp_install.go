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

	"github.com/agentmsg/agentmsg/integration"
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
}

func NewCmdMCPInstall(f *Factory, runF func(context.Context, *MCPInstallOptions) error) *cobra.Command {
	opts := &MCPInstallOptions{IO: f.IO, LookupEnv: f.LookupEnv, JSON: func() bool { return f.JSON }}
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
in the tmux session the CLI runs in. -S / -L are passed on to the server.`,
		Example: `  agentmsg mcp install claude
  agentmsg mcp install claude --print --orchestrator
  agentmsg --team alpha --from lead mcp install codex
  agentmsg mcp install gemini --home /tmp/home`,
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
	dir := o.Dir
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		dir = wd
	}
	entry := o.entry()
	rep, err := integration.InstallMCP(integration.MCPInstall{
		CLI: o.CLI, Dir: dir, Home: o.Home, LookupEnv: o.LookupEnv,
		Server: entry, Orchestrator: o.Orchestrator, Print: o.Print, Now: time.Now(),
	})
	if err != nil {
		return installErr(err)
	}
	if o.JSON() {
		writeJSON(&Factory{IO: o.IO}, struct {
			integration.Report
			Entry integration.MCPServer `json:"entry"`
		}{rep, entry})
		return nil
	}
	return printInstall(o.IO, rep, o.Print, "registered agentmsg's MCP server in "+rep.Path)
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
