package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentmsg/agentmsg/delivery"
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
	Answer    string            `json:"answer,omitempty" jsonschema:"how to answer this message, for one the protocol expects an answer to (a shutdown-request, a plan, a request to claim)"`
}

func toMessage(e mailbox.Envelope) Message {
	return Message{MessageID: string(e.ID), From: e.From, To: e.To, Type: string(e.Type), Content: e.Content,
		ReplyTo: string(e.ReplyTo), RequestID: e.RequestID, Metadata: e.Metadata, Timestamp: e.Timestamp,
		Answer: service.AnswerHint(e)}
}

func (s *server) addAgentTools(srv *mcp.Server) {
	addTool(srv, "check_messages",
		"Return the messages in your inbox that you have not read yet, oldest first, and mark them read (peek: true leaves them unread). Messages already typed into your pane, and sends that failed, are left out: you have seen the first, and the second is its sender's to send again.",
		fixed[CheckInput](mailboxLimit), s.checkMessages)
	addTool(srv, "send_message",
		"Send a message to an agent of your team (an orchestrator: of any team). It is stored in the agent's inbox and typed into its tmux session when it has one; delivered is true once the agent took it. Set reply_to to answer a message (or use reply_message). wait_delivered_seconds waits that long for a deferred message to be delivered.",
		func(in SendInput) time.Duration {
			d, _ := seconds(in.WaitDeliveredSeconds, 0, MaxWait)
			return d + deliverLimit
		}, s.sendMessage)
	addTool(srv, "reply_message",
		"Answer a message in your inbox: to its sender, with reply_to set (and the request it was about). For a shutdown-request use type shutdown-response with metadata accept=true or false; for a plan, type plan-approval with metadata approve=true or false.",
		fixed[ReplyInput](deliverLimit), s.replyMessage)
	addTool(srv, "read_message",
		"Return one message by its id, whole, from any inbox: a long message is typed into a pane as its first line and a pointer to its id.",
		fixed[ReadInput](mailboxLimit), s.readMessage)
	addTool(srv, "request_task",
		"Post an open request to your whole team; any agent may claim it with claim_request and exactly one gets it. You are told who did by a message of type claim.",
		fixed[RequestInput](mailboxLimit), s.requestTask)
	addTool(srv, "claim_request",
		"Claim an open request of your team. claimed is true when you got it; otherwise claimed_by says who has it (or reason says it expired).",
		fixed[ClaimInput](mailboxLimit), s.claimRequest)
	addTool(srv, "list_agents",
		"List the agents of your team: their tmux session and input-box state (ready, busy, dialog, draft, unknown), and what each reported on the status board.",
		fixed[ListInput](deliverLimit), s.listAgents)
	addTool(srv, "list_hosts",
		"List the hosts linked through NATS (this one first): whether each is linked now, when it was last seen, and its agents. send_message with host reaches an agent on another host.",
		fixed[HostsInput](mailboxLimit), s.listHosts)
	addTool(srv, "list_requests",
		"List the requests of your team: open, claimed (and by whom) or expired.",
		fixed[ListRequestsInput](mailboxLimit), s.listRequests)
	addTool(srv, "set_status",
		"Say on your team's status board what you are doing: only the fields given change (state: idle, working, blocked, pr_pending, complete or failed).",
		fixed[StatusUpdate](mailboxLimit), s.setStatus)
	addTool(srv, "get_board",
		"Show your team's status board: what each agent said it is doing, and when.",
		fixed[BoardInput](mailboxLimit), s.getBoard)
	addTool(srv, "heartbeat",
		"Tell your team you are alive now: once you have sent one, get_agent_status reports you dead when the last is older than its timeout (30s).",
		fixed[HeartbeatInput](mailboxLimit), s.heartbeat)
	addTool(srv, "wait_for_message",
		"Block until a message that matches from/type/reply_to (each optional) and that you have not seen is in your inbox, then return it and mark it read (one typed into your pane you saw there: it is passed over, as check_messages does). timeout_seconds: default 30, at most 120; timed_out is true when none came.",
		func(in WaitInput) time.Duration {
			d, _ := seconds(in.TimeoutSeconds, DefaultWait, MaxWait)
			return d + mailboxLimit
		}, s.waitForMessage)
}

// SendInput is send_message's input.
type SendInput struct {
	To       string            `json:"to" jsonschema:"the agent to send to, such as ana or ana-2"`
	Team     string            `json:"team,omitempty" jsonschema:"its team: yours when empty; another only for an orchestrator"`
	Host     string            `json:"host,omitempty" jsonschema:"the host the agent runs on, when not this one (list_hosts names them)"`
	Content  string            `json:"content" jsonschema:"the message text"`
	Type     string            `json:"type,omitempty" jsonschema:"text (the default), status (needs metadata state), shutdown-response (needs metadata accept), plan, plan-approval (needs metadata approve), task, shutdown-request"`
	ReplyTo  string            `json:"reply_to,omitempty" jsonschema:"the message_id this message answers"`
	Metadata map[string]string `json:"metadata,omitempty" jsonschema:"key/value pairs the receiver dispatches on, such as state=complete or step=build"`
	// WaitDeliveredSeconds is send --wait-delivered.
	WaitDeliveredSeconds float64 `json:"wait_delivered_seconds,omitempty" jsonschema:"when the message is deferred, wait up to this long (at most 120) for its delivery and report how that ended"`
}

