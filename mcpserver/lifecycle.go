package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentmsg/agentmsg/lifecycle"
)

// spawnLimit bounds spawn_agent: a session made and its first process
// registered.
const spawnLimit = 30 * time.Second

// SpawnInput is spawn_agent's input.
type SpawnInput struct {
	Name     string   `json:"name" jsonschema:"the agent's name, such as ana; ralph-<id> for a team-less agent"`
	Team     string   `json:"team,omitempty" jsonschema:"its team: yours when empty, or any other"`
	Instance string   `json:"instance,omitempty" jsonschema:"an instance of name: session agent-TEAM-NAME-INSTANCE"`
	Command  []string `json:"command" jsonschema:"the program and its arguments, word for word: no shell reads them (give [sh, -c, LINE] for one)"`
	Cwd      string   `json:"cwd,omitempty" jsonschema:"its working directory (default: this server's)"`
	Agent    string   `json:"agent,omitempty" jsonschema:"the agent CLI it runs (claude, codex, gemini, qwen, aider, ...), for the registry"`
	Env      []string `json:"env,omitempty" jsonschema:"extra environment, KEY=VALUE each"`
}

// SpawnOutput is the agent started.
type SpawnOutput struct {
	Team    string `json:"team"`
	Agent   string `json:"agent"`
	Session string `json:"session"`
	Socket  string `json:"socket" jsonschema:"the tmux server it runs on"`
	Pane    string `json:"pane"`
	PID     int    `json:"pid"`
}

func (s *server) spawnAgent(ctx context.Context, in SpawnInput) (SpawnOutput, error) {
	team, err := s.teamOf(in.Team)
	if err != nil {
		return SpawnOutput{}, err
	}
	res, err := s.deps.Spawn(ctx, lifecycle.SpawnRequest{Team: team, Name: in.Name, Instance: in.Instance,
		Command: in.Command, Dir: in.Cwd, Agent: in.Agent, Env: in.Env})
	switch {
	case errors.Is(err, lifecycle.ErrNoCommand):
		return SpawnOutput{}, fmt.Errorf("command is empty: give the program to run and its arguments, such as [\"claude\"]")
	case errors.Is(err, lifecycle.ErrExists):
		return SpawnOutput{}, fmt.Errorf("%w (kill_agent it first, or give another instance)", err)
	case err != nil:
		return SpawnOutput{}, fmt.Errorf("spawning %s of team %s: %w", in.Name, team, err)
	}
	t := res.Target
	return SpawnOutput{Team: t.Team, Agent: t.Agent(), Session: t.Session, Socket: res.Socket, Pane: res.Pane, PID: res.PID}, nil
}
