// Package mcpserver serves agentmsg's messaging as MCP tools, for agents
// that talk to each other through tool calls rather than a shell: an agent
// mode (check, read, send, reply, wait, request, claim, list, board,
// status, heartbeat), in the caller's own team, and an orchestrator mode
// that may name any team and adds broadcast, spawn, shutdown, kill,
// status, task assignment, workflows, deliver, the message log, events
// and team cleaning: every operation of package service (the root
// package's tests hold both front ends to that). It only translates: each
// tool turns its arguments into a call of a service.Service method and the
// result into its output; the stdio transport is here, flags are cmd's.
package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentmsg/agentmsg/service"
	"github.com/agentmsg/agentmsg/target"
)

// Deps are what the tools need: the caller and the parts that serve it
// (the service the tools call).
type Deps = service.Service

// Tool time limits. A tool that runs past its limit ends with a tool
// error saying so; wait-like tools add their own wait to these.
const (
	mailboxLimit = 15 * time.Second // store-only tools
	deliverLimit = 2 * time.Minute  // tools that type into a pane (ready timeout, confirmation)
	// Wait limits for wait_for_message.
	DefaultWait = 30 * time.Second
	MaxWait     = 120 * time.Second
	// Workflow limits for create_workflow.
	DefaultWorkflowTimeout = 10 * time.Minute
	MaxWorkflowTimeout     = time.Hour
)

// MaxOpenWaits bounds the wait_for_message calls open at once on one
// server (one caller): an agent needs a few; a client that opens
// thousands is told so rather than served. A wait costs a sleeping
// goroutine while it is open (mailbox.Store.Wait shares one poller per
// inbox), so the bound is about memory, not CPU.
const MaxOpenWaits = 64

// server is one MCP server's state: its deps (whose dispatcher the
// composition root makes once, app.Wiring, and every tool shares),
// whether it serves a lead (who may act on any team), and the slots of
// its open waits.
type server struct {
	deps         Deps
	orchestrator bool
	waits        chan struct{}
}

// New builds the MCP server: the agent tools, and with orchestrator the
// lead's tools too.
func New(deps Deps, orchestrator bool) *mcp.Server {
	return newServer(deps, orchestrator, MaxOpenWaits)
}

// newServer is New with at most maxWaits waits open at once.
func newServer(deps Deps, orchestrator bool, maxWaits int) *mcp.Server {
	if deps.Now == nil {
		deps.Now = time.Now
	}
	version := deps.Version
	if version == "" {
		version = "dev"
	}
	s := &server{deps: deps, orchestrator: orchestrator, waits: make(chan struct{}, maxWaits)}
	instructions := agentInstructions
	if orchestrator {
		instructions += orchestratorInstructions
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "agentmsg", Version: version},
		&mcp.ServerOptions{Instructions: fmt.Sprintf(instructions, deps.Name, deps.Team)})
	s.addAgentTools(srv)
	if orchestrator {
		s.addOrchestratorTools(srv)
	}
	return srv
}

const agentInstructions = `agentmsg: messages between the AI agents of a team, each in its own tmux session.
You are %q in team %q. Read new messages with check_messages (or block with
wait_for_message); a long one typed into your pane as "... (full text: agentmsg
read ID)" is read whole with read_message. Answer a message with reply_message
(a shutdown-request: type shutdown-response, metadata accept=true or false; a
plan: type plan-approval, metadata approve=true or false; a message's "answer"
field says which), or write with send_message. Open requests (request_task) go
to the whole team; claim_request takes one, and exactly one claimant gets it;
list_requests shows them. list_agents shows who is there, get_board what each
is doing; set_status says what you do, heartbeat that you are alive.`

const orchestratorInstructions = `
As the lead you may name any team (the team field) and you also have broadcast,
assign_task (a task whose prompt starts with the agent's unread messages),
create_workflow (steps with depends_on, run in parallel where they can),
spawn_agent, shutdown_agent, kill_agent, get_agent_status, deliver_messages
(type what waits for agents that were busy), message_log and get_events (what
became of each message), and clean_team.`

