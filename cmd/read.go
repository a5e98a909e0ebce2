package cmd

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
)

func NewCmdRead(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "read ID",
		Short: "Print the whole text of one message (a long one is typed as a pointer to this)",
		Long: `Read prints the full text of message ID from the inboxes. A message too long
to read well in an agent's input box is typed as one line,
"MSG_<SENDER>_<hex>: <first line> … (full text: agentmsg read MSG_<SENDER>_<hex>)",
and this is how the agent gets the rest. With --json, the whole envelope.`,
		Example: `  agentmsg read MSG_LEAD_1a2b3c4d`,
		Args:    argsBetween(1, 1, "one message ID"),
		RunE: func(c *cobra.Command, args []string) error {
			if !message.Valid(args[0]) {
				return usagef("%q is not a message id (MSG_<SENDER>_<8 hex>)", args[0])
			}
			store, err := f.Mailbox()
			if err != nil {
				return err
			}
			env, err := findAnywhere(store, message.ID(args[0]))
			if err != nil {
				return err
			}
			if f.JSON {
				writeJSON(f, env)
				return nil
			}
			_, err = fmt.Fprintln(f.IO.Out, showText(strings.TrimRight(env.Content, "\n")))
			return err
		},
	}
}

// findAnywhere looks id up in every inbox; a broadcast is in many, with the
// same content, so the first will do.
func findAnywhere(store *mailbox.Store, id message.ID) (mailbox.Envelope, error) {
	inboxes, err := store.Inboxes("")
	if err != nil {
		return mailbox.Envelope{}, err
	}
	for _, in := range inboxes {
		batch, err := store.Read(in.Team, in.Agent)
		if err != nil {
			continue
		}
		for _, e := range batch.Envelopes {
			if e.ID == id {
				return e, nil
			}
		}
	}
	return mailbox.Envelope{}, fmt.Errorf("%w: %s is in no inbox under %s", mailbox.ErrNoMessage, id, store.Root)
}
