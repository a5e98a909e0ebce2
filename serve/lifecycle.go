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

// spawn is POST /v1/spawn: start an agent in a session of its own and
// register it with its team (spawn). A session of that name already
// there is 409.
func (d *Daemon) spawn(w http.ResponseWriter, r *http.Request) {
	var b wire.SpawnBody
	if !decode(w, r, &b) {
		return
	}
	name := b.Agent
	if b.Instance != "" {
		name += "-" + b.Instance
	}
	if _, err := target.New(b.Team, name); err != nil {
		fail(w, http.StatusBadRequest, err)
		return
	}
	if b.Dir != "" && !filepath.IsAbs(b.Dir) {
		failCode(w, http.StatusBadRequest, "", "dir", fmt.Errorf("dir %q: want an absolute path (the daemon's directory is not the client's)", b.Dir))
		return
	}
	if b.Kind != "" {
		if err := d.checkKind(b.Kind); err != nil {
			fail(w, 0, err)
			return
		}
	}
	svc, ok := d.serviceFor(w, Caller{Socket: b.Socket, SocketName: b.SocketName})
	if !ok {
		return
	}
	req := lifecycle.SpawnRequest{Team: b.Team, Name: b.Agent, Instance: b.Instance, Dir: b.Dir, Agent: b.Kind, Command: b.Command, Env: b.Env}
	res, err := svc.Spawn(d.requestContext(r), req)
	switch {
	case errors.Is(err, lifecycle.ErrExists):
		fail(w, http.StatusConflict, err)
		return
	case err != nil:
		fail(w, 0, err)
		return
	}
	respond(w, wire.ExitOK, wire.SpawnAnswer{Spawn: wire.NewSpawn(res, req)})
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

// agentTarget is the agent b names, or false after a 400 answer.
func agentTarget(w http.ResponseWriter, b wire.AgentBody) (target.Target, bool) {
	t, err := target.New(b.Team, b.Agent)
	if err != nil {
		fail(w, http.StatusBadRequest, err)
		return target.Target{}, false
	}
	return t, true
}

// agentCaller is b's caller, in the agent's team.
func agentCaller(b wire.AgentBody) Caller {
	return Caller{From: b.From, Team: b.Team, Socket: b.Socket, SocketName: b.SocketName}
}

// shutdown is POST /v1/shutdown: send an agent a shutdown-request and,
// with wait, wait for its answer in the caller's inbox (shutdown): exit 7
// when none comes in time, 9 when the agent defers.
func (d *Daemon) shutdown(w http.ResponseWriter, r *http.Request) {
	var b wire.ShutdownBody
	if !decode(w, r, &b) {
		return
	}
	t, ok := agentTarget(w, b.AgentBody)
	if !ok {
		return
	}
	req := service.ShutdownRequest{Target: t, Reason: b.Reason}
	switch {
	case b.Timeout != 0 && !b.Wait:
		fail(w, http.StatusBadRequest, errors.New("timeout goes with wait"))
		return
	case b.Wait:
		if b.Timeout == 0 {
			b.Timeout = wire.Duration(defaultShutdownWait)
		}
		if err := bounded("timeout", b.Timeout); err != nil {
			fail(w, http.StatusBadRequest, err)
			return
		}
		req.Wait = time.Duration(b.Timeout)
	}
	svc, ok := d.serviceFor(w, agentCaller(b.AgentBody))
	if !ok {
		return
	}
	res, err := svc.Shutdown(d.requestContext(r), req)
	if err != nil && !res.NotSent() {
		fail(w, 0, err)
		return
	}
	doc := wire.NewShutdown(res, wire.Plain)
	respond(w, doc.ExitCode, doc)
}

// kill is POST /v1/kill: end an agent and every process it started, and
// remove its session (kill). Processes that survive are exit_code 1 with
// the document.
func (d *Daemon) kill(w http.ResponseWriter, r *http.Request) {
	var b wire.KillBody
	if !decode(w, r, &b) {
		return
	}
	t, ok := agentTarget(w, b.AgentBody)
	if !ok {
		return
	}
	if b.Grace != 0 {
		if err := bounded("grace", b.Grace); err != nil {
			fail(w, http.StatusBadRequest, err)
			return
		}
	}
	svc, ok := d.serviceFor(w, agentCaller(b.AgentBody))
	if !ok {
		return
	}
	res, err := svc.Kill(d.requestContext(r), service.KillRequest{Target: t, Grace: time.Duration(b.Grace)})
	if err != nil && !errors.Is(err, lifecycle.ErrSurvived) {
		fail(w, 0, err)
		return
	}
	doc := wire.NewKill(t, res, err)
	respond(w, doc.ExitCode, doc)
}

// agentStates is GET /v1/agents/status?team=&agent=&heartbeat_timeout=:
// the state of each agent, the registry joined with the sessions (agents).
func (d *Daemon) agentStates(w http.ResponseWriter, r *http.Request) {
	var q wire.AgentStatesQuery
	if !decodeQuery(w, r, &q) {
		return
	}
	d.states(w, r, service.AgentsRequest{Team: q.Team, Agent: q.Agent, HeartbeatTimeout: time.Duration(q.HeartbeatTimeout)},
		Caller{Socket: q.Socket, SocketName: q.SocketName})
}

// reap is POST /v1/agents/reap: remove the registry entries of dead
// agents, then list the agents (agents --reap). It kills nothing.
func (d *Daemon) reap(w http.ResponseWriter, r *http.Request) {
	var b wire.ReapBody
	if decode(w, r, &b) {
		d.states(w, r, service.AgentsRequest{Team: b.Team, Reap: true, HeartbeatTimeout: time.Duration(b.HeartbeatTimeout)},
			Caller{Socket: b.Socket, SocketName: b.SocketName})
	}
}

func (d *Daemon) states(w http.ResponseWriter, r *http.Request, req service.AgentsRequest, c Caller) {
	if req.Team != "" && req.Team != target.RalphTeam {
		if err := target.ValidateTeam(req.Team); err != nil {
			fail(w, http.StatusBadRequest, err)
			return
		}
	}
	if req.HeartbeatTimeout == 0 {
		req.HeartbeatTimeout = lifecycle.DefaultHeartbeatTimeout
	}
	svc, ok := d.serviceFor(w, c)
	if !ok {
		return
	}
	res, err := svc.Agents(d.requestContext(r), req)
	if err != nil {
		fail(w, 0, err)
		return
	}
	respond(w, wire.ExitOK, wire.AgentStatesAnswer{AgentStates: wire.NewAgentStates(res, req.Reap)})
}