// addTool registers a typed tool whose handler runs within limit(in): past
// it, the call ends with a tool error naming the limit. A handler's error
// becomes a tool error (IsError) with its message.
func addTool[In, Out any](srv *mcp.Server, name, desc string, limit func(In) time.Duration, h func(context.Context, In) (Out, error)) {
	mcp.AddTool(srv, &mcp.Tool{Name: name, Description: desc},
		func(ctx context.Context, _ *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
			d := limit(in)
			tctx, cancel := context.WithTimeout(ctx, d)
			defer cancel()
			out, err := h(tctx, in)
			if err != nil {
				var zero Out
				if ctx.Err() == nil && errors.Is(tctx.Err(), context.DeadlineExceeded) {
					err = fmt.Errorf("%s did not finish within its time limit of %s: %w", name, d, err)
				}
				return nil, zero, err
			}
			return nil, out, nil
		})
}

func fixed[In any](d time.Duration) func(In) time.Duration {
	return func(In) time.Duration { return d }
}

// team is the caller's team, or an error saying how to give one.
func (s *server) team() (string, error) {
	if s.deps.Team == "" {
		return "", errors.New("agentmsg does not know your team: start the server with AGENTMSG_TEAM set (or --team, or inside an agent-<team>-<name> tmux session)")
	}
	return s.deps.Team, nil
}

// teamOf is the team a tool acts on: named ("" is the caller's own). Only
// an orchestrator acts on another team; an agent stays in its own.
func (s *server) teamOf(named string) (string, error) {
	if named == "" || named == s.deps.Team {
		return s.team()
	}
	if !s.orchestrator {
		return "", fmt.Errorf("team %q: only an orchestrator (agentmsg mcp --orchestrator) acts on another team; you are in team %s", named, s.deps.Team)
	}
	if err := target.ValidateTeam(named); err != nil {
		return "", fmt.Errorf("team: %w", err)
	}
	return named, nil
}

// other is team as a service request names it: "" for the caller's own
// (which need not exist yet), else the team, which the service checks.
func (s *server) other(team string) string {
	if team == s.deps.Team {
		return ""
	}
	return team
}

// in is the service acting for the caller in team: the same caller, its
// inbox and reports in that team (see teamOf).
func (s *server) in(team string) *service.Service {
	svc := s.deps
	svc.Team = team
	return &svc
}

// agentTarget resolves an agent name of team ("" the caller's; see teamOf).
func (s *server) agentTarget(team, field, name string) (target.Target, error) {
	team, err := s.teamOf(team)
	if err != nil {
		return target.Target{}, err
	}
	if name == "" {
		return target.Target{}, fmt.Errorf("%s is empty: give an agent name of team %s, such as \"ana\" or \"ana-2\"", field, team)
	}
	t, err := target.New(team, name)
	if err != nil {
		return target.Target{}, fmt.Errorf("%s: %w", field, err)
	}
	return t, nil
}

// seconds turns a tool's seconds field into a duration: def when 0, at
// most limit (every field has one: a float beyond what a Duration holds
// would wrap to a negative deadline), at least 1ns when positive (0 means
// the default, never "a tiny time"). limit must be positive.
func seconds(v float64, def, limit time.Duration) (time.Duration, error) {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return 0, fmt.Errorf("a time in seconds must be a finite number (got %g)", v)
	case v < 0:
		return 0, fmt.Errorf("a time in seconds must not be negative (got %g)", v)
	case v == 0:
		return def, nil
	case v >= limit.Seconds(): // compared as floats: nothing is converted that could overflow
		return limit, nil
	}
	return max(time.Duration(v*float64(time.Second)), time.Nanosecond), nil
}

// Serve serves the tools to one caller on in and out, one JSON-RPC message
// a line, until in ends (the requests read by then are answered) or ctx
// does; either is the normal end. main hands it to the CLI (cmd.MCPServer).
func Serve(ctx context.Context, svc *service.Service, orchestrator bool, in io.Reader, out io.Writer) error {
	err := New(*svc, orchestrator).Run(ctx, &Stdio{In: in, Out: out})
	if err == nil || errors.Is(err, io.EOF) || ctx.Err() != nil {
		return nil
	}
	return err
}
