package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentmsg/agentmsg/delivery"
	"github.com/agentmsg/agentmsg/eventlog"
	"github.com/agentmsg/agentmsg/service"
	"github.com/agentmsg/agentmsg/target"
)

// SendOptions are send's inputs.
type SendOptions struct {
	composer
	IO        *IOStreams
	JSON      func() bool
	LookupEnv func(string) (string, bool)

	Target  target.Target
	Message string
	// FromStdin: no message in the arguments, or "-": read it from stdin.
	FromStdin bool
	// WaitDelivered: after a deferral, how long to wait for the message's
	// delivery (0: not at all).
	WaitDelivered time.Duration
	// Create lets --mailbox-only start an inbox for a name not known yet.
	Create bool
	// Host is the host the agent runs on ("" this one).
	Host string
}

func NewCmdSend(f *Factory, runF func(context.Context, *SendOptions) error) *cobra.Command {
	opts := &SendOptions{composer: newComposer(f), IO: f.IO, JSON: func() bool { return f.JSON }, LookupEnv: f.LookupEnv}
	c := &cobra.Command{
		Use:   "send TEAM NAME [MESSAGE...]",
		Short: "Type a message into one agent's input box, submit it, and confirm it arrived",
		Long: `Send types MESSAGE into the input box of the agent in tmux session
agent-TEAM-NAME (NAME may be a spawned copy, ana-2, or a team-less ralph-<id>),
submits it and waits for proof that the agent took it.

The message comes from the arguments, or from stdin when none is given or it
is "-". It is typed as "MSG_<SENDER>_<8 hex>: MESSAGE", exactly as written:
quotes, ;, #{...}, newlines, tabs and unicode arrive as they are; escape
sequences and control characters other than newline and tab are removed.

Send waits (--ready-timeout) while the agent is busy, shows a dialog, or a
person is typing in its box: it never types into a dialog and never adds to
or submits someone else's text. Concurrent senders to one agent take turns.

Every message is first recorded in the agent's inbox (see agentmsg inbox, log).
When the agent is still not ready at the deadline, the message stays there
and send exits 0 with the verdict "deferred": agentmsg deliver types it once
the agent is ready. --no-queue makes that a failure (exit 4) instead.
--mailbox-only records it without typing, for agents that read their inbox;
to a name agentmsg does not know (no session, inbox or board entry) only
with --create, so that a typo is refused rather than given an inbox.

--host NAME sends to the agent on another host linked through NATS (see
agentmsg hosts): the message travels through this machine's agentmsg serve,
is typed there by that host's own agentmsg under the same rules and as this
send's flags say, and send reports that host's verdict; when the link is down it waits in this host's
outbox (verdict deferred, reason link_down) and goes when the link is back.

` + typesHelp + `

` + exitCodesHelp,
		Example: `  agentmsg send alpha ana "run the tests and report"
  agentmsg send alpha ana-2 "you are the second reviewer"
  git diff | agentmsg send alpha ana -
  agentmsg --json send alpha ana "status?"`,
		Args:              argsBetween(2, -1, "TEAM NAME [MESSAGE...]"),
		ValidArgsFunction: completeTeamAgent(f),
		RunE: func(c *cobra.Command, args []string) error {
			t, err := target.New(args[0], args[1])
			if err != nil {
				return err
			}
			opts.Target = t
			rest := args[2:]
			opts.Message, opts.FromStdin = textArgs(rest)
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return sendRun(c.Context(), opts)
		},
	}
	noQueue := false
	c.Flags().BoolVar(&noQueue, "no-queue", false, "fail (exit 4) when the agent is not ready in time, instead of keeping the message for agentmsg deliver")
	c.Flags().BoolVar(&opts.Delivery.MailboxOnly, "mailbox-only", false, "only record the message in the agent's inbox (for agents that read their inbox; the agent need not have a session)")
	c.Flags().StringVar(&opts.Host, "host", "", "the host the agent runs on, when not this one (agentmsg hosts lists them; needs agentmsg serve)")
	c.Flags().BoolVar(&opts.Create, "create", false, "with --mailbox-only, start an inbox for a name agentmsg does not know yet (no session, inbox or board entry)")
	opts.Envelope.register(c)
	opts.Agent.register(c, true)
	opts.Agent.registerPane(c)
	c.Flags().DurationVar(&opts.WaitDelivered, "wait-delivered", 0, "after a deferral, wait up to this long for the message to be delivered (by a deliver pass, a turn-end hook or the daemon) and report how that ended")
	c.PreRun = func(*cobra.Command, []string) { opts.Delivery.Queue = !noQueue }
	return c
}

