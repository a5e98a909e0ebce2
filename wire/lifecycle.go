package wire

import (
	"time"

	"github.com/agentmsg/agentmsg/lifecycle"
	"github.com/agentmsg/agentmsg/service"
	"github.com/agentmsg/agentmsg/target"
)

// The documents of the lifecycle: spawn, shutdown, kill and agents.

// Spawn is the agent started (spawn).
type Spawn struct {
	Team    string   `json:"team"`
	Agent   string   `json:"agent"`
	Session string   `json:"session"`
	Socket  string   `json:"socket"`
	Pane    string   `json:"pane"`
	PID     int      `json:"pid"`
	Command []string `json:"command"`
	Dir     string   `json:"dir,omitempty" jsonschema:"the working directory asked for; absent: the tmux server's choice"`
	Kind    string   `json:"kind,omitempty"`
}

// NewSpawn is res, started for req, as a document.
func NewSpawn(res service.SpawnResult, req lifecycle.SpawnRequest) Spawn {
	t := res.Target
	return Spawn{t.Team, t.Agent(), t.Session, res.Socket, res.Pane, res.PID, req.Command, req.Dir, req.Agent}
}

// Shutdown is what came of a shutdown-request (shutdown): the request's
// delivery and, when it waited, the agent's answer.
type Shutdown struct {
	RequestID string `json:"request_id"`
	From      string `json:"from"`
	Session   string `json:"session"`
	Outcome
	Waited     bool   `json:"waited"`
	Answered   bool   `json:"answered"`
	Accepted   bool   `json:"accepted"`
	Reason     string `json:"reason,omitempty"`
	ResponseID string `json:"response_id,omitempty"`
	TimedOut   bool   `json:"timed_out"`
}

// ShutdownCode is the exit code of a shutdown: the request's when it was
// not delivered, ExitTimeout when no answer came in the wait, ExitDeferred
// when the agent deferred.
func ShutdownCode(res service.ShutdownResult) int {
	switch {
	case res.NotSent():
		return ResultCode(res.Sent)
	case res.TimedOut():
		return ExitTimeout
	case res.Waited && !res.Accepted:
		return ExitDeferred
	}
	return ExitOK
}

// NewShutdown is res as a document.
func NewShutdown(res service.ShutdownResult, words Words) Shutdown {
	doc := Shutdown{
		RequestID: string(res.RequestID), From: res.From, Session: res.Target.Session,
		Outcome: NewResult(res.Sent, words),
		Waited:  res.Waited, Answered: res.Answered, Accepted: res.Accepted, Reason: res.Reason,
		TimedOut: res.TimedOut(),
	}
	if doc.Team == "" && doc.Agent == "" {
		doc.Team, doc.Agent = res.Target.Team, res.Target.Agent()
	}
	if res.Response != nil {
		doc.ResponseID = string(res.Response.ID)
	}
	doc.ExitCode = ShutdownCode(res)
	return doc
}

// Kill is what a kill ended (kill).
type Kill struct {
	Team     string  `json:"team"`
	Agent    string  `json:"agent"`
	Session  string  `json:"session"`
	PIDs     []int   `json:"pids"`
	Forced   bool    `json:"forced"`
	TookMS   float64 `json:"took_ms"`
	ExitCode int     `json:"exit_code"`
	Error    string  `json:"error,omitempty"`
}

// NewKill is the kill of t as a document: res, and err when processes
// survived it (lifecycle.ErrSurvived).
func NewKill(t target.Target, res lifecycle.KillResult, err error) Kill {
	doc := Kill{Team: t.Team, Agent: t.Agent(), Session: t.Session, PIDs: res.PIDs, Forced: res.Forced,
		TookMS: ms(res.Took), ExitCode: ErrorCode(err)}
	if doc.PIDs == nil {
		doc.PIDs = []int{}
	}
	if err != nil {
		doc.Error = err.Error()
	}
	return doc
}

// AgentState is one agent's state as the lifecycle sees it (agents).
type AgentState struct {
	Team         string     `json:"team"`
	Agent        string     `json:"agent"`
	Session      string     `json:"session"`
	State        string     `json:"state" enum:"AgentStatus"`
	Reason       string     `json:"reason,omitempty" jsonschema:"why it is in that state, for a person"`
	Registered   bool       `json:"registered"`
	Kind         string     `json:"kind,omitempty"`
	Pane         string     `json:"pane,omitempty"`
	PID          int        `json:"pid,omitempty"`
	Command      string     `json:"command,omitempty"`
	Pending      int        `json:"pending"`
	OpenRequests int        `json:"open_requests"`
	LastActivity *time.Time `json:"last_activity,omitempty"`
	Heartbeat    *time.Time `json:"heartbeat,omitempty"`
	Spawned      *time.Time `json:"spawned,omitempty"`
	Status       any        `json:"status,omitempty"`
}

// NewAgentState is s as a document.
func NewAgentState(s lifecycle.AgentStatus) AgentState {
	j := AgentState{
		Team: s.Target.Team, Agent: s.Target.Agent(), Session: s.Target.Session, State: s.State, Reason: s.Reason,
		Registered: s.Registered, Pane: s.Pane, PID: s.PID, Command: s.Command,
		Pending: s.Pending, OpenRequests: s.OpenRequests,
		LastActivity: timePtr(s.LastActivity), Heartbeat: timePtr(s.Heartbeat),
	}
	if s.Record != nil {
		j.Kind, j.Spawned = s.Record.Kind, timePtr(s.Record.Spawned)
	}
	if s.Status != nil {
		j.Status = s.Status
	}
	return j
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

// AgentStates is the state of a team's agents, or every agent's, on the
// server at Socket (agents); with reap, also the dead ones unregistered.
type AgentStates struct {
	Socket string       `json:"socket"`
	Agents []AgentState `json:"agents"`
	Reaped []AgentState `json:"reaped,omitempty"`
}

// NewAgentStates is res as a document; reap lists Reaped (empty or not).
func NewAgentStates(res service.AgentsResult, reap bool) AgentStates {
	doc := AgentStates{Socket: res.Socket, Agents: []AgentState{}}
	for _, s := range res.Agents {
		doc.Agents = append(doc.Agents, NewAgentState(s))
	}
	if reap {
		doc.Reaped = []AgentState{}
		for _, s := range res.Reaped {
			doc.Reaped = append(doc.Reaped, NewAgentState(s))
		}
	}
	return doc
}
