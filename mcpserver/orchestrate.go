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
	addTool(srv, "spawn_agent",
		"Start an agent in a tmux session of its own (agent-TEAM-NAME), running command word for word, and register it with its team; it can run agentmsg (or this MCP server) with no settings.",
		fixed[SpawnInput](spawnLimit), s.spawnAgent)
	addTool(srv, "deliver_messages",
		"Type the messages waiting in a team's inboxes (deferred while their agents were busy) into the agents that are ready now, oldest first, each exactly once; tell the team of requests that expired unclaimed.",
		fixed[DeliverInput](deliverLimit), s.deliverMessages)
	addTool(srv, "message_log",
		"What became of the messages in a team's inboxes: each with its delivery state and why it waits or failed; with message_id, every delivery record of that message.",
		fixed[LogInput](mailboxLimit), s.messageLog)
	addTool(srv, "get_events",
		"Every change of every message and agent, in order (message.submitted, message.deferred, agent.busy, ...): give the next_after of one call as after to the next to miss nothing and see nothing twice.",
		fixed[EventsInput](mailboxLimit), s.getEvents)
	addTool(srv, "clean_team",
		"Remove what the mailbox keeps for a team: inboxes, read cursors, requests and status board (messages not yet delivered are lost). dry_run only says what that would be.",
		fixed[CleanInput](mailboxLimit), s.cleanTeam)
}

// BroadcastInput is broadcast's input.
type BroadcastInput struct {
	Content  string            `json:"content" jsonschema:"the message text"`
	Team     string            `json:"team,omitempty" jsonschema:"the team to reach: yours when empty, or any other"`
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
	team, err := s.teamOf(in.Team)
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

// DeliverInput is deliver_messages' input.
type DeliverInput struct {
	Team                string  `json:"team,omitempty" jsonschema:"the team whose waiting messages to type: yours when empty, or any other"`
	ReadyTimeoutSeconds float64 `json:"ready_timeout_seconds,omitempty" jsonschema:"how long to wait for each agent to be ready (default: the configured wait; at most 60)"`
}

// Delivered is one message a deliver pass tried.
type Delivered struct {
	Agent     string `json:"agent"`
	MessageID string `json:"message_id"`
	Verdict   string `json:"verdict" jsonschema:"submitted, queued, deferred (still waiting), skipped, typed, unknown or failed"`
	Reason    string `json:"reason,omitempty"`
}

// DeliverOutput is what one pass did.
type DeliverOutput struct {
	Team      string      `json:"team"`
	Delivered int         `json:"delivered" jsonschema:"messages the agents took"`
	Tried     []Delivered `json:"tried" jsonschema:"every message tried, in order"`
	Reminded  []string    `json:"reminded,omitempty" jsonschema:"expired, unclaimed requests the team was told of"`
}

const maxPassWait = time.Minute

func (s *server) deliverMessages(ctx context.Context, in DeliverInput) (DeliverOutput, error) {
	team, err := s.teamOf(in.Team)
	if err != nil {
		return DeliverOutput{}, err
	}
	wait, err := seconds(in.ReadyTimeoutSeconds, 0, maxPassWait)
	if err != nil {
		return DeliverOutput{}, fmt.Errorf("ready_timeout_seconds: %w", err)
	}
	// Not into the caller's own pane: it is busy calling this tool.
	res, err := s.deps.Deliver(ctx, service.DeliverRequest{Team: team, ReadyTimeout: wait, LeaveSelf: true})
	out := DeliverOutput{Team: team, Delivered: res.Delivered(), Tried: []Delivered{}}
	for _, t := range res.Typed {
		d := Delivered{Agent: t.Agent, MessageID: string(t.ID), Verdict: string(t.Verdict), Reason: t.Reason}
		if t.Err != nil && d.Reason == "" {
			d.Reason = t.Err.Error()
		}
		out.Tried = append(out.Tried, d)
	}
	for _, r := range res.Reminded {
		out.Reminded = append(out.Reminded, r.ID)
	}
	var pe *service.PassError
	if err != nil && !errors.As(err, &pe) {
		return out, fmt.Errorf("delivering to team %s: %w", team, err)
	}
	return out, err
}

// CleanInput is clean_team's input.
type CleanInput struct {
	Team   string `json:"team" jsonschema:"the team whose mailbox to remove: its inboxes, read cursors, requests and status board"`
	DryRun bool   `json:"dry_run,omitempty" jsonschema:"only say what would be removed"`
}

// CleanOutput is what is (or was) stored for the team.
type CleanOutput struct {
	Team     string   `json:"team"`
	Stored   bool     `json:"stored" jsonschema:"anything was stored for it"`
	Removed  bool     `json:"removed"`
	Inboxes  []string `json:"inboxes"`
	Requests int      `json:"requests"`
	Statuses int      `json:"statuses"`
}

func (s *server) cleanTeam(ctx context.Context, in CleanInput) (CleanOutput, error) {
	if in.Team == "" {
		return CleanOutput{}, errors.New("team is empty: name the team whose mailbox to remove")
	}
	team, err := s.teamOf(in.Team)
	if err != nil {
		return CleanOutput{}, err
	}
	res, err := s.deps.CleanTeam(ctx, service.CleanTeam{Team: team, DryRun: in.DryRun})
	if err != nil {
		return CleanOutput{}, fmt.Errorf("cleaning team %s: %w", team, err)
	}
	return CleanOutput{Team: res.Team, Stored: res.Stored, Removed: res.Removed, Inboxes: res.Inboxes,
		Requests: res.Requests, Statuses: res.Statuses}, nil
}
