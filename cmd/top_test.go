package cmd

import (
	"context"
	"strings"
	"testing"

	"github.com/agentmsg/agentmsg/alerts"
	"github.com/agentmsg/agentmsg/service"
)

// top runs the terminal UI main hands in, with the [alerts] of the
// config and NO_COLOR; without one it says so.
func TestTop(t *testing.T) {
	var got TopUIOptions
	env := alertsConfig(t, "dialog = \"2m\"\nwebhook = \"http://127.0.0.1:9/hook\"\n")
	env["AGENTMSG_HOME"], env["AGENTMSG_FROM"], env["NO_COLOR"] = t.TempDir(), "lead", "1"
	f, out, errOut := testFactory(env)
	f.Top = func(_ context.Context, svc *service.Service, o TopUIOptions) error {
		got = o
		return nil
	}
	if code := Run(context.Background(), f, []string{"top", "--plain"}); code != ExitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	once, _ := got.Notifier.(alerts.Once)
	if n, _ := once.Teller.(alerts.Notifier); !got.Plain || !got.NoColor || got.Rules.Dialog.Minutes() != 2 || !got.Rules.Typed || n.Webhook != "http://127.0.0.1:9/hook" {
		t.Errorf("top ran with %+v", got)
	}
	f, out, errOut = testFactory(env)
	if code := Run(context.Background(), f, []string{"top"}); code != ExitError || !strings.Contains(errOut.String(), "without its terminal UI") {
		t.Errorf("without a UI: exit %d\n%s%s", code, out, errOut)
	}
	f, out, errOut = testFactory(env)
	if code := Run(context.Background(), f, []string{"--json", "top"}); code != ExitUsage {
		t.Errorf("--json top: exit %d\n%s%s", code, out, errOut)
	}
}
