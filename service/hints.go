package service

import (
	"fmt"

	"github.com/agentmsg/agentmsg/mailbox"
)

// AnswerHint is how to answer env, for a message the protocol expects an
// answer to, "" for any other: the exact command first (up to the first
// ";"), then the other answer, then the MCP tool. It goes with the
// message into the agent's pane (the courier's Hint) and with it in MCP's
// answers, so that an agent nobody primed can answer: a shutdown-request
// that said nothing of how left shutdown --wait to time out.
func AnswerHint(env mailbox.Envelope) string {
	switch {
	case env.Type == mailbox.TypeShutdownRequest:
		return fmt.Sprintf(`answer: agentmsg reply --type shutdown-response --meta accept=true %s "stopping now"; `+
			`to finish first: accept=false "why"; MCP: reply_message`, env.ID)
	case env.Type == mailbox.TypePlan:
		return fmt.Sprintf(`answer: agentmsg reply --type plan-approval --meta approve=true %s "go ahead"; `+
			`for changes: approve=false "what to change"; MCP: reply_message`, env.ID)
	case env.Type == mailbox.TypeRequest && mailbox.ValidRequestID(env.RequestID) && env.Metadata[mailbox.MetaNudge] == "":
		return fmt.Sprintf("claim it: agentmsg claim %s; exactly one claimant gets it; MCP: claim_request", env.RequestID)
	}
	return ""
}
