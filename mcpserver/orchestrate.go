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
)

func (s *server) addOrchestratorTools(srv *mcp.Server) {
	addTool(srv, "broadcast",
		"Send one message to every agent of your team that has a tmux session, in parallel. delivered_to lists those that took it, deferred those that were busy (they get it once ready), failed the rest with a reason.",
		fixed[BroadcastInput](deliverLimit), s.broadcast)
	addTool(srv, "shutdown_agent",
		"Ask an agent to finish up and stop (a shutdown-request message). The agent answers with a shutdown-response that accepts, or defers while it finishes; wait_seconds waits for that answer.",
		func(in ShutdownInput) time.Duration {
			d, _ := seconds(in.WaitSeconds, 0, maxShutdownWait)
			return d + deliverLimit
		}, s.shutdownAgent)
	addTool(srv, "kill_agent",
		"Stop an agent now: SIGTERM to its processes, SIGKILL after grace_seconds (default 5), then its tmux session is removed. Nothing is left running.",
		func(in KillInput) time.Duration {
			d, _ := seconds(in.GraceSeconds, defaultGrace, time.Minute)
			return d + 30*time.Second
		}, s.killAgent)
	addTool(srv, "get_agent_status",
		"The status of one agent, or of every agent of your team: running, idle, waiting or dead, last activity, pending messages, open requests and what it reported on the status board.",
		fixed[StatusInput](deliverLimit), s.agentStatus)
	addTool(srv, "assign_task",
		"Give an agent a task: a message of type task whose text first lists the agent's unread messages (so it has the context), then the task.",
		fixed[AssignInput](deliverLimit), s.assignTask)
	addTool(srv, "create_workflow",
		"Run named steps, each a prompt for one agent, in dependency order: steps whose depends_on are done run in parallel, and each step's prompt gets the outputs of the steps it depends on. A step's output is what its agent reports in a status message with metadata step=<name> (or a reply to the step's task message). Returns when every step is done, one failed, or timeout_seconds (default 600, at most 3600) passed.",
		func(in WorkflowInput) time.Duration {
			d, _ := seconds(in.TimeoutSeconds, DefaultWorkflowTimeout, MaxWorkflowTimeout)
			return d + deliverLimit
		}, s.createWorkflow)
}

// BroadcastInput is broadcast's input.
type BroadcastInput struct {
	Content  string            `json:"content" jsonschema:"the message text"`
	Type     string            `json:"type,omitempty" jsonschema:"text (the default), status, task, shutdown-request, ..."`
	Metadata map[string]string `json:"metadata,omitempty"`
}

// Failure is one agent a message did not reach.
type Failure struct {
	Agent  string `json:"agent"`
	Reason string `json:"reason"`
}

// BroadcastOutput is each agent's outcome.
type BroadcastOutput struct {
	MessageID   string    `json:"message_id"`
	Verdict     string    `json:"verdict" jsonschema:"delivered (every agent took it), deferred (none failed; some keep it until they are ready), partial (some failed) or failed (all failed)"`
	DeliveredTo []string  `json:"delivered_to"`
	Deferred    []string  `json:"deferred" jsonschema:"agents that were not ready; the message is typed once they are"`
	Failed      []Failure `json:"failed"`
}

func (s *server) broadcast(ctx context.Context, in BroadcastInput) (BroadcastOutput, error) {
	team, err := s.team()
	if err != nil {
		return BroadcastOutput{}, err
	}
	res, err := s.deps.Broadcast(ctx, service.BroadcastRequest{Team: team,
		Draft:    service.Draft{Text: in.Content, Type: in.Type, Meta: in.Metadata},
		Delivery: service.Delivery{Queue: true}})
	switch {
	case errors.Is(err, dispatch.ErrEmptyMessage):
		return BroadcastOutput{}, fmt.Errorf("content: %w", err)
	case err != nil:
		return BroadcastOutput{}, fmt.Errorf("broadcast to team %s: %w", team, err)
	}
	out := BroadcastOutput{MessageID: string(res.ID), Verdict: string(res.Verdict), DeliveredTo: []string{}, Deferred: []string{}, Failed: []Failure{}}
	for _, r := range res.Delivered {
		out.DeliveredTo = append(out.DeliveredTo, r.Target.Agent())
	}
	for _, r := range res.Deferred {
		out.Deferred = append(out.Deferred, r.Target.Agent())
	}
	for _, r := range res.Failed {
		reason := string(r.Verdict)
		if r.Err != nil {
			reason += ": " + r.Err.Error()
		}
		out.Failed = append(out.Failed, Failure{Agent: r.Target.Agent(), Reason: reason})
	}
	return out, nil
}

// AssignInput is assign_task's input.
type AssignInput struct {
	Agent  string `json:"agent" jsonschema:"the agent of your team to give the task to"`
	Task   string `json:"task" jsonschema:"what the agent is to do"`
	TaskID string `json:"task_id,omitempty" jsonschema:"your name for the task, sent as metadata task_id"`
}

