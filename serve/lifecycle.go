package serve

import (
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"time"

	"github.com/agentmsg/agentmsg/app"
	"github.com/agentmsg/agentmsg/lifecycle"
	"github.com/agentmsg/agentmsg/service"
	"github.com/agentmsg/agentmsg/target"
	"github.com/agentmsg/agentmsg/wire"
)

// The lifecycle: spawn, shutdown, kill, and the agents' states. Each
// answers the document of the command of the same name's --json.

// Waits a client asks for are bounded: the answer comes within a
// connection's life.
const (
	defaultShutdownWait = time.Minute // as shutdown --timeout
	maxWait             = 10 * time.Minute
)

// bounded checks a wait a request asks for: above 0 and at most maxWait.
func bounded(field string, d wire.Duration) error {
	if d <= 0 || time.Duration(d) > maxWait {
		return fmt.Errorf("%s %s: want a duration above 0 and at most %s", field, time.Duration(d), maxWait)
	}
	return nil
}

func (d *Daemon) checkSpawn(_ *http.Request, b *wire.SpawnBody) (Caller, lifecycle.SpawnRequest, error) {
	c := onServer(b.Server)
	name := b.Agent
	if b.Instance != "" {
		name += "-" + b.Instance
	}
	if _, err := target.New(b.Team, name); err != nil {
		return c, lifecycle.SpawnRequest{}, badRequest("", err)
	}
	if b.Dir != "" && !filepath.IsAbs(b.Dir) {
		return c, lifecycle.SpawnRequest{}, badRequest("dir", fmt.Errorf("dir %q: want an absolute path (the daemon's directory is not the client's)", b.Dir))
	}
	if b.Kind != "" {
		if err := d.checkKind(b.Kind); err != nil {
			return c, lifecycle.SpawnRequest{}, err
		}
	}
	return c, lifecycle.SpawnRequest{Team: b.Team, Name: b.Agent, Instance: b.Instance, Dir: b.Dir, Agent: b.Kind, Command: b.Command, Env: b.Env}, nil
}

// spawn is POST /v1/spawn: start an agent in a session of its own and
// register it with its team (spawn). A session of that name already
// there is 409.
func (d *Daemon) spawn(r *http.Request, svc *service.Service, req lifecycle.SpawnRequest) (answer, error) {
	res, err := svc.Spawn(d.requestContext(r), req)
	switch {
	case errors.Is(err, lifecycle.ErrExists):
		return answer{}, &refusal{status: http.StatusConflict, err: err}
	case err != nil:
		return answer{}, err
	}
	return answerOf(wire.ExitOK, wire.SpawnAnswer{Spawn: wire.NewSpawn(res, req)}), nil
}

// checkKind refuses an agent CLI no profile describes.
func (d *Daemon) checkKind(kind string) error {
	profiles, err := app.Profiles(d.backend.env.Config)
	if err != nil {
		return err
	}
	_, err = app.Lookup(profiles, kind)
	return err
}

// agentTarget is the agent b names, and its caller, in the agent's team.
func agentTarget(b wire.AgentBody) (Caller, target.Target, error) {
	c := asking(b.From, b.Team, b.Server)
	t, err := target.New(b.Team, b.Agent)
	if err != nil {
		return c, t, badRequest("", err)
	}
	return c, t, nil
}

func (*Daemon) checkShutdown(_ *http.Request, b *wire.ShutdownBody) (Caller, service.ShutdownRequest, error) {
	c, t, err := agentTarget(b.AgentBody)
	if err != nil {
		return c, service.ShutdownRequest{}, err
	}
	req := service.ShutdownRequest{Target: t, Reason: b.Reason}
	switch {
	case b.Timeout != 0 && !b.Wait:
		return c, req, badRequest("", errors.New("timeout goes with wait"))
	case b.Wait:
		if b.Timeout == 0 {
			b.Timeout = wire.Duration(defaultShutdownWait)
		}
		if err := bounded("timeout", b.Timeout); err != nil {
			return c, req, badRequest("", err)
		}
		req.Wait = time.Duration(b.Timeout)
	}
	return c, req, nil
}

// shutdown is POST /v1/shutdown: send an agent a shutdown-request and,
// with wait, wait for its answer in the caller's inbox (shutdown): exit 7
// when none comes in time, 9 when the agent defers.
func (d *Daemon) shutdown(r *http.Request, svc *service.Service, req service.ShutdownRequest) (answer, error) {
	res, err := svc.Shutdown(d.requestContext(r), req)
	if err != nil && !res.NotSent() {
		return answer{}, err
	}
	doc := wire.NewShutdown(res, wire.Plain)
	return answerOf(doc.ExitCode, doc), nil
}

func (*Daemon) checkKill(_ *http.Request, b *wire.KillBody) (Caller, service.KillRequest, error) {
	c, t, err := agentTarget(b.AgentBody)
	if err != nil {
		return c, service.KillRequest{}, err
	}
	if b.Grace != 0 {
		if err := bounded("grace", b.Grace); err != nil {
			return c, service.KillRequest{}, badRequest("", err)
		}
	}
	return c, service.KillRequest{Target: t, Grace: time.Duration(b.Grace)}, nil
}

// kill is POST /v1/kill: end an agent and every process it started, and
// remove its session (kill). Processes that survive are exit_code 1 with
// the document.
func (d *Daemon) kill(r *http.Request, svc *service.Service, req service.KillRequest) (answer, error) {
	res, err := svc.Kill(d.requestContext(r), req)
	if err != nil && !errors.Is(err, lifecycle.ErrSurvived) {
		return answer{}, err
	}
	doc := wire.NewKill(req.Target, res, err)
	return answerOf(doc.ExitCode, doc), nil
}

// checkStates is GET /v1/agents/status?team=&agent=&heartbeat_timeout=:
// the state of each agent, the registry joined with the sessions (agents).
func (*Daemon) checkStates(_ *http.Request, q *wire.AgentStatesQuery) (Caller, service.AgentsRequest, error) {
	return checkAgents(onServerQ(q.ServerQuery), service.AgentsRequest{Team: q.Team, Agent: q.Agent, HeartbeatTimeout: time.Duration(q.HeartbeatTimeout)})
}

// checkReap is POST /v1/agents/reap: remove the registry entries of dead
// agents, then list the agents (agents --reap). It kills nothing.
func (*Daemon) checkReap(_ *http.Request, b *wire.ReapBody) (Caller, service.AgentsRequest, error) {
	return checkAgents(onServer(b.Server), service.AgentsRequest{Team: b.Team, Reap: true, HeartbeatTimeout: time.Duration(b.HeartbeatTimeout)})
}

func checkAgents(c Caller, req service.AgentsRequest) (Caller, service.AgentsRequest, error) {
	if req.Team != "" && req.Team != target.RalphTeam {
		if err := target.ValidateTeam(req.Team); err != nil {
			return c, req, badRequest("", err)
		}
	}
	if req.HeartbeatTimeout == 0 {
		req.HeartbeatTimeout = lifecycle.DefaultHeartbeatTimeout
	}
	return c, req, nil
}

func (d *Daemon) states(r *http.Request, svc *service.Service, req service.AgentsRequest) (answer, error) {
	res, err := svc.Agents(d.requestContext(r), req)
	if err != nil {
		return answer{}, err
	}
	return answerOf(wire.ExitOK, wire.AgentStatesAnswer{AgentStates: wire.NewAgentStates(res, req.Reap)}), nil
}
