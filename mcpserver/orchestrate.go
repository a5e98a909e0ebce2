package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentmsg/agentmsg/dispatch"
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
