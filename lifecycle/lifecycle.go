// Package lifecycle starts, stops and watches agents: it spawns an agent
// in its own tmux session and registers it with its team, asks it to shut
// down (a shutdown-request message it answers with a shutdown-response),
// kills it without leaving a process behind, and tells which agents are
// running, idle, waiting or dead.
//
// The registry is part of the mailbox tree: one file per agent,
// <root>/teams/<team>/agents/<name>.json (mailbox.AgentRecord), written
// atomically. Team-less ralph agents are registered under team "ralph",
// like their inboxes. It prints nothing; cmd and the MCP server do.
package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentmsg/agentmsg/courier"
	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/identity"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
	"github.com/agentmsg/agentmsg/target"
	"github.com/agentmsg/agentmsg/tmux"
)

// Defaults.
const (
	DefaultGrace            = 5 * time.Second  // Kill: SIGTERM to SIGKILL
	DefaultHeartbeatTimeout = 30 * time.Second // Status: silence after which a heart-beating agent is dead
	// DefaultShutdownReason is the text of a shutdown-request given none.
	DefaultShutdownReason = "please finish your current step, then stop"
)

// killWait bounds the wait for processes to vanish after SIGKILL.
const killWait = 3 * time.Second

// Errors. Missing agents and calls on oneself wrap dispatch's errors, so
// callers map them as they map a send's. None names a flag or a command:
// each front end words its own hints.
var (
	ErrExists    = errors.New("agent session already exists")
	ErrNoCommand = errors.New("no command to run")
	// ErrNoTeam: an agent that has a team (every one but a team-less
	// ralph-<id>) was named without it.
	ErrNoTeam = errors.New("which team? only a team-less ralph-<id> agent has none")
	// ErrSurvived: processes of a killed agent were still there at the end.
	ErrSurvived = errors.New("processes survived the kill")
)

// Manager starts, stops and watches the agents on one tmux server, with
// one mailbox.
type Manager struct {
	Tmux     tmux.Sessions // the server
	Dispatch *dispatch.Dispatcher
	// Courier sends shutdown-request messages: recorded in the inbox and
	// typed when the agent is ready.
	Courier *courier.Courier
	Store   *mailbox.Store
	Now     func() time.Time // nil: time.Now

	// HeartbeatTimeout: an agent that has heart-beaten at least once is
	// dead after this long without a heartbeat (0: DefaultHeartbeatTimeout).
	HeartbeatTimeout time.Duration

	// Tokens, when set, gives each agent Spawn starts a token of its own
	// for the daemon's MCP endpoint (IssueMCPToken): app sets it when the
	// daemon listens on TCP ([serve] tcp), where agent CLIs reach it.
	Tokens *identity.Tokens
	// Revoked, when set, is the token file Kill takes a killed session's
	// tokens from, whether or not Spawn issues them now (a token issued
	// while [serve] tcp was set outlives a change of the config).
	Revoked *identity.Tokens
}

func (m *Manager) now() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

// SpawnRequest says what to start.
type SpawnRequest struct {
	Team, Name, Instance string // agent-TEAM-NAME[-INSTANCE]; Name "ralph-<id>" (any Team) for a team-less agent
	Dir                  string // working directory ("" : the caller's)
	Agent                string // agent CLI kind, for the registry: claude, codex, ... ("" unknown)
	Command              []string
	Env                  []string // extra KEY=VALUE for the agent
}

