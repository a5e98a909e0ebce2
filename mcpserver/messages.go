package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentmsg/agentmsg/courier"
	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
	"github.com/agentmsg/agentmsg/service"
	"github.com/agentmsg/agentmsg/target"
)

// Message is one message as the tools show it.
type Message struct {
	MessageID string            `json:"message_id"`
	From      string            `json:"from"`
	To        string            `json:"to,omitempty" jsonschema:"the receiver, or * for the whole team"`
	Type      string            `json:"type"`
	Content   string            `json:"content"`
	ReplyTo   string            `json:"reply_to,omitempty" jsonschema:"the message this one answers"`
	RequestID string            `json:"request_id,omitempty" jsonschema:"the open request this message is about"`
	Metadata  map[string]string `json:"metadata,omitempty"`
	Timestamp time.Time         `json:"timestamp"`
}

func toMessage(e mailbox.Envelope) Message {
	return Message{MessageID: string(e.ID), From: e.From, To: e.To, Type: string(e.Type), Content: e.Content,
		ReplyTo: string(e.ReplyTo), RequestID: e.RequestID, Metadata: e.Metadata, Timestamp: e.Timestamp}
}

func (s *server) addAgentTools(srv *mcp.Server) {
	addTool(srv, "check_messages",
		"Return the messages in your inbox that you have not read yet, oldest first, and mark them read (peek: true leaves them unread).",
		fixed[CheckInput](mailboxLimit), s.checkMessages)
	addTool(srv, "send_message",
		"Send a message to an agent of your team. It is stored in the agent's inbox and typed into its tmux session when it has one; delivered is true once the agent took it. Set reply_to to answer a message.",
		fixed[SendInput](deliverLimit), s.sendMessage)
	addTool(srv, "request_task",
		"Post an open request to your whole team; any agent may claim it with claim_request and exactly one gets it. You are told who did by a message of type claim.",
		fixed[RequestInput](mailboxLimit), s.requestTask)
	addTool(srv, "claim_request",
		"Claim an open request of your team. claimed is true when you got it; otherwise claimed_by says who has it (or reason says it expired).",
		fixed[ClaimInput](mailboxLimit), s.claimRequest)
	addTool(srv, "list_agents",
		"List the agents of your team: their tmux session and input-box state (ready, busy, dialog, draft, unknown), and what each reported on the status board.",
		fixed[ListInput](deliverLimit), s.listAgents)
	addTool(srv, "wait_for_message",
		"Block until a message that matches from/type/reply_to (each optional) is in your inbox, then return it and mark it read. timeout_seconds: default 30, at most 120; timed_out is true when none came.",
		func(in WaitInput) time.Duration {
			d, _ := seconds(in.TimeoutSeconds, DefaultWait, MaxWait)
			return d + mailboxLimit
		}, s.waitForMessage)
}

// SendInput is send_message's input.
type SendInput struct {
	To       string            `json:"to" jsonschema:"the agent of your team to send to, such as ana or ana-2"`
	Content  string            `json:"content" jsonschema:"the message text"`
	Type     string            `json:"type,omitempty" jsonschema:"text (the default), status (needs metadata state), shutdown-response (needs metadata accept), plan, plan-approval (needs metadata approve), task, shutdown-request"`
	ReplyTo  string            `json:"reply_to,omitempty" jsonschema:"the message_id this message answers"`
	Metadata map[string]string `json:"metadata,omitempty" jsonschema:"key/value pairs the receiver dispatches on, such as state=complete or step=build"`
}

// SendOutput is what a sent message became.
type SendOutput struct {
	MessageID string `json:"message_id"`
	To        string `json:"to"`
	Delivered bool   `json:"delivered" jsonschema:"the agent took it: submitted in its input box, or queued behind its current turn"`
	Verdict   string `json:"verdict" jsonschema:"submitted, queued, deferred (kept until the agent is ready), or recorded (put in an inbox only: the agent has no tmux session)"`
	Note      string `json:"note,omitempty"`
}

func (s *server) sendMessage(ctx context.Context, in SendInput) (SendOutput, error) {
	if in.ReplyTo != "" && !message.Valid(in.ReplyTo) {
		return SendOutput{}, fmt.Errorf("reply_to %q is not a message id (MSG_<SENDER>_<8 hex>)", in.ReplyTo)
	}
	return s.send(ctx, in.To, mailbox.Envelope{Type: mailbox.Type(in.Type), Content: in.Content, Metadata: in.Metadata, ReplyTo: message.ID(in.ReplyTo)})
}

// send sends env (Type, Content, Metadata, ReplyTo set) to the agent to
// of the caller's team (service.Send): typed into its tmux session when it
// has one, else recorded in its inbox provided agentmsg knows the name.
func (s *server) send(ctx context.Context, to string, env mailbox.Envelope) (SendOutput, error) {
	t, err := s.agentTarget("to", to)
	if err != nil {
		return SendOutput{}, err
	}
	r, err := s.deps.Send(ctx, service.SendRequest{To: t, ReplyTo: env.ReplyTo, InboxIfAbsent: true,
		Draft:    service.Draft{Text: env.Content, Type: string(env.Type), Meta: env.Metadata},
		Delivery: service.Delivery{Queue: true}})
	return sendOutput("to", to, t, r, err)
}

// sendOutput words what a message to t (named name in the tool's field)
// became: a message that did not arrive and will not is an error.
func sendOutput(field, name string, t target.Target, r service.SendResult, err error) (SendOutput, error) {
	switch {
	case errors.Is(err, dispatch.ErrSelf):
		return SendOutput{}, fmt.Errorf("%s %q is you; send to another agent of team %s", field, name, t.Team)
	case errors.Is(err, dispatch.ErrEmptyMessage):
		return SendOutput{}, fmt.Errorf("content: %w", err)
	case err != nil:
		return SendOutput{}, err
	}
	res := r.Result
	out := SendOutput{MessageID: string(res.ID), To: t.Agent(), Delivered: res.Outcome.OK(), Verdict: string(res.Verdict)}
	switch {
	case res.Verdict == courier.Recorded:
		out.Note = fmt.Sprintf("%s has no tmux session here; the message waits in its inbox (it reads it with check_messages)", t.Agent())
	case res.Verdict == courier.Deferred:
		out.Note = fmt.Sprintf("%s was not ready (%s); the message is kept and typed once it is", t.Agent(), res.State)
	case res.RecordErr != nil:
		return out, fmt.Errorf("message %s to %s: %w", res.ID, t, res.RecordErr)
	case !res.OK():
		return out, fmt.Errorf("message %s to %s was not delivered (%s): %v", res.ID, t, res.Verdict, res.Err)
	}
	return out, nil
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
