package cmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/service"
	"github.com/agentmsg/agentmsg/target"
	"github.com/agentmsg/agentmsg/wire"
)

// InboxOptions are inbox's inputs.
type InboxOptions struct {
	MailboxDeps

	Team, Agent string // "" for the caller's own inbox
	All         bool
	Follow      bool
	Filter      msgFilter
	Format      string // text, json or prompt; "" follows --json
}

func NewCmdInbox(f *Factory, runF func(context.Context, *InboxOptions) error) *cobra.Command {
	opts := &InboxOptions{MailboxDeps: mailboxDeps(f)}
	c := &cobra.Command{
		Use:   "inbox [TEAM NAME]",
		Short: "Print the messages in your mailbox that you have not read yet",
		Long: `Inbox prints the messages in your inbox (or in TEAM NAME's) that came after
your read cursor, then moves the cursor past them: run it again and you see
only what came since. The cursor belongs to you (your --from name), so two
readers of one inbox do not take messages from each other. It leaves out
what is no news: in your own inbox, messages already typed into your pane
(submitted, queued or left in your input box); in any inbox, a send that
failed (its sender was told, and may send it again).

--all prints every message kept in the inbox and leaves the cursor alone.
--follow keeps printing new messages as they arrive, until interrupted,
leaving out what is no news as above (one being typed into your pane, until
its delivery ends).

--sender and --type show only some messages. The cursor never moves past a
message you have not been shown, so a filtered read leaves the others for
the next unfiltered one (and may show you a filtered one again then).
The sender filter is --sender, not --from: --from says who you are.

Formats (--format, or --json for json):
  text    one line per message: [ID] time from SENDER (type; state): content,
          state saying where its delivery got (waiting to be typed, to read,
          submitted, ...)
  json    one JSON document {team, agent, reader, messages}; with --follow,
          one message per line (JSON lines)
  prompt  a block to put into an agent's next prompt, nothing when there is
          nothing new:
            You have 2 new messages:
            [MSG_ANA_1a2b3c4d] from ana (status): tests pass`,
		Example: `  agentmsg inbox
  agentmsg inbox --format prompt
  agentmsg inbox --follow --type request
  agentmsg --team alpha --from lead inbox --all --sender ana
  agentmsg --json inbox alpha ana --all`,
		Args:              argsBetween(0, 2, "nothing, or TEAM NAME"),
		ValidArgsFunction: completeMailboxInbox(f),
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 1 {
				return usagef("inbox: give both TEAM and NAME, or neither for your own inbox")
			}
			if len(args) == 2 {
				team, err := teamArg(args[0])
				if err != nil {
					return err
				}
				if _, err := target.New(team, args[1]); err != nil {
					return err
				}
				opts.Team, opts.Agent = team, args[1]
			}
			switch opts.Format {
			case "", "text", "json", "prompt":
			default:
				return usagef("--format %q: want text, json or prompt", opts.Format)
			}
			if err := opts.Filter.check(); err != nil {
				return err
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return inboxRun(c.Context(), opts)
		},
	}
	fl := c.Flags()
	fl.BoolVarP(&opts.All, "all", "a", false, "print every kept message; leave the read cursor alone")
	fl.BoolVarP(&opts.Follow, "follow", "f", false, "keep printing new messages until interrupted")
	fl.StringVar(&opts.Filter.Type, "type", "", "only messages of this type (text, status, request, claim, task, ...)")
	fl.StringVar(&opts.Filter.Sender, "sender", "", "only messages from this agent (--from is who you are)")
	fl.StringVar(&opts.Format, "format", "", "text, json or prompt (default text; json with --json)")
	return c
}

func (o *InboxOptions) format() string {
	if o.Format == "" && o.JSON() {
		return "json"
	}
	if o.Format == "" {
		return "text"
	}
	return o.Format
}

func inboxRun(ctx context.Context, opts *InboxOptions) error {
	svc, err := opts.Service(ctx)
	if err != nil {
		return err
	}
	// A team given with --team is checked like a TEAM argument; the
	// caller's own, from the environment or its session, is not.
	team := opts.Team
	if team == "" {
		id, err := opts.Identity(ctx)
		if err != nil {
			return err
		}
		if id.TeamNamed {
			team = id.Team
		}
	}
	req := service.InboxRequest{Team: team, Agent: opts.Agent, All: opts.All, Filter: opts.Filter.filter()}
	res, err := svc.Inbox(ctx, req)
	if err != nil {
		return mailboxErr(err)
	}
	for _, c := range res.Corrupt {
		fmt.Fprintf(opts.IO.ErrOut, "agentmsg: skipped a damaged line in the inbox of %s/%s: %s\n", res.Team, res.Agent, show(fmt.Sprint(c)))
	}
	if err := opts.print(res.Team, res.Agent, res.Reader, res.Messages, true); err != nil {
		return err
	}
	if !opts.Follow {
		return nil
	}
	return svc.Follow(ctx, res, func(e mailbox.Envelope) error {
		return opts.print(res.Team, res.Agent, res.Reader, []mailbox.Envelope{e}, false)
	})
}

// print shows one batch: first is the batch read at the start, later ones
// are arrivals under --follow.
func (o *InboxOptions) print(team, agent, reader string, envs []mailbox.Envelope, first bool) error {
	switch o.format() {
	case "json":
		if o.Follow {
			for _, e := range envs {
				if err := o.jsonLine(e); err != nil {
					return err
				}
			}
			return nil
		}
		if envs == nil {
			envs = []mailbox.Envelope{}
		}
		writeJSON(o.jsonOut(), wire.Inbox{Team: team, Agent: agent, Reader: reader, Messages: envs})
	case "prompt":
		writePrompt(o.IO.Out, envs)
	default:
		if len(envs) == 0 && first {
			what := "no new messages"
			if o.All {
				what = "no messages"
			}
			what += o.Filter.suffix()
			fmt.Fprintf(o.IO.ErrOut, "%s in the inbox of %s/%s\n", what, team, agent)
		}
		for _, e := range envs {
			writeInboxMessage(o.IO.Out, e)
		}
	}
	return nil
}
