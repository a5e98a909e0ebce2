package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
	"github.com/agentmsg/agentmsg/service"
	"github.com/agentmsg/agentmsg/target"
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

// MailboxDeps are what every mailbox command needs: the store, who the
// caller is, and where to print.
type MailboxDeps struct {
	IO       *IOStreams
	Mailbox  func() (*mailbox.Store, error)
	Identity func(ctx context.Context) (Identity, error)
	// Service is the caller's service (Factory.Service): the operations.
	Service func(ctx context.Context) (*service.Service, error)
	JSON    func() bool
	Now     func() time.Time
	// LiveAgents lists the agents of a team that run on the tmux server
	// now (nil, or an error: only inboxes count).
	LiveAgents func(ctx context.Context, team string) ([]string, error)
	// LiveTeams lists the teams with agent sessions on the tmux server
	// (nil, or an error: only the mailbox says which teams exist).
	LiveTeams func(ctx context.Context) ([]string, error)
}

// mailboxDeps reads the factory lazily: NewCmdRoot fills it in after
// the commands are built in some tests.
func mailboxDeps(f *Factory) MailboxDeps {
	return MailboxDeps{
		IO:       f.IO,
		Mailbox:  func() (*mailbox.Store, error) { return f.Mailbox() },
		Identity: func(ctx context.Context) (Identity, error) { return f.Identity(ctx) },
		Service:  f.Service,
		JSON:     func() bool { return f.JSON },
		Now:      time.Now,
		LiveAgents: func(ctx context.Context, team string) ([]string, error) {
			d, err := f.Dispatcher()
			if err != nil {
				return nil, err
			}
			ts, err := d.Targets(ctx, team)
			names := make([]string, len(ts))
			for i, t := range ts {
				names[i] = t.Agent()
			}
			return names, err
		},
		LiveTeams: factoryLiveTeams(f),
	}
}

// knownTeam is nil when team exists (see knownTeam), else exit 3. Only
// a team named on the command line (named: a TEAM argument, or --team) is
// checked: the caller's own team, from the environment, the config file
// or its session, may have nothing stored yet.
func (d MailboxDeps) knownTeam(ctx context.Context, s *mailbox.Store, team string, named bool) error {
	if !named {
		return nil
	}
	return knownTeam(ctx, s, d.LiveTeams, team)
}

// jsonOut is a Factory that writeJSON can print through.
func (d MailboxDeps) jsonOut() *Factory { return &Factory{IO: d.IO} }

// jsonLine prints v as one line of a JSON-lines stream.
func (d MailboxDeps) jsonLine(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(d.IO.Out, "%s\n", jsonSafe(b))
	return err
}

// teamArg checks a team given on the command line.
func teamArg(team string) (string, error) {
	if err := target.ValidateTeam(team); err != nil {
		return "", err
	}
	return team, nil
}

// teamOrOwn is the team given in args[i], else the caller's; named says
// whether it was named on the command line (see knownTeam).
func teamOrOwn(ctx context.Context, d MailboxDeps, args []string, i int) (team string, named bool, err error) {
	if len(args) > i {
		team, err = teamArg(args[i])
		return team, true, err
	}
	id, err := d.Identity(ctx)
	if err != nil {
		return "", false, err
	}
	team, err = id.NeedTeam()
	return team, id.TeamNamed, err
}

// newEnvelope is a message from the caller, with a fresh id.
func newEnvelope(id Identity, to string, typ mailbox.Type, content string) (mailbox.Envelope, error) {
	mid, err := message.NewID(id.Sender, nil)
	if err != nil {
		return mailbox.Envelope{}, err
	}
	// Pending: the agents see it in their inbox, and deliver (--watch, or
	// the Stop hook) types it into their panes when they are ready.
	return mailbox.Envelope{ID: mid, From: id.Name, To: to, Type: typ, Content: content,
		Delivery: &mailbox.Delivery{State: mailbox.StatePending}}, nil
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
