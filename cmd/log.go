package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentmsg/agentmsg/hosts"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
	"github.com/agentmsg/agentmsg/service"
	"github.com/agentmsg/agentmsg/target"
	"github.com/agentmsg/agentmsg/wire"
)

// LogOptions are log's inputs.
type LogOptions struct {
	MailboxDeps

	Team  string // "" for every team
	Agent string // "" for every inbox of the team
	ID    message.ID
}

func NewCmdLog(f *Factory, runF func(context.Context, *LogOptions) error) *cobra.Command {
	opts := &LogOptions{MailboxDeps: mailboxDeps(f)}
	var id string
	c := &cobra.Command{
		Use:   "log [TEAM [NAME]]",
		Short: "List the messages in the mailboxes and how far each got",
		Long: `Log lists the messages kept in every inbox of every team (of TEAM; only
NAME's inbox), and those sent from here to agents on other hosts (their
recipient ends in @HOST, their state is the one that host reported), oldest
first: when, id, sender, recipient, type, and the
delivery: its state (pending, typing, typed, submitted, queued, deferred,
failed, skipped, handled; inbox for a message only put in the mailbox, --mailbox-only; "-" for
notices such as requests and claims), the attempts and the last verdict. A message to a whole team is listed once per inbox.

--id ID shows one message's history instead: each inbox that holds it, and
there every delivery record in order, with its time and verdict. Compaction
keeps only the latest record of a message.`,
		Example: `  agentmsg log
  agentmsg log alpha
  agentmsg log alpha ana
  agentmsg log --id MSG_LEAD_1a2b3c4d
  agentmsg --json log alpha | jq '.messages[] | select(.delivery.state == "failed")'`,
		Args:              argsBetween(0, 2, "at most TEAM NAME"),
		ValidArgsFunction: completeMailboxInbox(f),
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) > 0 {
				team, err := teamArg(args[0])
				if err != nil {
					return err
				}
				opts.Team = team
			}
			if len(args) > 1 {
				if _, err := target.New(opts.Team, args[1]); err != nil {
					return err
				}
				opts.Agent = args[1]
			}
			if id != "" && !message.Valid(id) {
				return usagef("--id %q is not a message id (MSG_<SENDER>_<8 hex>)", id)
			}
			opts.ID = message.ID(id)
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return logRun(c.Context(), opts)
		},
	}
	c.Flags().StringVar(&id, "id", "", "show this message's delivery history")
	return c
}

func logRun(ctx context.Context, opts *LogOptions) error {
	svc, err := opts.Service(ctx)
	if err != nil {
		return err
	}
	req := service.LogRequest{Team: opts.Team, Agent: opts.Agent}
	if opts.ID != "" {
		return logHistory(ctx, opts, svc, req)
	}
	res, err := svc.Log(ctx, req)
	if err != nil {
		return err
	}
	for _, d := range res.Damaged {
		fmt.Fprintf(opts.IO.ErrOut, "agentmsg: skipped a damaged line in the inbox of %s/%s: %s\n", d.Team, d.Inbox, show(fmt.Sprint(d.CorruptLine)))
	}
	if opts.JSON() {
		writeJSON(opts.jsonOut(), wire.Log{Messages: res.Entries})
		return nil
	}
	if len(res.Entries) == 0 {
		fmt.Fprintf(opts.IO.ErrOut, "no messages in %s\n", opts.where())
		return nil
	}
	tw := tabwriter.NewWriter(opts.IO.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tID\tFROM\tTO\tTYPE\tSTATE\tATTEMPTS\tLAST VERDICT")
	for _, e := range res.Entries {
		state, attempts, verdict := deliveryCells(e.Delivery)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Timestamp.Local().Format(time.DateTime), show(string(e.ID)), show(e.From),
			inboxName(e.Team, e.Inbox, e.Host), show(string(e.Type)), show(state), attempts, cell(verdict, 50))
	}
	return tw.Flush()
}

