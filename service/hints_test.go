package service

import (
	"strings"
	"testing"

	"github.com/agentmsg/agentmsg/mailbox"
)

// A message the protocol expects an answer to says how, the exact command
// first (an agent can run it as it is); any other says nothing.
func TestAnswerHint(t *testing.T) {
	for _, tc := range []struct {
		env     mailbox.Envelope
		command string // "" : no hint
		tool    string
	}{
		{mailbox.Envelope{ID: "MSG_LEAD_0123abcd", Type: mailbox.TypeShutdownRequest},
			`answer: agentmsg reply --type shutdown-response --meta accept=true MSG_LEAD_0123abcd "stopping now"`, "reply_message"},
		{mailbox.Envelope{ID: "MSG_ANA_0123abcd", Type: mailbox.TypePlan},
			`answer: agentmsg reply --type plan-approval --meta approve=true MSG_ANA_0123abcd "go ahead"`, "reply_message"},
		{mailbox.Envelope{ID: "MSG_LEAD_0123abcd", Type: mailbox.TypeRequest, RequestID: "REQ_1a2b3c4d"},
			"claim it: agentmsg claim REQ_1a2b3c4d", "claim_request"},
		{mailbox.Envelope{ID: "MSG_LEAD_0123abcd", Type: mailbox.TypeRequest, RequestID: "REQ_1a2b3c4d",
			Metadata: map[string]string{mailbox.MetaNudge: "expired"}}, "", ""},
		{mailbox.Envelope{ID: "MSG_LEAD_0123abcd", Type: mailbox.TypeText}, "", ""},
		{mailbox.Envelope{ID: "MSG_LEAD_0123abcd", Type: mailbox.TypeTask}, "", ""},
	} {
		got := AnswerHint(tc.env)
		command, _, _ := strings.Cut(got, ";")
		if command != tc.command || (tc.tool != "" && !strings.HasSuffix(got, "MCP: "+tc.tool)) || strings.Contains(got, "\\n") {
			t.Errorf("%s %s: %q, want %q first and the MCP tool %q last", tc.env.Type, tc.env.Metadata, got, tc.command, tc.tool)
		}
	}
}
