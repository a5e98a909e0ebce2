// Package service is every operation a user can ask of agentmsg, once, for
// one caller: the front ends (the CLI in cmd, the MCP server in mcpserver)
// translate their input into a call here and its result into their output,
// so that they can differ only in wording. Neither front end imports the
// other; main joins them.
//
// A Service is built once per process; what varies per call is an argument.
// Operations return domain results and typed errors, never text for a
// person: the front ends word them.
package service

import (
	"context"
	"time"

	"github.com/agentmsg/agentmsg/courier"
	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/lifecycle"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/target"
)

// Service is one caller and the parts that serve it. Team, Name and Sender
// are the caller: its team, its inbox name ("lead", "ana-2") and the
// upper-case name in its message ids ("LEAD").
type Service struct {
	Team, Name, Sender string
	Store              *mailbox.Store
	// Dispatcher talks to the tmux server the agents run on. It is a
	// function because the dispatcher is built on first use (app.Wiring):
	// an operation that needs only the mailbox never needs tmux, nor tmux
	// installed. nil: there is no tmux side at all.
	Dispatcher func() (*dispatch.Dispatcher, error)
	// Courier records and types messages: the store, locks, retention and
	// answer hint. An operation types through a copy over the dispatcher
	// it uses (none for a message only recorded): its Dispatch is unset.
	Courier *courier.Courier
	// Lifecycle starts, stops and watches agents, built on first use like
	// the dispatcher it needs; nil when not available.
	Lifecycle func() (Lifecycle, error)
	Now       func() time.Time
	// Version is agentmsg's, reported to clients.
	Version string
	// Hosts links this host to others (the daemon's); nil without one.
	Hosts Hosts
}

// Lifecycle is what a front end needs of package lifecycle: a
// *lifecycle.Manager, or a fake in tests.
type Lifecycle interface {
	Shutdown(ctx context.Context, from string, t target.Target, reason string, wait time.Duration) (lifecycle.ShutdownResult, error)
	Kill(ctx context.Context, t target.Target, grace time.Duration) (lifecycle.KillResult, error)
	Status(ctx context.Context, team string) ([]lifecycle.AgentStatus, error)
}
