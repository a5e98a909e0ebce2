package service

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/lifecycle"
	"github.com/agentmsg/agentmsg/target"
)

// ErrNoLifecycle: this Service was built without a lifecycle (spawn,
// shutdown, kill, status are not available).
var ErrNoLifecycle = errors.New("agent lifecycle (spawn, shutdown, kill, status) is not available")

// lifecycle is the Service's lifecycle, or ErrNoLifecycle.
func (s *Service) lifecycle() (Lifecycle, error) {
	if s.Lifecycle == nil {
		return nil, ErrNoLifecycle
	}
	return s.Lifecycle()
}

// isCaller reports whether t is the caller's own inbox.
func (s *Service) isCaller(t target.Target) bool {
	team, agent := target.Inbox(t)
	return s.Name != "" && agent == s.Name && team == s.Team
}

// ShutdownRequest asks Target to finish up and stop.
type ShutdownRequest struct {
	Target target.Target
	Reason string        // the request's text ("": lifecycle.DefaultShutdownReason)
	Wait   time.Duration // > 0: wait this long for the agent's shutdown-response
}

// ShutdownResult is what came of a shutdown-request sent by From.
type ShutdownResult struct {
	lifecycle.ShutdownResult
	Target target.Target
	From   string
	Waited bool // the request asked to wait for the answer
}

// NotSent: the request itself did not reach the agent (Sent's verdict
// says why); nothing was waited for.
func (r ShutdownResult) NotSent() bool { return r.Sent.Verdict != "" && !r.Sent.OK() }

// TimedOut: the request arrived, was waited on, and no answer came.
func (r ShutdownResult) TimedOut() bool { return r.Waited && r.Sent.OK() && !r.Answered }

// Shutdown sends req.Target a shutdown-request from the caller, recorded
// in its inbox and typed when it is ready, and with req.Wait waits for its
// shutdown-response in the caller's inbox of the target's team. It stops
// nothing itself. When the request was not delivered the result says how
// (NotSent) and the error is the delivery's.
func (s *Service) Shutdown(ctx context.Context, req ShutdownRequest) (ShutdownResult, error) {
	out := ShutdownResult{Target: req.Target, From: s.Name, Waited: req.Wait > 0}
	lc, err := s.lifecycle()
	if err != nil {
		return out, err
	}
	out.ShutdownResult, err = lc.Shutdown(ctx, s.Name, req.Target, req.Reason, max(req.Wait, 0))
	return out, err
}

// KillRequest ends Target now.
type KillRequest struct {
	Target target.Target
	Grace  time.Duration // SIGTERM to SIGKILL (0: lifecycle.DefaultGrace)
}

// Kill ends req.Target and every process it started, removes its session
// and its registry entry. It refuses the caller's own agent
// (dispatch.ErrSelf). Processes that survive are lifecycle.ErrSurvived,
// with the result filled in.
func (s *Service) Kill(ctx context.Context, req KillRequest) (lifecycle.KillResult, error) {
	if s.isCaller(req.Target) {
		return lifecycle.KillResult{Target: req.Target}, fmt.Errorf("%w (%s); kill another agent", dispatch.ErrSelf, req.Target)
	}
	lc, err := s.lifecycle()
	if err != nil {
		return lifecycle.KillResult{Target: req.Target}, err
	}
	grace := req.Grace
	if grace <= 0 {
		grace = lifecycle.DefaultGrace
	}
	return lc.Kill(ctx, req.Target, grace)
}

// spawner is what Spawn needs of a lifecycle beyond Lifecycle:
// *lifecycle.Manager has it.
type spawner interface {
	Spawn(ctx context.Context, r lifecycle.SpawnRequest) (target.Target, error)
}

// ErrNoSpawn: the lifecycle cannot start agents.
var ErrNoSpawn = errors.New("this agent lifecycle cannot start agents")

// SpawnResult is the agent started: its target, the server it runs on,
// and its pane and first process as registered.
type SpawnResult struct {
	Target target.Target
	Socket string
	Pane   string
	PID    int
}

// Spawn starts req's agent in a session of its own and registers it with
// its team (lifecycle.ErrExists when that session is there already,
// lifecycle.ErrNoCommand without a command).
func (s *Service) Spawn(ctx context.Context, req lifecycle.SpawnRequest) (SpawnResult, error) {
	lc, err := s.lifecycle()
	if err != nil {
		return SpawnResult{}, err
	}
	sp, ok := lc.(spawner)
	if !ok {
		return SpawnResult{}, ErrNoSpawn
	}
	t, err := sp.Spawn(ctx, req)
	if err != nil {
		return SpawnResult{Target: t}, err
	}
	out := SpawnResult{Target: t}
	if rec, err := s.Store.RegisteredAgent(target.Inbox(t)); err == nil {
		out.Socket, out.Pane, out.PID = rec.Socket, rec.Pane, rec.PID
	}
	return out, nil
}

// HeartbeatResult is the caller's heartbeat as recorded.
type HeartbeatResult struct {
	Team, Agent string
	At          time.Time
}

// Heartbeat records in the caller's team's registry that it is alive now
// (lifecycle.ErrNoTeam for a caller with no team that is not a team-less
// ralph-<id>). It needs the mailbox only, never the tmux server.
func (s *Service) Heartbeat(context.Context) (HeartbeatResult, error) {
	at := s.clockUTC()
	m := &lifecycle.Manager{Store: s.Store, Now: func() time.Time { return at }}
	return HeartbeatResult{Team: s.Team, Agent: s.Name, At: at}, m.Heartbeat(s.Team, s.Name)
}
