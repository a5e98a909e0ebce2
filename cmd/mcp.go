package cmd

import (
	"context"
	"errors"
	"slices"

	"github.com/spf13/cobra"

	"github.com/agentmsg/agentmsg/mailbox"
)

// MCPOptions are mcp's inputs.
type MCPOptions struct {
	IO           *IOStreams
	Factory      *Factory
	Orchestrator bool
}

func NewCmdMCP(f *Factory) *cobra.Command {
	return newCmdMCP(f, nil)
}

func newCmdMCP(f *Factory, runF func(context.Context, *MCPOptions) error) *cobra.Command {
	opts := &MCPOptions{IO: f.IO, Factory: f}
	c := &cobra.Command{
		Use:   "mcp",
		Short: "Serve agentmsg's messaging as MCP tools over stdio",
		Long: `MCP serves agentmsg as a Model Context Protocol server on stdin and stdout, for
an agent CLI (Claude Code, Codex, Gemini CLI) to start. The caller's identity
is found as for every command: --from/--team, AGENTMSG_FROM/AGENTMSG_TEAM, or
the agent-<team>-<name> tmux session it runs in.

Agent tools: check_messages, send_message, request_task, claim_request,
list_agents, wait_for_message (timeout_seconds: default 30, at most 120).

With --orchestrator also: broadcast, shutdown_agent, kill_agent,
get_agent_status, assign_task (a task that starts with the agent's unread
messages) and create_workflow (steps with depends_on, run in parallel where
they can, each step's output put into the prompts of the steps after it).

Every tool has a time limit; failures are MCP tool errors with a sentence
saying what went wrong. Each stdin line is one JSON-RPC message: a malformed
line is answered with error -32700 (parse) or -32600 (invalid request) and
the server reads on; when stdin ends, the requests already read are answered
before it exits. agentmsg mcp install registers the server with an
agent CLI.`,
		Example: `  agentmsg mcp
  AGENTMSG_TEAM=alpha AGENTMSG_FROM=lead agentmsg mcp --orchestrator
  agentmsg mcp install claude`,
		Args: argsBetween(0, 0, "no arguments (or the install subcommand)"),
		RunE: func(c *cobra.Command, args []string) error {
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return mcpRun(c.Context(), opts)
		},
	}
	c.Flags().BoolVar(&opts.Orchestrator, "orchestrator", false, "also serve the lead's tools: broadcast, shutdown_agent, kill_agent, get_agent_status, assign_task, create_workflow")
	c.AddCommand(NewCmdMCPInstall(f, nil))
	c.AddCommand(NewCmdMCPToken(f))
	return c
}

func mcpRun(ctx context.Context, opts *MCPOptions) error {
	f := opts.Factory
	id, err := f.Identity(ctx)
	if err != nil {
		return err
	}
	team, err := needTeam(id)
	if err != nil {
		return err
	}
	svc, err := f.Service(ctx)
	if err != nil {
		return err
	}
	if err := announce(svc.Store, team, id.Name); err != nil {
		f.Log.Warn("could not put you on the team's status board", "err", err)
	}
	if f.ServeMCP == nil {
		return errors.New("this agentmsg was built without its MCP server")
	}
	svc.Team = team
	f.Log.Debug("serving MCP on stdio", "team", team, "name", id.Name, "orchestrator", opts.Orchestrator)
	return f.ServeMCP(ctx, svc, opts.Orchestrator, opts.IO.In, opts.IO.Out)
}

// announce puts the caller on its team's status board when it is not
// there yet, so that other agents can message it by name even when it has
// no tmux session (its inbox is where it reads).
func announce(store *mailbox.Store, team, name string) error {
	board, err := store.Board(team)
	if err != nil {
		return err
	}
	if slices.ContainsFunc(board, func(s mailbox.Status) bool { return s.Agent == name }) {
		return nil
	}
	return store.SetStatus(team, name, mailbox.Status{})
}
