package cmd

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/agentmsg/agentmsg/message"
	"github.com/agentmsg/agentmsg/service"
)

// ReplyOptions are reply's inputs.
type ReplyOptions struct {
	composer
	IO        *IOStreams
	JSON      func() bool
	LookupEnv func(string) (string, bool)

	To        message.ID // the message answered
	Message   string
	FromStdin bool
}

// NewCmdReply is reply as the root command adds it.
func NewCmdReply(f *Factory) *cobra.Command { return newCmdReply(f, nil) }

func newCmdReply(f *Factory, runF func(context.Context, *ReplyOptions) error) *cobra.Command {
	opts := &ReplyOptions{composer: newComposer(f), IO: f.IO, JSON: func() bool { return f.JSON }, LookupEnv: f.LookupEnv}
	noQueue := false
	c := &cobra.Command{
		Use:   "reply ID [MESSAGE...]",
		Short: "Answer a message in your inbox: to its sender, with reply_to set",
		Long: `Reply sends MESSAGE to whoever sent message ID (found in your own inbox: your
team and name come from --team/--from, AGENTMSG_TEAM/AGENTMSG_FROM, or the
agent session you run in), with reply_to = ID, so a sender waiting with
"agentmsg wait --reply-to ID" wakes up. It is typed into the sender's pane
when the sender is an agent on this server, and only recorded in the
sender's inbox otherwise (a person, or an agent outside tmux).

The message comes from the arguments, or from stdin when none is given or
it is "-".

` + typesHelp + `

` + exitCodesHelp,
		Example: `  agentmsg reply MSG_LEAD_1a2b3c4d "done: PR 14 is up"
  agentmsg reply --type shutdown-response --meta accept=false MSG_LEAD_1a2b3c4d "finishing the migration first"
  agentmsg reply --type plan-approval --meta approve=true MSG_ANA_99aa00bb "go ahead"`,
		Args: argsBetween(1, -1, "ID [MESSAGE...]"),
		RunE: func(c *cobra.Command, args []string) error {
			opts.To = message.ID(args[0])
			if !message.Valid(string(opts.To)) {
				return usagef("%q is not a message id (MSG_<SENDER>_<8 hex>)", args[0])
			}
			rest := args[1:]
			opts.Message, opts.FromStdin = textArgs(rest)
			opts.Delivery.Queue = !noQueue
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return replyRun(c.Context(), opts)
		},
	}
	c.Flags().BoolVar(&noQueue, "no-queue", false, "fail (exit 4) when the sender's agent is not ready in time")
	opts.Envelope.register(c)
	return c
}

func replyRun(ctx context.Context, opts *ReplyOptions) error {
	draft, svc, err := opts.prepare(ctx, opts.IO, opts.Message, opts.FromStdin)
	if err != nil {
		return err
	}
	res, err := svc.Reply(ctx, service.ReplyRequest{To: opts.To, Draft: draft, Queue: opts.Delivery.Queue, Call: opts.Delivery.Call})
	if err != nil {
		return err
	}
	return reportSent(&Factory{IO: opts.IO, JSON: opts.JSON(), LookupEnv: opts.LookupEnv}, res)
}