func (o *LogOptions) where() string {
	switch {
	case o.Agent != "":
		return "the inbox of " + o.Team + "/" + o.Agent
	case o.Team != "":
		return "team " + o.Team
	}
	return "any team"
}

func deliveryCells(d *mailbox.Delivery) (state, attempts, verdict string) {
	if d == nil {
		return "-", "-", "-"
	}
	return string(d.State), strconv.Itoa(d.Attempts), orDash(d.LastVerdict)
}

func logHistory(ctx context.Context, opts *LogOptions, svc *service.Service, req service.LogRequest) error {
	copies, err := svc.History(ctx, req, opts.ID)
	if errors.Is(err, mailbox.ErrNoMessage) {
		// Sent from here to another host: what that host last said.
		if sent, serr := svc.Sent(ctx, opts.ID); serr == nil && len(sent) > 0 {
			return logSent(opts, sent)
		}
		return fmt.Errorf("%w: %s is in no inbox of %s", mailbox.ErrNoMessage, opts.ID, opts.where())
	}
	if err != nil {
		return mailboxErr(err)
	}
	if opts.JSON() {
		writeJSON(opts.jsonOut(), wire.History{ID: opts.ID, Copies: copies})
		return nil
	}
	for i, c := range copies {
		if i > 0 {
			fmt.Fprintln(opts.IO.Out)
		}
		writeHistory(opts.IO.Out, c)
	}
	return nil
}

// writeHistory prints one copy's history: the message, then one line per
// delivery record, the first being the one it was stored with.
func writeHistory(w io.Writer, c service.HistoryCopy) {
	e := c.Message
	fmt.Fprintf(w, "%s from %s to %s (%s)\n", show(string(e.ID)), show(e.From), inboxName(c.Team, c.Inbox, c.Host), msgLabel(e))
	fmt.Fprintf(w, "  %s\n", indentRest(cell(e.Content, 200), "  "))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	first, later := "recorded (mailbox only)", c.Delivery
	switch {
	case c.Unrecorded:
		first = "not recorded here yet: its sender is at it, or stopped part way (the next deliver records it)"
	case c.Recorded != "" && len(c.Delivery) > 0:
		// The first record is the one it was stored with.
		first, later = "recorded, "+show(string(c.Recorded)), c.Delivery[1:]
	}
	if c.Host != "" {
		first = "sent to host " + c.Host + "; what it reported:"
	}
	fmt.Fprintf(tw, "  %s\t%s\n", e.Timestamp.Local().Format("2006-01-02 15:04:05.000"), first)
	for _, d := range later {
		line := fmt.Sprintf("  %s\t%s\tattempt %d", d.Updated.Local().Format("2006-01-02 15:04:05.000"), show(string(d.State)), d.Attempts)
		if d.LastVerdict != "" {
			line += "\t" + show(d.LastVerdict)
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
}

// inboxName is team/inbox, and @host for a copy sent to another host.
func inboxName(team, inbox, host string) string {
	if host != "" {
		return team + "/" + inbox + "@" + host
	}
	return team + "/" + inbox
}

// logSent prints what the other host last reported of a message sent
// there from here.
func logSent(opts *LogOptions, sent []hosts.Sent) error {
	if opts.JSON() {
		writeJSON(opts.jsonOut(), wire.History{ID: opts.ID, Copies: []service.HistoryCopy{}, Remote: sent})
		return nil
	}
	for _, c := range sent {
		line := fmt.Sprintf("%s to %s/%s on host %s: %s", show(c.ID), show(c.Team), show(c.Agent), show(c.Host), show(c.State))
		if c.State == hosts.StateOutbox {
			line += " (kept in this host's outbox until that host takes it)"
		}
		if c.Reason != "" {
			line += ", " + show(c.Reason)
		}
		if c.Detail != "" {
			line += ": " + show(c.Detail)
		}
		fmt.Fprintf(opts.IO.Out, "%s, as of %s\n", line, c.At.Local().Format("2006-01-02 15:04:05"))
	}
	return nil
}
