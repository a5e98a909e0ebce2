package cmd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentmsg/agentmsg/alerts"
	"github.com/agentmsg/agentmsg/config"
)

func NewCmdAlerts(f *Factory, runF func(context.Context, *AlertsTestOptions) error) *cobra.Command {
	c := &cobra.Command{
		Use:   "alerts",
		Short: "Check how you are told when something is stuck",
		Long: `Alerts tell you when a message has waited too long for its agent, an agent has
sat in a dialog or with a draft too long, or a delivery ended typed (left in the
box) or unknown (nothing shows whether it arrived). agentmsg top shows them,
and runs the [alerts] command and posts to its webhook once per condition (again
only after it cleared and came back). In the config file:

  [alerts]
  message_wait = "10m"            # "0" turns an alert off; 10s to 24h
  dialog = "10m"
  draft = "30m"
  verdicts = ["typed", "unknown"]
  command = "notify-send agentmsg \"$AGENTMSG_ALERT_TEXT\""
  webhook = "https://hooks.example.com/agentmsg"

The command runs by /bin/sh -c with the alert as JSON on stdin and
AGENTMSG_ALERT_EVENT, _TEAM, _AGENT, _MESSAGE_ID, _REASON and _TEXT set; the
webhook gets the same JSON in a POST. Each has ` + alerts.DefaultTimeout.String() + ` to finish.`,
		Args: argsBetween(0, 0, "a subcommand: test"),
	}
	c.AddCommand(NewCmdAlertsTest(f, runF))
	return c
}

// AlertsTestOptions are alerts test's inputs.
type AlertsTestOptions struct {
	F *Factory
}

func NewCmdAlertsTest(f *Factory, runF func(context.Context, *AlertsTestOptions) error) *cobra.Command {
	opts := &AlertsTestOptions{F: f}
	return &cobra.Command{
		Use:   "test",
		Short: "Fire one test alert at the configured command and webhook",
		Long: `Test fires one alert (event "test") at the [alerts] command and webhook, the way
agentmsg top fires a real one, and says whether each took it. It fails when
neither is configured, or when one of them fails.`,
		Example: `  agentmsg alerts test`,
		Args:    argsBetween(0, 0, "no arguments"),
		RunE: func(c *cobra.Command, args []string) error {
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return alertsTestRun(c.Context(), opts)
		},
	}
}

// errNoAlertTarget: neither a command nor a webhook is configured.
var errNoAlertTarget = errors.New("no alert command or webhook is configured: set command or webhook in the [alerts] table of the config file")

func alertsTestRun(ctx context.Context, opts *AlertsTestOptions) error {
	f := opts.F
	cfg, err := f.Config()
	if err != nil {
		return err
	}
	n := alertNotifier(cfg.Alerts)
	if !n.Enabled() {
		where := config.DefaultPath(f.LookupEnv)
		if where == "" {
			return errNoAlertTarget
		}
		return fmt.Errorf("%w (%s)", errNoAlertTarget, where)
	}
	now := time.Now().UTC()
	a := alerts.Alert{Event: alerts.Test, Reason: "test", Since: now, Time: now,
		Text: "agentmsg alerts test: this is how an alert reaches you"}
	if err := n.Notify(ctx, a); err != nil {
		return err
	}
	if f.JSON {
		writeJSON(f, struct {
			Command string `json:"command,omitempty"`
			Webhook string `json:"webhook,omitempty"`
			Alert   any    `json:"alert"`
		}{n.Command, n.Webhook, a})
		return nil
	}
	if n.Command != "" {
		fmt.Fprintf(f.IO.Out, "✓ the command ran: %s\n", showText(n.Command))
	}
	if n.Webhook != "" {
		fmt.Fprintf(f.IO.Out, "✓ the webhook took it: %s\n", showText(n.Webhook))
	}
	return nil
}

// alertNotifier is who hears of alerts, from the [alerts] table.
func alertNotifier(a config.AlertSettings) alerts.Notifier {
	return alerts.Notifier{Command: a.Command, Webhook: a.Webhook}
}

// alertRules is when alerts fire, from the [alerts] table.
func alertRules(a config.AlertSettings) alerts.Rules {
	r := alerts.Rules{MessageWait: a.MessageWait, Dialog: a.Dialog, Draft: a.Draft}
	for _, v := range a.Verdicts {
		switch v {
		case "typed":
			r.Typed = true
		case "unknown":
			r.Unknown = true
		}
	}
	return r
}
