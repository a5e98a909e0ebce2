package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/service"
)

// set_status, get_board and heartbeat: Service.SetStatus, Board and
// Heartbeat, the team's status board and registry.

// StatusUpdate is set_status' input: only the fields given change.
type StatusUpdate struct {
	Mission   *string   `json:"mission,omitempty" jsonschema:"what you are here for"`
	WorkingOn *string   `json:"working_on,omitempty" jsonschema:"what you are doing now"`
	State     *string   `json:"state,omitempty" jsonschema:"idle, working, blocked, pr_pending, complete or failed"`
	Done      *[]string `json:"done,omitempty" jsonschema:"what you finished (replaces the list)"`
	Next      *[]string `json:"next,omitempty" jsonschema:"what comes next (replaces the list)"`
}

// BoardEntry is one agent's entry on the status board.
type BoardEntry struct {
	Agent     string    `json:"agent"`
	Mission   string    `json:"mission,omitempty"`
	WorkingOn string    `json:"working_on,omitempty"`
	Done      []string  `json:"done,omitempty"`
	Next      []string  `json:"next,omitempty"`
	State     string    `json:"state,omitempty"`
	Updated   time.Time `json:"updated,omitzero"`
}

func toBoardEntry(st mailbox.Status) BoardEntry {
	return BoardEntry{Agent: st.Agent, Mission: st.Mission, WorkingOn: st.WorkingOn, Done: st.Done, Next: st.Next,
		State: st.State, Updated: st.Updated}
}

// SetStatusOutput is the caller's entry as now stored.
type SetStatusOutput struct {
	Team   string     `json:"team"`
	Status BoardEntry `json:"status"`
}

func (s *server) setStatus(ctx context.Context, in StatusUpdate) (SetStatusOutput, error) {
	if _, err := s.team(); err != nil {
		return SetStatusOutput{}, err
	}
	res, err := (&s.deps).SetStatus(ctx, service.StatusUpdate{Mission: in.Mission, WorkingOn: in.WorkingOn, State: in.State,
		Done: in.Done, Next: in.Next})
	if errors.Is(err, service.ErrBadState) {
		return SetStatusOutput{}, fmt.Errorf("state: %w", err)
	}
	if err != nil {
		return SetStatusOutput{}, s.toolErr("set_status", err)
	}
	return SetStatusOutput{Team: res.Team, Status: toBoardEntry(res.Status)}, nil
}

// BoardInput is get_board's input.
type BoardInput struct {
	Team string `json:"team,omitempty" jsonschema:"yours when empty; another only for an orchestrator"`
}

// BoardOutput is a team's status board.
type BoardOutput struct {
	Team   string       `json:"team"`
	Agents []BoardEntry `json:"agents"`
	Note   string       `json:"note,omitempty"`
}

func (s *server) getBoard(ctx context.Context, in BoardInput) (BoardOutput, error) {
	team, err := s.teamOf(in.Team)
	if err != nil {
		return BoardOutput{}, err
	}
	res, err := (&s.deps).Board(ctx, s.other(team))
	out := BoardOutput{Team: team, Agents: []BoardEntry{}}
	if err != nil {
		return out, s.toolErr("get_board", err)
	}
	if res.ReadErr != nil {
		out.Note = "some entries could not be read: " + res.ReadErr.Error()
	}
	for _, st := range res.Agents {
		out.Agents = append(out.Agents, toBoardEntry(st))
	}
	return out, nil
}

// HeartbeatInput is heartbeat's input.
type HeartbeatInput struct{}

// HeartbeatOutput is the heartbeat as recorded.
type HeartbeatOutput struct {
	Team  string    `json:"team"`
	Agent string    `json:"agent"`
	At    time.Time `json:"at"`
}

func (s *server) heartbeat(ctx context.Context, _ HeartbeatInput) (HeartbeatOutput, error) {
	if _, err := s.team(); err != nil {
		return HeartbeatOutput{}, err
	}
	r, err := s.deps.Heartbeat(ctx)
	if err != nil {
		return HeartbeatOutput{}, err
	}
	return HeartbeatOutput{Team: r.Team, Agent: r.Agent, At: r.At}, nil
}