// Spawn creates the detached session agent-TEAM-NAME[-INSTANCE] running
// r.Command and registers the agent with its team. tmux runs the command
// itself: never through a shell, so nothing in it is re-read (a
// one-word command is started through env(1) for the same reason; give
// "sh -c LINE" to get a shell). The agent's environment holds
// AGENTMSG_FROM (its name), AGENTMSG_TEAM, AGENTMSG_SOCKET (this server,
// so that agentmsg inside reaches it; tmux sets TMUX itself),
// AGENTMSG_HOME (this mailbox) and, with m.Tokens, AGENTMSG_MCP_TOKEN (its
// own token for the daemon's MCP endpoint), after r.Env, so that r.Env
// cannot change who the agent is. It fails with ErrExists when a session of exactly that
// name exists.
func (m *Manager) Spawn(ctx context.Context, r SpawnRequest) (target.Target, error) {
	name := r.Name
	if r.Instance != "" {
		name += "-" + r.Instance
	}
	t, err := target.New(r.Team, name)
	if err != nil {
		return target.Target{}, err
	}
	if len(r.Command) == 0 || r.Command[0] == "" {
		return t, fmt.Errorf("%w for %s", ErrNoCommand, t)
	}
	for _, kv := range r.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return t, fmt.Errorf("environment entry %q: want KEY=VALUE", kv)
		}
	}
	dir := r.Dir
	if dir != "" {
		if dir, err = filepath.Abs(dir); err != nil {
			return t, err
		}
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			return t, fmt.Errorf("working directory %s: not a directory", r.Dir)
		}
	}
	argv, err := resolveCommand(r.Command, dir)
	if err != nil {
		return t, err
	}
	socket := m.Tmux.Server().Socket
	if exists, err := m.Tmux.HasSession(ctx, t.Session); err != nil {
		return t, err
	} else if exists {
		return t, fmt.Errorf("%w: %s is already on %s", ErrExists, t.Session, socket)
	}
	team, agent := target.Inbox(t)
	env := append([]string{}, r.Env...)
	env = append(env,
		"AGENTMSG_FROM="+agent,
		"AGENTMSG_SOCKET="+socket,
		"AGENTMSG_SOCKET_NAME=", // empty is unset for agentmsg; a server-wide value would clash with the socket
		"AGENTMSG_HOME="+m.Store.Root,
	)
	if !t.IsRalph() {
		env = append(env, "AGENTMSG_TEAM="+t.Team)
	}
	token, err := m.issueToken(t, &env)
	if err != nil {
		return t, err
	}
	pane, pid, err := m.Tmux.NewSession(ctx, t.Session, dir, env, argv)
	if err != nil {
		m.dropToken(token) // no agent holds it
	}
	if errors.Is(err, tmux.ErrDuplicateSession) {
		return t, fmt.Errorf("%w: %s is already on %s", ErrExists, t.Session, socket)
	}
	if err != nil {
		return t, fmt.Errorf("starting %s: %w", t, err)
	}
	rec := mailbox.AgentRecord{
		Agent: agent, Session: t.Session, Socket: socket, Kind: r.Agent, Instance: t.Instance,
		Command: r.Command, Dir: dir, Pane: pane, PID: pid, Spawned: m.now(),
	}
	if err := m.Store.Register(team, rec); err != nil {
		// An agent nobody knows of is worse than none: take it down.
		_ = m.Tmux.KillSession(context.WithoutCancel(ctx), t.Session)
		m.dropToken(token)
		return t, fmt.Errorf("registering %s (the session was removed again): %w", t, err)
	}
	if token != "" {
		// The session's earlier spawns are gone (it did not exist), and
		// so is any use for their tokens. One left valid is no worse
		// than before this spawn.
		_, _ = m.Tokens.RevokeSession(socket, t.Session, token)
	}
	return t, nil
}

// issueToken adds the agent's own token for the daemon's MCP endpoint to
// env, when the manager gives one; token is "" when it does not.
func (m *Manager) issueToken(t target.Target, env *[]string) (token string, err error) {
	if m.Tokens == nil {
		return "", nil
	}
	token, kv, err := IssueMCPToken(m.Tokens, m.Tmux.Server().Socket, t)
	if err != nil {
		return "", fmt.Errorf("making %s's token for the daemon's MCP endpoint: %w", t, err)
	}
	*env = append(*env, kv)
	return token, nil
}

// dropToken revokes a token issued for a spawn that started no agent.
func (m *Manager) dropToken(token string) {
	if token != "" {
		_, _, _ = m.Tokens.Forget(token)
	}
}

