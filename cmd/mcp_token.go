package cmd

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agentmsg/agentmsg/identity"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/target"
)

// serverSocket is the tmux server the command names (-S, -L, the config,
// $TMUX, else tmux's default), canonical; "" when it names none that
// resolves (a token then speaks for the daemon's own server).
func serverSocket(f *Factory) string {
	env, err := f.Env()
	if err != nil {
		return ""
	}
	server, err := env.Server()
	if err != nil {
		return ""
	}
	return server.Socket
}

// NewCmdMCPToken is agentmsg mcp token: an agent's token for the daemon's
// MCP endpoint.
func NewCmdMCPToken(f *Factory) *cobra.Command {
	var orchestrator, revoke bool
	c := &cobra.Command{
		Use:   "token TEAM NAME",
		Short: "Make (or --revoke) an agent's token for the daemon's MCP endpoint (/mcp)",
		Long: `token prints a new token that makes its holder agent NAME of team TEAM on the
daemon's MCP endpoint (agentmsg serve, http://HOST:PORT/mcp over --tcp, or /mcp on
its Unix socket): one daemon serves every agent of the machine, and each one is
who its token says, whatever its requests claim. Give it to the agent CLI as a
header, for example:

  claude mcp add --transport http agentmsg http://127.0.0.1:7676/mcp \
    --header "Authorization: Bearer $(agentmsg mcp token alpha ana)"

or let agentmsg mcp install CLI --http write the entry (with --team and --from,
a new token of that agent in it; without, one that sends $AGENTMSG_MCP_TOKEN).

The token is printed once; the mailbox keeps only its hash. --revoke removes
every token of the agent.`,
		Args: argsBetween(2, 2, "TEAM NAME"),
		RunE: func(c *cobra.Command, args []string) error {
			t, err := target.New(args[0], args[1])
			if err != nil {
				return err
			}
			team, name := args[0], t.Agent()
			tokens := &identity.Tokens{Path: identity.DefaultPath(mailbox.DefaultRoot(f.LookupEnv))}
			if revoke {
				n, err := tokens.Revoke(team, name)
				if err != nil {
					return err
				}
				fmt.Fprintf(f.IO.Out, "revoked %d token(s) of %s/%s\n", n, team, name)
				return nil
			}
			token, err := tokens.Issue(identity.Grant{Team: team, Name: name, Orchestrator: orchestrator, Socket: serverSocket(f)})
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(f.IO.Out, token)
			return err
		},
	}
	c.Flags().BoolVar(&orchestrator, "orchestrator", false, "the token also serves the lead's tools")
	c.Flags().BoolVar(&revoke, "revoke", false, "remove every token of the agent instead")
	return c
}
