package service

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/target"
	"github.com/agentmsg/agentmsg/tmux"
)

// AgentScreen is one agent session on the server and its screen now, read
// the way a delivery reads it (with the agent's own profile).
type AgentScreen struct {
	// Team and Agent name its inbox (target.Inbox): team-less agents
	// are in team ralph.
	Team, Agent   string
	Session, Pane string
	Command       string // the pane's foreground command: the agent's CLI
	Profile       string // the profile its screen was read as
	// State is a delivery state (ready, busy, dialog, draft, unknown), or
	// Exited.
	State, Detail string
}

// Exited is an AgentScreen's State when the program in its pane has
// ended, or a shell prompt shows where the agent was.
const Exited = "exited"

// ScreensResult is every agent session on the server at Socket.
type ScreensResult struct {
	Socket   string
	Agents   []AgentScreen // by session name
	NoServer bool          // no tmux server runs there: no agents
}

// Screens reads the screen of every agent of every team on the server,
// in parallel (a look each, as a delivery's first).
func (s *Service) Screens(ctx context.Context) (ScreensResult, error) {
	var out ScreensResult
	d, err := s.agentsDispatcher()
	if err != nil {
		return out, err
	}
	out.Socket = d.Tmux.Server().Socket
	found, err := d.Agents(ctx, "", dispatch.Call{})
	if errors.Is(err, tmux.ErrNoServer) {
		out.NoServer = true
		return out, nil
	}
	if err != nil {
		return out, fmt.Errorf("reading the agents' screens: %w", err)
	}
	out.Agents = make([]AgentScreen, len(found))
	for i, f := range found {
		team, agent := target.Inbox(f.Target)
		a := AgentScreen{Team: team, Agent: agent, Session: f.Target.Session, Pane: f.Pane.ID, Command: f.Pane.Command,
			Profile: f.Profile, State: string(f.State), Detail: f.Detail}
		if f.Shell || f.Pane.Dead {
			a.State = Exited
		}
		out.Agents[i] = a
	}
	return out, nil
}

// OpenResult is how a person gets to an agent's pane.
type OpenResult struct {
	Session, Pane string
	// Switched: the tmux client the caller runs in shows the pane now.
	Switched bool
	// SwitchErr says why it could not, when the caller runs inside the
	// agents' server and it was tried.
	SwitchErr error
	// Command watches the pane from any terminal: a read-only attach.
	Command string
}

// paneSwitcher is a tmux client that can point the caller's own client at
// a pane: *tmux.Exec.
type paneSwitcher interface {
	SwitchClient(ctx context.Context, pane string) error
}

// OpenPane shows a person the pane of team/agent: when the caller runs
// inside the agents' tmux server, its client switches to that pane;
// otherwise (or when that fails) Command says how to watch it.
func (s *Service) OpenPane(ctx context.Context, team, agent string) (OpenResult, error) {
	var out OpenResult
	t, ok := target.InboxOwner(team, agent)
	if !ok {
		return out, fmt.Errorf("%w: %s/%s is no agent's inbox", dispatch.ErrTargetNotFound, team, agent)
	}
	d, err := s.agentsDispatcher()
	if err != nil {
		return out, err
	}
	r, err := d.Resolve(ctx, t, dispatch.Call{IntoSelf: true})
	if err != nil {
		return out, err
	}
	out.Session, out.Pane = t.Session, r.Pane.ID
	out.Command = tmux.WatchCommand(d.Tmux.Server(), t.Session)
	if d.Self == "" {
		return out, nil // not inside this server: no client of ours to switch
	}
	sw, ok := d.Tmux.Pinned(r.Pane).(paneSwitcher)
	if !ok {
		return out, nil
	}
	if out.SwitchErr = sw.SwitchClient(ctx, r.Pane.ID); out.SwitchErr == nil {
		out.Switched = true
	}
	return out, nil
}