// SendOutput is what a sent message became.
type SendOutput struct {
	MessageID string `json:"message_id"`
	To        string `json:"to"`
	Delivered bool   `json:"delivered" jsonschema:"the agent took it: submitted in its input box, or queued behind its current turn"`
	Verdict   string `json:"verdict" jsonschema:"submitted, queued, deferred (kept until the agent is ready), or recorded (put in an inbox only: the agent has no tmux session)"`
	Note      string `json:"note,omitempty"`
}

// sendMessage sends to the agent in.To (service.Send): typed into its
// tmux session when it has one, else recorded in its inbox provided
// agentmsg knows the name; with wait_delivered_seconds a deferral is
// waited on.
func (s *server) sendMessage(ctx context.Context, in SendInput) (SendOutput, error) {
	if in.ReplyTo != "" && !message.Valid(in.ReplyTo) {
		return SendOutput{}, fmt.Errorf("reply_to %q is not a message id (MSG_<SENDER>_<8 hex>)", in.ReplyTo)
	}
	wait, err := seconds(in.WaitDeliveredSeconds, 0, MaxWait)
	if err != nil {
		return SendOutput{}, fmt.Errorf("wait_delivered_seconds: %w", err)
	}
	t, err := s.agentTarget(in.Team, "to", in.To)
	if err != nil {
		return SendOutput{}, err
	}
	// The event log's end before the send: its delivery comes after it.
	before, _ := s.deps.LastEvent()
	r, err := s.deps.Send(ctx, service.SendRequest{To: t, ReplyTo: message.ID(in.ReplyTo), InboxIfAbsent: true,
		Draft:    service.Draft{Text: in.Content, Type: in.Type, Meta: in.Metadata},
		Delivery: service.Delivery{Queue: true}, Host: in.Host})
	out, err := sendOutput("to", in.To, t, r, err)
	if err != nil || wait == 0 || r.Verdict != delivery.Deferred {
		return out, err
	}
	return s.waitDelivered(ctx, out, r, before, wait)
}

// waitDelivered waits up to wait for the deferred message of r to be
// delivered (by a deliver pass, a turn-end hook or the daemon) and says
// how that ended, as send --wait-delivered does.
func (s *server) waitDelivered(ctx context.Context, out SendOutput, r service.SendResult, before int64, wait time.Duration) (SendOutput, error) {
	release, err := s.openWait()
	if err != nil {
		return out, err
	}
	defer release()
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	team, agent := target.Inbox(r.Target)
	ev, err := s.deps.WaitDelivered(wctx, before, r.ID, team, agent)
	switch {
	case err == nil:
		out.Verdict = strings.TrimPrefix(string(ev.Type), "message.")
		out.Delivered = out.Verdict == string(delivery.Submitted) || out.Verdict == string(delivery.Queued)
		out.Note = ""
		if !out.Delivered {
			out.Note = fmt.Sprintf("its delivery ended %s: %s", out.Verdict, ev.Detail)
		}
	case ctx.Err() == nil && errors.Is(wctx.Err(), context.DeadlineExceeded):
		out.Note += fmt.Sprintf("; still not delivered after %s", wait)
	default:
		return out, err
	}
	return out, nil
}

// ReplyInput is reply_message's input.
type ReplyInput struct {
	MessageID string            `json:"message_id" jsonschema:"the message in your inbox you answer"`
	Team      string            `json:"team,omitempty" jsonschema:"the team whose inbox of yours holds it: yours when empty; another only for an orchestrator"`
	Content   string            `json:"content" jsonschema:"the answer's text"`
	Type      string            `json:"type,omitempty" jsonschema:"text (the default), shutdown-response (needs metadata accept), plan-approval (needs metadata approve), status (needs metadata state), ..."`
	Metadata  map[string]string `json:"metadata,omitempty" jsonschema:"such as accept=true for a shutdown-response"`
}

func (s *server) replyMessage(ctx context.Context, in ReplyInput) (SendOutput, error) {
	if !message.Valid(in.MessageID) {
		return SendOutput{}, fmt.Errorf("message_id %q is not a message id (MSG_<SENDER>_<8 hex>)", in.MessageID)
	}
	team, err := s.teamOf(in.Team)
	if err != nil {
		return SendOutput{}, err
	}
	r, err := s.in(team).Reply(ctx, service.ReplyRequest{To: message.ID(in.MessageID), Queue: true,
		Draft: service.Draft{Text: in.Content, Type: in.Type, Meta: in.Metadata}})
	if errors.Is(err, mailbox.ErrNoMessage) {
		return SendOutput{}, fmt.Errorf("message_id %s is not in your inbox of team %s: reply_message answers messages to you", in.MessageID, team)
	}
	return sendOutput("message_id", in.MessageID, r.Target, r, err)
}

// ReadInput is read_message's input.
type ReadInput struct {
	MessageID string `json:"message_id" jsonschema:"the id, MSG_<SENDER>_<8 hex>"`
}

func (s *server) readMessage(ctx context.Context, in ReadInput) (Message, error) {
	read := s.deps.ReadOwn // an agent reads its own mail, and what it sent
	if s.orchestrator {
		read = s.deps.Read
	}
	e, err := read(ctx, message.ID(in.MessageID))
	if errors.Is(err, mailbox.ErrNoMessage) {
		return Message{}, fmt.Errorf("message_id %s: no inbox holds it (it may have been dropped after delivery)", in.MessageID)
	}
	if err != nil {
		return Message{}, s.toolErr("read_message", err)
	}
	return toMessage(e), nil
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
	case res.Verdict == delivery.Recorded:
		out.Note = fmt.Sprintf("%s has no tmux session here; the message waits in its inbox (it reads it with check_messages)", t.Agent())
	case res.Verdict == delivery.Deferred:
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
