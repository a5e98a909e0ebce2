package cmd

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agentmsg/agentmsg/courier"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
)

func NewCmdReply(f *Factory) *cobra.Command {
	var env envelopeFlags
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
			replyTo := message.ID(args[0])
			if !message.Valid(string(replyTo)) {
				return usagef("%q is not a message id (MSG_<SENDER>_<8 hex>)", args[0])
			}
			text, err := messageText(f.IO, joinWords(args[1:]), len(args) == 1 || (len(args) == 2 && args[1] == "-"))
			if err != nil {
				return err
			}
			e, err := env.build()
			if err != nil {
				return err
			}
			ctx := c.Context()
			id, err := f.Identity(ctx)
			if err != nil {
				return err
			}
			team, err := id.NeedTeam()
			if err != nil {
				return err
			}
			orig, err := findMessage(f, team, id.Name, replyTo)
			if err != nil {
				return err
			}
			d, err := f.Dispatcher()
			if err != nil {
				return err
			}
			msg, err := d.NewMessage(id.Sender, text)
			if err != nil {
				return err
			}
			e.ID, e.From, e.Content, e.ReplyTo, e.RequestID = msg.ID, id.Name, msg.Text, replyTo, orig.RequestID
			cr, err := f.courier(d)
			if err != nil {
				return err
			}
			t, ok := courier.InboxOwner(team, orig.From)
			if !ok {
				return fmt.Errorf("the sender of %s, %q, has no inbox name agentmsg can reply to", replyTo, orig.From)
			}
			mode := courier.Mode{Queue: !noQueue}
			if exists, err := d.Exists(ctx, t); err != nil || !exists {
				mode.MailboxOnly = true // a person, or an agent not in tmux here
			}
			out := cr.Send(ctx, t, e, mode)
			return reportResult(f, out, id.Name)
		},
	}
	c.Flags().BoolVar(&noQueue, "no-queue", false, "fail (exit 4) when the sender's agent is not ready in time")
	env.register(c)
	return c
}

// findMessage looks id up in team/name's inbox.
func findMessage(f *Factory, team, name string, id message.ID) (mailbox.Envelope, error) {
	store, err := f.Mailbox()
	if err != nil {
		return mailbox.Envelope{}, err
	}
	batch, err := store.Read(team, name)
	if err != nil {
		return mailbox.Envelope{}, err
	}
	for _, e := range batch.Envelopes {
		if e.ID == id {
			return e, nil
		}
	}
	return mailbox.Envelope{}, fmt.Errorf("%w: %s is not in %s/%s's inbox (see agentmsg inbox --all)", mailbox.ErrNoMessage, id, team, name)
}

// reportResult prints one courier result as send does and returns its
// exit; from is the sender's canonical name.
func reportResult(f *Factory, out courier.Result, from string) error {
	code := resultCode(out)
	if f.JSON {
		writeJSON(f, struct {
			ID   string `json:"id,omitempty"`
			From string `json:"from"`
			resultJSON
		}{string(out.ID), from, toResultJSON(out)})
	} else if out.OK() {
		fmt.Fprintln(f.IO.Out, describeResult(out))
	}
	if out.OK() {
		return nil
	}
	if !f.JSON {
		fmt.Fprintf(f.IO.ErrOut, "agentmsg: %s\n", describeResult(out))
	}
	return exitError{code}
}
