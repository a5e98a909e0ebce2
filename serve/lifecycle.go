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
func bounded(field string, d duration) error {
	if d <= 0 || time.Duration(d) > maxWait {
		return fmt.Errorf("%s %s: want a duration above 0 and at most %s", field, time.Duration(d), maxWait)
	}
	return nil
}

type spawnBody struct {
	Team     string   `json:"team"`
	Agent    string   `json:"agent"`
	Instance string   `json:"instance,omitempty"`
	Dir      string   `json:"dir,omitempty"`  // absolute; "": the tmux server's choice
	Kind     string   `json:"kind,omitempty"` // the agent CLI (spawn --agent), for the registry
	Command  []string `json:"command"`
	Env      []string `json:"env,omitempty"`
	server
}

// spawn is POST /v1/spawn: start an agent in a session of its own and
// register it with its team (spawn). A session of that name already
// there is 409.
func (d *Daemon) spawn(w http.ResponseWriter, r *http.Request) {
	var b spawnBody
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
		fail(w, http.StatusBadRequest, fmt.Errorf("dir %q: want an absolute path (the daemon's directory is not the client's)", b.Dir))
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
	respondCoded(w, wire.NewSpawn(res, req), wire.ExitOK, nil)
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

// agentBody names one agent, and the caller that acts on it.
type agentBody struct {
	Team  string `json:"team"`
	Agent string `json:"agent"`
	From  string `json:"from,omitempty"`
	server
}

// target is the agent the body names, or false after a 400 answer.
func (b agentBody) target(w http.ResponseWriter) (target.Target, bool) {
	t, err := target.New(b.Team, b.Agent)
	if err != nil {
		fail(w, http.StatusBadRequest, err)
		return target.Target{}, false
	}
	return t, true
}

// caller is the body's caller, in the agent's team.
func (b agentBody) caller() Caller {
	return Caller{From: b.From, Team: b.Team, Socket: b.Socket, SocketName: b.SocketName}
}

type shutdownBody struct {
	agentBody
	Reason  string   `json:"reason,omitempty"`
	Wait    bool     `json:"wait,omitempty"`
	Timeout duration `json:"timeout,omitempty"` // with wait; 1m by default
}

// shutdown is POST /v1/shutdown: send an agent a shutdown-request and,
// with wait, wait for its answer in the caller's inbox (shutdown): exit 7
// when none comes in time, 9 when the agent defers.
func (d *Daemon) shutdown(w http.ResponseWriter, r *http.Request) {
	var b shutdownBody
	if !decode(w, r, &b) {
		return
	}
	t, ok := b.target(w)
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
			b.Timeout = duration(defaultShutdownWait)
		}
		if err := bounded("timeout", b.Timeout); err != nil {
			fail(w, http.StatusBadRequest, err)
			return
		}
		req.Wait = time.Duration(b.Timeout)
	}
	svc, ok := d.serviceFor(w, b.caller())
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

type killBody struct {
	agentBody
	Grace duration `json:"grace,omitempty"` // SIGTERM to SIGKILL; 5s by default
}

// kill is POST /v1/kill: end an agent and every process it started, and
// remove its session (kill). Processes that survive are exit_code 1 with
// the document.
func (d *Daemon) kill(w http.ResponseWriter, r *http.Request) {
	var b killBody
	if !decode(w, r, &b) {
		return
	}
	t, ok := b.target(w)
	if !ok {
		return
	}
	if b.Grace != 0 {
		if err := bounded("grace", b.Grace); err != nil {
			fail(w, http.StatusBadRequest, err)
			return
		}
	}
	svc, ok := d.serviceFor(w, b.caller())
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
	q := r.URL.Query()
	var hb duration
	if s := q.Get("heartbeat_timeout"); s != "" {
		if err := hb.parse(s); err != nil {
			fail(w, http.StatusBadRequest, fmt.Errorf("heartbeat_timeout: %w", err))
			return
		}
	}
	d.states(w, r, service.AgentsRequest{Team: q.Get("team"), Agent: q.Get("agent"), HeartbeatTimeout: time.Duration(hb)},
		Caller{Socket: q.Get("socket"), SocketName: q.Get("socket_name")})
}

type reapBody struct {
	Team             string   `json:"team,omitempty"` // "": every team
	HeartbeatTimeout duration `json:"heartbeat_timeout,omitempty"`
	server
}

// reap is POST /v1/agents/reap: remove the registry entries of dead
// agents, then list the agents (agents --reap). It kills nothing.
func (d *Daemon) reap(w http.ResponseWriter, r *http.Request) {
	var b reapBody
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
	respondCoded(w, wire.NewAgentStates(res, req.Reap), wire.ExitOK, nil)
}
