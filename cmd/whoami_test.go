package cmd

import (
	"context"
	"strings"
	"testing"

	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/service"
)

// whoami says who the caller is and where each part came from, and the
// tmux pane it runs in (the session as tmux names it).
func TestWhoamiSaysWhereEachPartCameFrom(t *testing.T) {
	f, out, errOut := testFactory(map[string]string{"AGENTMSG_FROM": "ana", "XDG_CONFIG_HOME": t.TempDir()})
	if code := Run(context.Background(), f, []string{"--team", "alpha", "whoami"}); code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"ana of team alpha", "name  ana, from env AGENTMSG_FROM; your messages are MSG_ANA_<8 hex>",
		"team  alpha, from flag --team", "tmux  not inside tmux"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("whoami does not say %q:\n%s", want, out)
		}
	}

	f, out, _ = testFactory(map[string]string{"AGENTMSG_FROM": "ana", "AGENTMSG_TEAM": "alpha",
		"TMUX": "/tmp/tmux-0/default,42,0", "TMUX_PANE": "%7", "XDG_CONFIG_HOME": t.TempDir()})
	NewCmdRoot(f) // wires the identity
	err := whoamiRun(context.Background(), &WhoamiOptions{IO: f.IO, JSON: func() bool { return true }, LookupEnv: f.LookupEnv,
		Identity: func(ctx context.Context) (Identity, error) { return f.Identity(ctx) },
		Session:  func(context.Context) (string, error) { return "agent-alpha-ana", nil }})
	if err != nil {
		t.Fatal(err)
	}
	doc := decodeJSON[struct {
		Name, Team, Sender string
		NameSource         string `json:"name_source"`
		TeamSource         string `json:"team_source"`
		Tmux               struct {
			Socket, Pane, Session string
			Agent                 bool `json:"agent_session"`
		}
	}](t, out.String())
	if doc.Name != "ana" || doc.Team != "alpha" || doc.Sender != "ANA" || doc.TeamSource != "env AGENTMSG_TEAM" ||
		doc.Tmux.Pane != "%7" || doc.Tmux.Session != "agent-alpha-ana" || !doc.Tmux.Agent || doc.Tmux.Socket != "/tmp/tmux-0/default" {
		t.Fatalf("whoami --json: %+v\n%s", doc, out)
	}
}

// prime tells the agent who it is and answers every protocol message the
// way the message's own hint does.
func TestPrimeNamesTheAgentAndEveryAnswer(t *testing.T) {
	f, out, errOut := testFactory(map[string]string{"AGENTMSG_FROM": "ana", "AGENTMSG_TEAM": "alpha", "XDG_CONFIG_HOME": t.TempDir()})
	if code := Run(context.Background(), f, []string{"prime"}); code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	text := out.String()
	if !strings.HasPrefix(text, "You are ana, an agent of team alpha.") {
		t.Errorf("prime does not say who:\n%s", text)
	}
	// The command of each hint, with its ids as placeholders.
	ids := strings.NewReplacer("MSG_LEAD_0123abcd", "MSG_ID", "REQ_1a2b3c4d", "REQ_ID")
	for _, env := range []mailbox.Envelope{
		{ID: "MSG_LEAD_0123abcd", Type: mailbox.TypeShutdownRequest},
		{ID: "MSG_LEAD_0123abcd", Type: mailbox.TypePlan},
		{ID: "MSG_LEAD_0123abcd", Type: mailbox.TypeRequest, RequestID: "REQ_1a2b3c4d"},
	} {
		command, _, _ := strings.Cut(service.AnswerHint(env), ";")
		_, command, _ = strings.Cut(command, ": ")
		if command = ids.Replace(command); !strings.Contains(text, command) {
			t.Errorf("prime does not answer a %s as its hint does (%q):\n%s", env.Type, command, text)
		}
	}
	for _, tool := range []string{"check_messages", "read_message", "reply_message", "claim_request"} {
		if !strings.Contains(text, tool) {
			t.Errorf("prime does not name the MCP tool %s", tool)
		}
	}

	f, _, errOut = testFactory(map[string]string{"AGENTMSG_FROM": "ana", "XDG_CONFIG_HOME": t.TempDir()})
	if code := Run(context.Background(), f, []string{"prime"}); code != ExitUsage || !strings.Contains(errOut.String(), "which team are you on?") {
		t.Errorf("prime with no team: exit %d, %s", code, errOut)
	}
}