// resolveCommand checks that the program exists (on $PATH, or relative to
// dir) and returns the argv for tmux: with one word, tmux would hand it to
// a shell, so env(1) goes in front.
func resolveCommand(cmd []string, dir string) ([]string, error) {
	prog := cmd[0]
	look := prog
	if strings.Contains(prog, "/") && !filepath.IsAbs(prog) && dir != "" {
		look = filepath.Join(dir, prog)
	}
	if _, err := exec.LookPath(look); err != nil {
		return nil, fmt.Errorf("command %q: %w", prog, errors.Unwrap(err))
	}
	if len(cmd) > 1 {
		return cmd, nil
	}
	env, err := exec.LookPath("env")
	if err != nil {
		return nil, fmt.Errorf("env(1) is needed to start a one-word command: %w", err)
	}
	return []string{env, prog}, nil
}

// ShutdownResult is what came of a shutdown-request.
type ShutdownResult struct {
	RequestID message.ID
	// Sent is the courier's outcome for the request: submitted, or
	// deferred (kept in the inbox and typed when the agent is ready).
	Sent courier.Result
	// Answered: a shutdown-response came within the wait. Accepted is its
	// accept=true; false with Answered means the agent deferred.
	Answered, Accepted bool
	Reason             string            // the response's text
	Response           *mailbox.Envelope // the response, when Answered
}

// Shutdown sends t a shutdown-request from from (an inbox name, such as
// the caller's Identity.Name) with reason as its text (empty:
// DefaultShutdownReason). It is recorded in t's inbox and typed when t is
// ready. With wait > 0 it then waits that long for a shutdown-response
// whose reply_to is the request's id in from's inbox in t's team (the
// agent answers with agentmsg reply --type shutdown-response --meta
// accept=true|false ID). No answer in time is no error: Answered is
// false. A cancelled ctx is an error.
func (m *Manager) Shutdown(ctx context.Context, from string, t target.Target, reason string, wait time.Duration) (ShutdownResult, error) {
	team, agent := target.Inbox(t)
	if _, err := m.Store.Box(team, from); err != nil {
		return ShutdownResult{}, fmt.Errorf("sender %q: %w", from, err)
	}
	sender, err := message.Sender(from)
	if err != nil {
		return ShutdownResult{}, err
	}
	if strings.TrimSpace(reason) == "" {
		reason = DefaultShutdownReason
	}
	msg, err := m.Dispatch.NewMessage(sender, reason)
	if err != nil {
		return ShutdownResult{}, err
	}
	res := ShutdownResult{RequestID: msg.ID}
	env := mailbox.Envelope{ID: msg.ID, From: from, Type: mailbox.TypeShutdownRequest, Content: msg.Text}
	res.Sent = m.Courier.Send(ctx, t, env, courier.Mode{Queue: true})
	if !res.Sent.OK() {
		err := res.Sent.Err
		if err == nil {
			err = fmt.Errorf("the shutdown-request to %s was not delivered (%s)", t, res.Sent.Verdict)
		}
		return res, err
	}
	if wait <= 0 {
		return res, nil
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	// Only the agent asked may answer: another agent of the team could
	// otherwise accept its shutdown for it.
	got, err := m.Store.Wait(wctx, team, from, func(e mailbox.Envelope) bool {
		return e.Type == mailbox.TypeShutdownResponse && e.ReplyTo == msg.ID && e.From == agent
	}, mailbox.Position{})
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return res, ctx.Err()
	case errors.Is(err, context.DeadlineExceeded):
		return res, nil
	default:
		return res, err
	}
	res.Answered = true
	res.Accepted = got.Metadata["accept"] == "true"
	res.Reason = got.Content
	res.Response = &got
	return res, nil
}

// Heartbeat records that agent name of team is alive now. From then on
// the agent counts as one that heart-beats: Status calls it dead after
// HeartbeatTimeout without another. An agent that was not spawned by
// Spawn gets an entry of its own. Team "" with a name "ralph-<id>" is a
// team-less agent.
func (m *Manager) Heartbeat(team, name string) error {
	t, err := target.New(team, name)
	switch {
	case err != nil && team == "":
		return fmt.Errorf("heartbeat of %s: %w", name, ErrNoTeam)
	case err != nil:
		return fmt.Errorf("heartbeat of %s: %w", name, err)
	}
	inboxTeam, agent := target.Inbox(t)
	now := m.now()
	return m.Store.UpdateAgent(inboxTeam, agent, func(r *mailbox.AgentRecord) error {
		r.Heartbeat = now
		return nil
	})
}
