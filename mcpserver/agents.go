package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentmsg/agentmsg/hosts"
	"github.com/agentmsg/agentmsg/service"
)

// ListInput is list_agents' input.
type ListInput struct {
	Team string `json:"team,omitempty" jsonschema:"yours when empty; another only for an orchestrator"`
}

// ListedAgent is one agent of the team.
type ListedAgent struct {
	Agent   string `json:"agent"`
	Session string `json:"session,omitempty" jsonschema:"its tmux session; empty when it has none"`
	Pane    string `json:"pane,omitempty"`
	Command string `json:"command,omitempty"`
	// State is the input box's state for an agent in tmux (ready, busy,
	// dialog, draft, unknown), else "no-session".
	State     string `json:"state" jsonschema:"ready, busy, dialog, draft or unknown for an agent in tmux; no-session otherwise"`
	Detail    string `json:"detail,omitempty"`
	Board     string `json:"board_state,omitempty" jsonschema:"the state it reported on the status board"`
	WorkingOn string `json:"working_on,omitempty"`
	You       bool   `json:"you,omitempty"`
}

// ListOutput is the team.
type ListOutput struct {
	Team   string        `json:"team"`
	Agents []ListedAgent `json:"agents"`
	Note   string        `json:"note,omitempty"`
}

func (s *server) listAgents(ctx context.Context, in ListInput) (ListOutput, error) {
	team, err := s.teamOf(in.Team)
	if err != nil {
		return ListOutput{}, err
	}
	res, err := s.in(team).ListAgents(ctx)
	out := ListOutput{Team: res.Team, Agents: []ListedAgent{}}
	if err != nil {
		return out, err
	}
	switch {
	case res.NoServer:
		out.Note = "no tmux server is running, so no agent has a session"
	case res.TmuxErr != nil:
		out.Note = "tmux is not reachable: " + res.TmuxErr.Error()
	}
	for _, a := range res.Agents {
		out.Agents = append(out.Agents, ListedAgent{Agent: a.Agent, Session: a.Session, Pane: a.Pane, Command: a.Command,
			State: a.State, Detail: a.Detail, Board: a.Board, WorkingOn: a.WorkingOn, You: a.You})
	}
	return out, nil
}

// StatusInput is get_agent_status' input.
type StatusInput struct {
	Agent string `json:"agent,omitempty" jsonschema:"one agent; every agent of the team when empty"`
	Team  string `json:"team,omitempty" jsonschema:"yours when empty, or any other"`
}

// AgentStatusOut is one agent's status.
type AgentStatusOut struct {
	Agent        string    `json:"agent"`
	Session      string    `json:"session"`
	State        string    `json:"state" jsonschema:"running, idle, waiting or dead"`
	Reason       string    `json:"reason,omitempty"`
	LastActivity time.Time `json:"last_activity,omitzero"`
	Pending      int       `json:"pending" jsonschema:"messages not yet delivered to it"`
	OpenRequests int       `json:"open_requests"`
	Pane         string    `json:"pane,omitempty"`
	Command      string    `json:"command,omitempty"`
	Mission      string    `json:"mission,omitempty"`
	WorkingOn    string    `json:"working_on,omitempty"`
	BoardState   string    `json:"board_state,omitempty"`
}

// StatusOutput is get_agent_status' output.
type StatusOutput struct {
	Team   string           `json:"team"`
	Agents []AgentStatusOut `json:"agents"`
}

func (s *server) agentStatus(ctx context.Context, in StatusInput) (StatusOutput, error) {
	team, err := s.teamOf(in.Team)
	if err != nil {
		return StatusOutput{}, err
	}
	res, err := s.deps.Agents(ctx, service.AgentsRequest{Team: team, Agent: in.Agent})
	out := StatusOutput{Team: team, Agents: []AgentStatusOut{}}
	var none *service.NoAgentError
	if errors.As(err, &none) {
		return out, fmt.Errorf("no agent %q in team %s (agents: %s)", none.Agent, team, orNone(none.Agents))
	}
	if err != nil {
		return out, fmt.Errorf("reading the status of team %s: %w", team, err)
	}
	for _, a := range res.Agents {
		o := AgentStatusOut{Agent: a.Target.Agent(), Session: a.Target.Session, State: a.State, Reason: a.Reason,
			LastActivity: a.LastActivity, Pending: a.Pending, OpenRequests: a.OpenRequests, Pane: a.Pane, Command: a.Command}
		if st := a.Status; st != nil {
			o.Mission, o.WorkingOn, o.BoardState = st.Mission, st.WorkingOn, st.State
		}
		out.Agents = append(out.Agents, o)
	}
	return out, nil
}