// AssignOutput is the task message and what went into it.
type AssignOutput struct {
	SendOutput
	// Injected are the unread messages put in front of the task.
	Injected []string `json:"injected" jsonschema:"ids of the agent's unread messages put in front of the task"`
}

func (s *server) assignTask(ctx context.Context, in AssignInput) (AssignOutput, error) {
	t, err := s.agentTarget("agent", in.Agent)
	if err != nil {
		return AssignOutput{}, err
	}
	task := strings.TrimSpace(in.Task)
	if task == "" {
		return AssignOutput{}, fmt.Errorf("task is empty: say what %s is to do", t.Agent())
	}
	team, agent := courier.Inbox(t)
	unread, err := s.deps.Store.Unread(team, agent, agent)
	if err != nil {
		return AssignOutput{}, fmt.Errorf("reading %s's unread messages: %w", t, err)
	}
	box, err := s.deps.Store.Box(team, agent)
	if err != nil {
		return AssignOutput{}, err
	}
	// Messages already typed into the agent's pane (submitted, queued)
	// reached it; only the ones it has not seen go in front of the task,
	// and of those no request that is claimed or expired: as deliver
	// does, that is recorded, not typed.
	var notSeen []mailbox.Envelope
	for _, e := range unread.Envelopes {
		d := e.Delivery
		if d != nil && (d.State == mailbox.StateSubmitted || d.State == mailbox.StateQueued) {
			continue
		}
		if why := s.deps.Store.Withdrawn(team, e); why != "" {
			if d != nil && (d.State == mailbox.StatePending || d.State == mailbox.StateDeferred) {
				rec := mailbox.Delivery{State: mailbox.StateSkipped, Attempts: d.Attempts, LastVerdict: "skipped: " + why, Updated: s.deps.Now()}
				if err := box.SetDelivery(e.ID, rec); err != nil {
					return AssignOutput{}, fmt.Errorf("recording that %s is not typed: %w", e.ID, err)
				}
			}
			continue
		}
		notSeen = append(notSeen, e)
	}
	env := mailbox.Envelope{Type: mailbox.TypeTask, Content: withContext(notSeen, task)}
	if in.TaskID != "" {
		env.Metadata = map[string]string{"task_id": in.TaskID}
	}
	// The injected ones travel inside the task: marked read before it is
	// sent, so that the send (which types older waiting messages first)
	// and deliver do not type them on their own as well. Put back if the
	// task is refused.
	var carried []mailbox.Envelope
	for _, e := range notSeen {
		if e.Delivery != nil && e.Delivery.State.Outstanding() {
			rec := mailbox.Delivery{State: mailbox.StateRead, Attempts: e.Delivery.Attempts, LastVerdict: "read: inside a task"}
			if err := box.SetDelivery(e.ID, rec); err != nil {
				return AssignOutput{}, fmt.Errorf("recording that the task carries %s: %w", e.ID, err)
			}
			carried = append(carried, e)
		}
	}
	sent, err := s.send(ctx, t.Agent(), env)
	out := AssignOutput{SendOutput: sent, Injected: []string{}}
	if err != nil {
		// The task was not kept anywhere: the messages wait on their own.
		for _, e := range carried {
			_ = box.SetDelivery(e.ID, *e.Delivery)
		}
		return out, err
	}
	// The agent has these now, in the task or typed earlier: they are read.
	shown := map[message.ID]bool{}
	for _, e := range unread.Envelopes {
		shown[e.ID] = true
	}
	for _, e := range notSeen {
		out.Injected = append(out.Injected, string(e.ID))
	}
	if len(shown) > 0 {
		if _, err := s.deps.Store.AdvanceShown(team, agent, agent, shown); err != nil {
			return out, fmt.Errorf("the task was sent, but marking %s's messages read failed: %w", t, err)
		}
	}
	return out, nil
}

// withContext is a task's text: the agent's unread messages first (the
// context it would otherwise miss), then the task.
func withContext(unread []mailbox.Envelope, task string) string {
	if len(unread) == 0 {
		return task
	}
	var b strings.Builder
	noun := "messages"
	if len(unread) == 1 {
		noun = "message"
	}
	fmt.Fprintf(&b, "You have %d unread %s:\n", len(unread), noun)
	for _, e := range unread {
		label := string(e.Type)
		if e.RequestID != "" {
			label += ", " + e.RequestID
		}
		if e.ReplyTo != "" {
			label += ", reply to " + string(e.ReplyTo)
		}
		fmt.Fprintf(&b, "[%s] from %s (%s): %s\n", e.ID, e.From, label, strings.ReplaceAll(e.Content, "\n", "\n  "))
	}
	b.WriteString("\nYour task:\n")
	b.WriteString(task)
	return b.String()
}
