package cmd

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentmsg/agentmsg/wire"
)

// PrimeOptions are prime's inputs.
type PrimeOptions struct {
	IO       *IOStreams
	JSON     func() bool
	Identity func(ctx context.Context) (Identity, error)
}

func NewCmdPrime(f *Factory, runF func(context.Context, *PrimeOptions) error) *cobra.Command {
	opts := &PrimeOptions{IO: f.IO, JSON: func() bool { return f.JSON },
		Identity: func(ctx context.Context) (Identity, error) { return f.Identity(ctx) }}
	return &cobra.Command{
		Use:   "prime",
		Short: "Print what an agent needs to know to take part: who it is, how to read, answer and claim",
		Long: `Prime prints a short block for an agent's instructions (CLAUDE.md, AGENTS.md, a
first prompt): who it is, how to read its messages, reply, answer a
shutdown-request and a plan, and claim a request, with the CLI and with the
MCP tools. Who it is comes as for every command (see agentmsg whoami): run it
as the agent, or give --team and --from.`,
		Example: `  agentmsg prime
  agentmsg --team alpha --from ana prime >> AGENTS.md`,
		Args: argsBetween(0, 0, "no arguments"),
		RunE: func(c *cobra.Command, args []string) error {
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return primeRun(c.Context(), opts)
		},
	}
}

func primeRun(ctx context.Context, opts *PrimeOptions) error {
	id, err := opts.Identity(ctx)
	if err != nil {
		return err
	}
	team, err := needTeam(id)
	if err != nil {
		return err
	}
	text := primer(id.Name, team)
	if opts.JSON() {
		writeJSON(&Factory{IO: opts.IO}, wire.Prime{Name: id.Name, Team: team, Instructions: text})
		return nil
	}
	fmt.Fprint(opts.IO.Out, text)
	return nil
}

// primer is the block for agent name of team: each protocol message and
// the exact command that answers it, as the messages' own hints say
// (service.AnswerHint).
func primer(name, team string) string {
	r := strings.NewReplacer("NAME", show(name), "TEAM", show(team))
	return r.Replace(`You are NAME, an agent of team TEAM. Other agents and your lead message you
through agentmsg: a message arrives in your input box as
"MSG_<SENDER>_<8 hex>: [type] text", and its id is how you answer it.

- Read: agentmsg inbox (what you have not read yet); agentmsg read MSG_ID (the
  whole of a long message, typed as "... (full text: agentmsg read MSG_ID)");
  agentmsg wait --type TYPE (block until one comes).
- Reply: agentmsg reply MSG_ID "text" (to its sender). Write: agentmsg send
  TEAM <agent> "text". Who is there: agentmsg list TEAM.
- A [shutdown-request] MSG_ID: finish your step, answer with
  agentmsg reply --type shutdown-response --meta accept=true MSG_ID "stopping now"
  and stop; to finish first, accept=false and say why.
- A [plan] MSG_ID for you to approve: answer with
  agentmsg reply --type plan-approval --meta approve=true MSG_ID "go ahead"
  or approve=false and what to change. To have a plan of yours approved:
  agentmsg send TEAM <lead> --type plan "the plan", then
  agentmsg wait --type plan-approval.
- A [request REQ_ID] that any agent of the team may take:
  agentmsg claim REQ_ID (exactly one claimant gets it; the others hear who did).
- Say what you do: agentmsg status set --state working --working-on "...".

With the agentmsg MCP server the tools are check_messages, read_message,
reply_message (type and metadata as above), send_message, wait_for_message,
claim_request and set_status.
`)
}