// ShutdownInput is shutdown_agent's input.
type ShutdownInput struct {
	Agent       string  `json:"agent" jsonschema:"the agent to stop, such as ana or ana-2"`
	Team        string  `json:"team,omitempty" jsonschema:"its team: yours when empty, or any other"`
	Reason      string  `json:"reason,omitempty" jsonschema:"why it should stop, shown to the agent"`
	WaitSeconds float64 `json:"wait_seconds,omitempty" jsonschema:"wait this long for the agent's shutdown-response (0: do not wait; at most 600)"`
}

// ShutdownOutput is what came of a shutdown request.
type ShutdownOutput struct {
	Agent     string   `json:"agent"`
	RequestID string   `json:"request_id" jsonschema:"the shutdown-request message"`
	Answered  bool     `json:"answered"`
	Accepted  bool     `json:"accepted" jsonschema:"true: the agent is stopping; false with answered: it deferred"`
	Reason    string   `json:"reason,omitempty" jsonschema:"the agent's reason, when it answered"`
	Response  *Message `json:"response,omitempty"`
}

const maxShutdownWait = 10 * time.Minute

func (s *server) shutdownAgent(ctx context.Context, in ShutdownInput) (ShutdownOutput, error) {
	t, err := s.agentTarget(in.Team, "agent", in.Agent)
	if err != nil {
		return ShutdownOutput{}, err
	}
	wait, err := seconds(in.WaitSeconds, 0, maxShutdownWait)
	if err != nil {
		return ShutdownOutput{}, fmt.Errorf("wait_seconds: %w", err)
	}
	r, err := s.deps.Shutdown(ctx, service.ShutdownRequest{Target: t, Reason: in.Reason, Wait: wait})
	if err != nil {
		return ShutdownOutput{}, fmt.Errorf("shutting down %s: %w", t, err)
	}
	out := ShutdownOutput{Agent: t.Agent(), RequestID: string(r.RequestID), Answered: r.Answered, Accepted: r.Accepted, Reason: r.Reason}
	if r.Response != nil {
		m := toMessage(*r.Response)
		out.Response = &m
	}
	return out, nil
}

// KillInput is kill_agent's input.
type KillInput struct {
	Agent        string  `json:"agent" jsonschema:"the agent to kill"`
	Team         string  `json:"team,omitempty" jsonschema:"its team: yours when empty, or any other"`
	GraceSeconds float64 `json:"grace_seconds,omitempty" jsonschema:"time between SIGTERM and SIGKILL (default 5, at most 60)"`
}

// KillOutput is what a kill did.
type KillOutput struct {
	Agent   string  `json:"agent"`
	Session string  `json:"session"`
	PIDs    []int   `json:"pids" jsonschema:"the processes signalled"`
	Forced  bool    `json:"forced" jsonschema:"some needed SIGKILL"`
	TookMS  float64 `json:"took_ms"`
	Killed  bool    `json:"killed"`
}

const defaultGrace = 5 * time.Second

func (s *server) killAgent(ctx context.Context, in KillInput) (KillOutput, error) {
	t, err := s.agentTarget(in.Team, "agent", in.Agent)
	if err != nil {
		return KillOutput{}, err
	}
	grace, err := seconds(in.GraceSeconds, defaultGrace, time.Minute)
	if err != nil {
		return KillOutput{}, fmt.Errorf("grace_seconds: %w", err)
	}
	r, err := s.deps.Kill(ctx, service.KillRequest{Target: t, Grace: grace})
	if err != nil {
		return KillOutput{}, fmt.Errorf("killing %s: %w", t, err)
	}
	pids := r.PIDs
	if pids == nil {
		pids = []int{}
	}
	return KillOutput{Agent: t.Agent(), Session: t.Session, PIDs: pids, Forced: r.Forced,
		TookMS: float64(r.Took.Microseconds()) / 1000, Killed: true}, nil
}

// HostsInput is list_hosts' input: none.
type HostsInput struct{}

// HostsOutput is every host on the bus.
type HostsOutput struct {
	Hosts []hosts.HostInfo `json:"hosts"`
	Note  string           `json:"note,omitempty"`
}

func (s *server) listHosts(ctx context.Context, _ HostsInput) (HostsOutput, error) {
	svc := s.deps
	list, err := svc.Hostlist(ctx)
	if list == nil {
		return HostsOutput{}, err
	}
	out := HostsOutput{Hosts: list}
	if err != nil {
		out.Note = "only this host is listed: " + err.Error()
	}
	return out, nil
}
