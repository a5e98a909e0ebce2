package cmd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentmsg/agentmsg/service"
	"github.com/agentmsg/agentmsg/wire"
)

// errTimedOut ends a wait that saw no matching message: exit 7.
var errTimedOut = errors.New("timed out")

// WaitOptions are wait's inputs.
type WaitOptions struct {
	MailboxDeps

	Filter  msgFilter
	Timeout time.Duration // 0 waits until interrupted
}

func NewCmdWait(f *Factory, runF func(context.Context, *WaitOptions) error) *cobra.Command {
	opts := &WaitOptions{MailboxDeps: mailboxDeps(f)}
	c := &cobra.Command{
		Use:   "wait",
		Short: "Block until a matching message is in your inbox, print it and exit",
		Long: `Wait blocks until a message that matches the filters is in your inbox after
your read cursor (one that is already there and unread counts), prints it
(--json: the message as one JSON document) and exits 0. When none comes
within --timeout it exits 7.

It passes over what is no news to you, as agentmsg inbox does: a message
typed into your pane (submitted, queued or left in your input box) you saw
there, and a send that failed is its sender's to send again. A message
being typed into your pane counts once its delivery ends; one whose sender
waits for your pane to be ready (you are busy: you run this wait) is news.

The read cursor moves past the message printed, unless an earlier unread
message did not match: the cursor never passes a message you have not been
shown, so that one stays for agentmsg inbox (which then shows both).

The sender filter is --sender, not --from: --from says who you are.

` + exitCodesHelp,
		Example: `  agentmsg wait
  agentmsg wait --reply-to MSG_LEAD_1a2b3c4d --timeout 5m
  agentmsg wait --type claim --timeout 0
  agentmsg --json wait --sender lead | jq -r .content`,
		Args: argsBetween(0, 0, "no arguments"),
		RunE: func(c *cobra.Command, args []string) error {
			if err := opts.Filter.check(); err != nil {
				return err
			}
			if opts.Timeout < 0 {
				return usagef("--timeout %s: want a duration of 0 (no limit) or more", opts.Timeout)
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return waitRun(c.Context(), opts)
		},
	}
	fl := c.Flags()
	fl.StringVar(&opts.Filter.Sender, "sender", "", "only a message from this agent (--from is who you are)")
	fl.StringVar(&opts.Filter.Type, "type", "", "only a message of this type (text, status, request, claim, task, ...)")
	fl.StringVar(&opts.Filter.ReplyTo, "reply-to", "", "only a reply to this message id")
	fl.DurationVar(&opts.Timeout, "timeout", 30*time.Second, "give up after this long, with exit code 7 (0: no limit)")
	return c
}

func waitRun(ctx context.Context, opts *WaitOptions) error {
	svc, err := opts.Service(ctx)
	if err != nil {
		return err
	}
	what := "a message" + opts.Filter.suffix()
	if svc.Team != "" {
		limit := "until interrupted"
		if opts.Timeout > 0 {
			limit = "up to " + opts.Timeout.String()
		}
		fmt.Fprintf(opts.IO.ErrOut, "waiting %s for %s in the inbox of %s/%s\n", limit, what, svc.Team, svc.Name)
	}
	res, err := svc.Wait(ctx, service.WaitRequest{Filter: opts.Filter.filter(), Timeout: opts.Timeout})
	switch {
	case errors.Is(err, service.ErrInterrupted):
		return fmt.Errorf("interrupted (%v) while waiting for %s", context.Cause(ctx), what)
	case err != nil:
		return mailboxErr(err)
	case res.TimedOut:
		return fmt.Errorf("%w: %s", errTimedOut, wire.WaitTimedOut(opts.Filter.filter(), opts.Timeout))
	}
	if opts.JSON() {
		writeJSON(opts.jsonOut(), res.Message)
	} else {
		writeMessage(opts.IO.Out, res.Message)
	}
	if res.Left > 0 {
		fmt.Fprintf(opts.IO.ErrOut, "%d other unread message(s) wait in your inbox: agentmsg inbox\n", res.Left)
	}
	return nil
}
