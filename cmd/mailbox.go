package cmd

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agentmsg/agentmsg/service"
	"github.com/agentmsg/agentmsg/target"
	"github.com/agentmsg/agentmsg/wire"
)

// mailboxCommands are the commands over the durable mailbox, for agents
// (run as a tool) and for scripts.
func mailboxCommands(f *Factory) []*cobra.Command {
	return []*cobra.Command{
		NewCmdInbox(f, nil),
		NewCmdWait(f, nil),
		NewCmdRequest(f, nil),
		NewCmdClaim(f, nil),
		NewCmdRequests(f, nil),
		NewCmdStatus(f, nil),
		NewCmdBoard(f, nil),
		NewCmdTeam(f, nil),
		NewCmdLog(f, nil),
	}
}

// MailboxDeps are what the commands that read the mailbox (inbox, wait,
// log) need: the service (Factory.Service), who the caller is, and where
// to print.
type MailboxDeps struct {
	IO       *IOStreams
	Identity func(ctx context.Context) (Identity, error)
	Service  func(ctx context.Context) (*service.Service, error)
	JSON     func() bool
}

// mailboxDeps reads the factory lazily: NewCmdRoot fills it in after
// the commands are built in some tests.
func mailboxDeps(f *Factory) MailboxDeps {
	return MailboxDeps{
		IO:       f.IO,
		Identity: func(ctx context.Context) (Identity, error) { return f.Identity(ctx) },
		Service:  f.Service,
		JSON:     func() bool { return f.JSON },
	}
}

// jsonOut is a Factory that writeJSON can print through.
func (d MailboxDeps) jsonOut() *Factory { return &Factory{IO: d.IO} }

// jsonLine prints v as one line of a JSON-lines stream.
func (d MailboxDeps) jsonLine(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(d.IO.Out, "%s\n", wire.Safe(b))
	return err
}

// teamArg checks a team given on the command line.
func teamArg(team string) (string, error) {
	if err := target.ValidateTeam(team); err != nil {
		return "", err
	}
	return team, nil
}

// completeMailboxTeam completes a team from the teams with a mailbox.
func completeMailboxTeam(f *Factory) cobra.CompletionFunc {
	return completeMailbox(f, 1)
}

// completeMailboxInbox completes TEAM NAME from the stored inboxes.
func completeMailboxInbox(f *Factory) cobra.CompletionFunc {
	return completeMailbox(f, 2)
}

func completeMailbox(f *Factory, words int) cobra.CompletionFunc {
	return func(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) >= words || f.Mailbox == nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		s, err := f.Mailbox()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var names []string
		if len(args) == 0 {
			names, _ = s.Teams()
		} else {
			names, _ = s.Agents(args[0])
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}
