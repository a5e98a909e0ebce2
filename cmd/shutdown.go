package cmd

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentmsg/agentmsg/courier"
	"github.com/agentmsg/agentmsg/lifecycle"
	"github.com/agentmsg/agentmsg/message"
	"github.com/agentmsg/agentmsg/service"
	"github.com/agentmsg/agentmsg/target"
	"github.com/agentmsg/agentmsg/wire"
)

// ShutdownOptions are shutdown's inputs.
type ShutdownOptions struct {
	LifecycleDeps
	Target  target.Target
	Reason  string
	Wait    bool
	Timeout time.Duration
}

func NewCmdShutdown(f *Factory, runF func(context.Context, *ShutdownOptions) error) *cobra.Command {
	opts := &ShutdownOptions{LifecycleDeps: lifecycleDeps(f)}
	c := &cobra.Command{
		Use:   "shutdown TEAM NAME [--reason R] [--wait [--timeout D]]",
		Short: "Ask an agent to finish up and stop (a shutdown-request), and wait for its answer",
		Long: `Shutdown sends the agent a shutdown-request message from you: it is recorded
in the agent's inbox and typed into its box as
"MSG_<YOU>_<hex>: [shutdown-request] REASON" when the agent is ready (when it
is busy the message waits in the inbox; agentmsg deliver types it later).

The agent answers with a shutdown-response to that id, accepting or deferring
while it finishes its task:

  agentmsg reply --type shutdown-response --meta accept=true  MSG_<YOU>_<hex> "stopping now"
  agentmsg reply --type shutdown-response --meta accept=false MSG_<YOU>_<hex> "the migration needs 10 more minutes"

--wait waits up to --timeout for that answer in your own inbox (your team is
the agent's, your name comes from --from, AGENTMSG_FROM or your session):
exit 0 when it accepts, 9 when it defers, 7 when no answer comes in time.
Shutdown never stops anything itself: after an accept (or instead of asking)
use agentmsg kill.

` + exitCodesHelp,
		Example: `  agentmsg shutdown alpha ana
  agentmsg shutdown alpha ana --reason "the sprint is over" --wait --timeout 5m && agentmsg kill alpha ana
  agentmsg --json shutdown alpha ana-2 --wait`,
		Args:              argsBetween(2, 2, "TEAM NAME"),
		ValidArgsFunction: completeTeamAgent(f),
		RunE: func(c *cobra.Command, args []string) error {
			t, err := teamName(args)
			if err != nil {
				return err
			}
			opts.Target = t
			if c.Flags().Changed("timeout") && !opts.Wait {
				return usagef("--timeout goes with --wait")
			}
			if opts.Timeout <= 0 {
				return usagef("--timeout %s: want a duration above 0", opts.Timeout)
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return shutdownRun(c.Context(), opts)
		},
	}
	fl := c.Flags()
	fl.StringVar(&opts.Reason, "reason", "", "why, as the message's text (default: \""+lifecycle.DefaultShutdownReason+"\")")
	fl.BoolVar(&opts.Wait, "wait", false, "wait for the agent's shutdown-response")
	fl.DurationVar(&opts.Timeout, "timeout", time.Minute, "with --wait: give up after this long (exit 7)")
	return c
}

func shutdownRun(ctx context.Context, opts *ShutdownOptions) error {
	svc, err := opts.Service(ctx)
	if err != nil {
		return err
	}
	req := service.ShutdownRequest{Target: opts.Target, Reason: opts.Reason}
	if opts.Wait {
		req.Wait = opts.Timeout
		fmt.Fprintf(opts.IO.ErrOut, "waiting up to %s for %s's shutdown-response in the inbox of %s\n",
			req.Wait, opts.Target, displayName(opts.Target.Team, svc.Name))
	}
	res, err := svc.Shutdown(ctx, req)
	if err != nil && !res.NotSent() {
		return err
	}
	code := wire.ShutdownCode(res)
	if opts.JSON() {
		writeJSON(opts.jsonOut(), wire.NewShutdown(res, errText))
	}
	if res.NotSent() {
		if !opts.JSON() {
			fmt.Fprintf(opts.IO.ErrOut, "agentmsg: %s\n", describeRequest("shutdown-request", res.RequestID, res.Sent))
		}
		return exitError{code}
	}
	if !opts.JSON() {
		fmt.Fprintln(opts.IO.Out, describeRequest("shutdown-request", res.RequestID, res.Sent))
	}
	switch {
	case !res.Waited:
		return nil
	case !res.Answered:
		if !opts.JSON() {
			fmt.Fprintf(opts.IO.ErrOut, "agentmsg: %s did not answer %s within %s (it may still: agentmsg wait --reply-to %s)\n",
				opts.Target, res.RequestID, opts.Timeout, res.RequestID)
		}
		return exitError{code}
	case res.Accepted:
		if !opts.JSON() {
			fmt.Fprintf(opts.IO.Out, "%s accepted: %s\n", opts.Target, showText(res.Reason))
		}
		return nil
	}
	if !opts.JSON() {
		fmt.Fprintf(opts.IO.Out, "%s deferred: %s\n", opts.Target, showText(res.Reason))
	}
	return exitError{code}
}

// describeRequest is what became of a protocol message, naming its id
// once: most verdicts name it already.
func describeRequest(kind string, id message.ID, r courier.Result) string {
	text := describeResult(r)
	if strings.Contains(text, string(id)) {
		return kind + " " + text
	}
	return fmt.Sprintf("%s %s: %s", kind, id, text)
}
