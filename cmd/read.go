package cmd

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentmsg/agentmsg/message"
	"github.com/agentmsg/agentmsg/service"
)

// ReadOptions are read's inputs.
type ReadOptions struct {
	IO      *IOStreams
	JSON    func() bool
	Service func(ctx context.Context) (*service.Service, error)

	ID message.ID
}

// NewCmdRead is read as the root command registers it.
func NewCmdRead(f *Factory) *cobra.Command { return newCmdRead(f, nil) }

func newCmdRead(f *Factory, runF func(context.Context, *ReadOptions) error) *cobra.Command {
	opts := &ReadOptions{IO: f.IO, JSON: func() bool { return f.JSON }, Service: f.Service}
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
			opts.ID = message.ID(args[0])
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return readRun(c.Context(), opts)
		},
	}
}

func readRun(ctx context.Context, opts *ReadOptions) error {
	svc, err := opts.Service(ctx)
	if err != nil {
		return err
	}
	env, err := svc.Read(ctx, opts.ID)
	if err != nil {
		return mailboxErr(err)
	}
	if opts.JSON() {
		writeJSON(&Factory{IO: opts.IO}, env)
		return nil
	}
	_, err = fmt.Fprintln(opts.IO.Out, showText(strings.TrimRight(env.Content, "\n")))
	return err
}
