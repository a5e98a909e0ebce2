package service

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/lifecycle"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/target"
	"github.com/agentmsg/agentmsg/tmux"
)

// watcher is what Agents needs of a lifecycle beyond Lifecycle, for a
// heartbeat timeout of its own and for reaping: *lifecycle.Manager has it.
type watcher interface {
	StatusWithin(ctx context.Context, team string, heartbeat time.Duration) ([]lifecycle.AgentStatus, error)
	ReapWithin(ctx context.Context, team string, heartbeat time.Duration) ([]lifecycle.AgentStatus, error)
}

// ErrNoReap: the lifecycle cannot reap or take a heartbeat timeout.
var ErrNoReap = errors.New("this agent lifecycle cannot reap or take a heartbeat timeout")

// AgentsRequest asks for the state of a team's agents.
type AgentsRequest struct {
	Team             string // "" every team, target.RalphTeam the team-less agents
	Agent            string // only this agent of Team ("": all of them)
	Reap             bool   // remove the registry entries of dead agents (kills nothing)
	HeartbeatTimeout time.Duration
}

// AgentsResult is each agent's state, on the tmux server at Socket.
type AgentsResult struct {
	Socket string
	Agents []lifecycle.AgentStatus
	Reaped []lifecycle.AgentStatus // with Reap: the dead ones, unregistered now
}

// NoAgentError: Team has no agent Agent; Agents are the ones it has.
type NoAgentError struct {
	Team, Agent string
	Agents      []string
}

func (e *NoAgentError) Error() string { return fmt.Sprintf("no agent %q in team %s", e.Agent, e.Team) }

// Unwrap makes a missing agent a missing target.
func (e *NoAgentError) Unwrap() error { return dispatch.ErrTargetNotFound }

// Agents reports the state of the agents of req.Team (the registry joined
// with the server's sessions), reaping the dead first with req.Reap. A
// named team with no agents that nobody knows is a *TeamNotFoundError; a
// named agent that is not there a NoAgentError.
func (s *Service) Agents(ctx context.Context, req AgentsRequest) (AgentsResult, error) {
	var out AgentsResult
	lc, err := s.lifecycle()
	if err != nil {
		return out, err
	}
	w, ok := lc.(watcher)
	if !ok && (req.Reap || req.HeartbeatTimeout > 0) {
		return out, ErrNoReap
	}
	if req.Reap {
		if out.Reaped, err = w.ReapWithin(ctx, req.Team, req.HeartbeatTimeout); err != nil {
			return out, err
		}
	}
	if w != nil {
		out.Agents, err = w.StatusWithin(ctx, req.Team, req.HeartbeatTimeout)
	} else {
		out.Agents, err = lc.Status(ctx, req.Team)
	}
	if err != nil {
		return out, err
	}
	var d *dispatch.Dispatcher
	if s.Dispatcher != nil {
		if d, err = s.Dispatcher(); err == nil {
			out.Socket = d.Tmux.Server().Socket
		}
	}
	if len(out.Agents) == 0 && len(out.Reaped) == 0 && req.Team != "" && req.Team != target.RalphTeam {
		if err := s.CheckTeam(ctx, req.Team); err != nil {
			return out, err
		}
	}
	if req.Agent != "" {
		var names []string
		var one []lifecycle.AgentStatus
		for _, a := range out.Agents {
			names = append(names, a.Target.Agent())
			if a.Target.Agent() == req.Agent {
				one = append(one, a)
			}
		}
		if out.Agents = one; len(one) == 0 {
			return out, &NoAgentError{Team: req.Team, Agent: req.Agent, Agents: names}
		}
	}
	return out, nil
}

// ListedAgent is one agent of the caller's team: its session's screen
// state (a delivery state, or "no-session") and what it reported on the
// status board.
type ListedAgent struct {
	Agent, Session, Pane, Command string
	State, Detail                 string
	Board, WorkingOn              string
	You                           bool // the caller
}

// ListAgentsResult is the caller's team. TmuxErr says why no session
// could be listed (nil when NoServer or all went well).
type ListAgentsResult struct {
	Team     string
	Agents   []ListedAgent // by name
	NoServer bool          // no tmux server runs: no agent has a session
	TmuxErr  error         // tmux was not reachable
}

// NoSession is a ListedAgent's State when it has no tmux session.
const NoSession = "no-session"

// ListAgents lists the caller's team: the agent sessions on the server
// with their screen states, the team's inboxes and its status board.
func (s *Service) ListAgents(ctx context.Context) (ListAgentsResult, error) {
	out := ListAgentsResult{Team: s.Team, Agents: []ListedAgent{}}
	if s.Team == "" {
		return out, lifecycle.ErrNoTeam
	}
	byName := map[string]*ListedAgent{}
	get := func(name string) *ListedAgent {
		if a, ok := byName[name]; ok {
			return a
		}
		a := &ListedAgent{Agent: name, State: NoSession, You: name == s.Name}
		byName[name] = a
		return a
	}
	d, err := s.agentsDispatcher()
	if err == nil {
		found, lerr := d.Agents(ctx, s.Team, dispatch.Call{})
		switch {
		case errors.Is(lerr, tmux.ErrNoServer):
			out.NoServer = true
		case lerr != nil:
			return out, fmt.Errorf("listing the agents' tmux sessions: %w", lerr)
		}
		for _, f := range found {
			a := get(f.Target.Agent())
			a.Session, a.Pane, a.Command = f.Target.Session, f.Pane.ID, f.Pane.Command
			a.State, a.Detail = string(f.State), f.Detail
		}
	} else {
		out.TmuxErr = err
	}
	inboxes, _ := s.Store.Agents(s.Team)
	board, _ := s.Store.Board(s.Team)
	for _, name := range inboxes {
		if _, known := byName[name]; !known && !slices.ContainsFunc(board, func(st mailbox.Status) bool { return st.Agent == name }) && s.onlyAnswers(name) {
			continue
		}
		get(name)
	}
	for _, st := range board {
		a := get(st.Agent)
		a.Board, a.WorkingOn = st.State, st.WorkingOn
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		out.Agents = append(out.Agents, *byName[n])
	}
	return out, nil
}

// onlyAnswers reports whether name's inbox in the caller's team holds
// nothing but answers to what name sent, and name is registered nowhere:
// an app (or a person) that sent through the API and was answered is
// not an agent of the team, though its answers wait in an inbox for it.
func (s *Service) onlyAnswers(name string) bool {
	if _, err := s.Store.RegisteredAgent(s.Team, name); err == nil {
		return false
	}
	b, err := s.Store.Read(s.Team, name)
	if err != nil || len(b.Envelopes) == 0 {
		return false
	}
	for _, e := range b.Envelopes {
		if e.ReplyTo == "" {
			return false
		}
	}
	return true
}

// agentsDispatcher is the Service's dispatcher, or why there is none.
func (s *Service) agentsDispatcher() (*dispatch.Dispatcher, error) {
	if s.Dispatcher == nil {
		return nil, errors.New("no tmux server configured")
	}
	return s.Dispatcher()
}