func sendRun(ctx context.Context, opts *SendOptions) error {
	draft, svc, err := opts.prepare(ctx, opts.IO, opts.Message, opts.FromStdin)
	if err != nil {
		return err
	}
	var progress *waitPrinter
	if !opts.JSON() && !opts.Delivery.MailboxOnly {
		// A person sees one line kept up to date; an agent running us as a
		// tool (no terminal) sees a line each time the reason changes.
		progress = newWaitPrinter(opts.IO.ErrOut, opts.IO.ErrTTY)
		opts.Delivery.Call.OnWait = progress.wait
	}
	// The event log's end before the send: its delivery comes after it.
	before, _ := svc.LastEvent()
	res, err := svc.Send(ctx, service.SendRequest{To: opts.Target, Draft: draft, Delivery: opts.Delivery, RefuseUnknown: !opts.Create, Host: opts.Host})
	if progress != nil {
		progress.done()
	}
	if unknown := (*service.UnknownAgentError)(nil); errors.As(err, &unknown) {
		return fmt.Errorf("%w; a new name's inbox needs --create: agentmsg send --mailbox-only --create %s %s ...", err, opts.Target.Team, opts.Target.Agent())
	}
	if err != nil {
		return err
	}
	if opts.WaitDelivered > 0 && res.Verdict == delivery.Deferred && res.OK() {
		return waitDelivered(ctx, opts, svc, res, before)
	}
	return reportSent(&Factory{IO: opts.IO, JSON: opts.JSON(), LookupEnv: opts.LookupEnv}, res)
}

// waitDelivered waits for a deferred message's delivery and reports how
// it ended: with its verdict and exit code, as send would have.
func waitDelivered(ctx context.Context, opts *SendOptions, svc *service.Service, res service.SendResult, before int64) error {
	if !opts.JSON() {
		fmt.Fprintf(opts.IO.ErrOut, "%s; waiting up to %s for its delivery\n", describeResult(res.Result), opts.WaitDelivered)
	}
	wctx, cancel := context.WithTimeout(ctx, opts.WaitDelivered)
	defer cancel()
	team, agent := target.Inbox(res.Target)
	e, err := svc.WaitDelivered(wctx, before, res.ID, team, agent)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("%w: %s was not delivered within %s; it waits in the inbox (agentmsg deliver types it)", errTimedOut, res.ID, opts.WaitDelivered)
		}
		return err
	}
	doc := struct {
		ID      string `json:"id"`
		Team    string `json:"team"`
		Agent   string `json:"agent"`
		Verdict string `json:"verdict"`
		Reason  string `json:"reason,omitempty"`
		// Event is the id of the event that told it; none when the
		// event could not be written and the inbox told it.
		Event    *int64 `json:"event,omitempty"`
		ExitCode int    `json:"exit_code"`
	}{ID: string(res.ID), Team: res.Target.Team, Agent: res.Target.Agent(), Verdict: strings.TrimPrefix(string(e.Type), "message."), Reason: e.Reason}
	if e.ID >= 0 {
		doc.Event = &e.ID
	}
	switch doc.Verdict {
	case "submitted", "queued", "skipped":
		doc.ExitCode = ExitOK
	case "typed", "unknown":
		doc.ExitCode = ExitUnconfirmed
	default:
		doc.ExitCode = ExitError
	}
	if opts.JSON() {
		writeJSON(&Factory{IO: opts.IO}, doc)
	} else {
		fmt.Fprintf(opts.IO.Out, "%s to %s as %s, later (%s)\n", doc.Verdict, res.Target, res.ID, toldBy(e))
	}
	return exitError{doc.ExitCode}
}

// toldBy says where a later verdict was read: its event, or the inbox
// when the event log could not be written.
func toldBy(e eventlog.Event) string {
	if e.ID < 0 {
		return "read in its inbox: the event log could not be written"
	}
	return fmt.Sprintf("event %d", e.ID)
}

// messageText is the message from the arguments or from stdin.
func messageText(ctx context.Context, io_ *IOStreams, fromArgs string, fromStdin bool) (string, error) {
	if !fromStdin {
		return fromArgs, nil
	}
	if io_.InTTY {
		return "", usagef("no message: give it after the agent's name, or pipe it on stdin")
	}
	b, err := readAll(ctx, io_.In)
	if err != nil {
		return "", fmt.Errorf("reading the message from stdin: %w", err)
	}
	return string(b), nil
}

// readAll reads r to its end, or until ctx ends: a pipe whose writer
// never closes it (or a stopped one) would keep a read waiting, and the
// command with it, whatever signal it got. The read left behind ends with
// the process.
func readAll(ctx context.Context, r io.Reader) ([]byte, error) {
	type read struct {
		b   []byte
		err error
	}
	got := make(chan read, 1)
	go func() {
		b, err := io.ReadAll(r)
		got <- read{b, err}
	}()
	select {
	case r := <-got:
		return r.b, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("interrupted (%w) before it ended; nothing was sent", context.Cause(ctx))
	}
}
