package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentmsg/agentmsg/courier"
	"github.com/agentmsg/agentmsg/delivery"
	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/lifecycle"
	"github.com/agentmsg/agentmsg/lock"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
	"github.com/agentmsg/agentmsg/service"
	"github.com/agentmsg/agentmsg/target"
	"github.com/agentmsg/agentmsg/tmux/tmuxtest"
)

// team is one test's world: a fake tmux server with agent sessions of
// team "t", a temp mailbox, and a lifecycle fake.
type team struct {
	t     *testing.T
	tmux  *tmuxtest.Server
	store *mailbox.Store
	locks string
	life  *fakeLifecycle
}

func newTeam(t *testing.T, agents ...string) *team {
	t.Helper()
	sessions := make([]string, len(agents))
	for i, a := range agents {
		sessions[i] = "agent-t-" + a
	}
	store := mailbox.New(t.TempDir())
	store.PollInterval = 2 * time.Millisecond
	return &team{t: t, tmux: tmuxtest.New(sessions...), store: store, locks: t.TempDir(), life: &fakeLifecycle{}}
}

func (tm *team) dispatcher() (*dispatch.Dispatcher, error) {
	opts := delivery.DefaultOptions()
	opts.ReadyTimeout, opts.ConfirmTimeout = 150*time.Millisecond, time.Second
	opts.Settle, opts.Poll = time.Millisecond, time.Millisecond
	// Real per-pane locks: a workflow sends to one agent from several
	// goroutines, and without them two deliveries would interleave.
	return &dispatch.Dispatcher{Tmux: tm.tmux, Locks: lock.Dir{Path: tm.locks}, Clock: tmuxtest.Clock{}, Opts: opts, Concurrency: 4}, nil
}

func (tm *team) deps(name string) Deps {
	sender, err := message.Sender(name)
	if err != nil {
		tm.t.Fatal(err)
	}
	return Deps{
		Team: "t", Name: name, Sender: sender,
		// One dispatcher for every tool, as app.Wiring makes it.
		Dispatcher: sync.OnceValues(tm.dispatcher),
		Courier:    &courier.Courier{Store: tm.store, Locks: lock.Dir{Path: tm.locks}},
		Store:      tm.store,
		Lifecycle:  func() (service.Lifecycle, error) { return tm.life, nil },
		Version:    "test",
	}
}

// connect serves New(deps, orchestrator) over an in-memory transport and
// returns a client session to it.
func connect(t *testing.T, deps Deps, orchestrator bool) *mcp.ClientSession {
	t.Helper()
	return connectServer(t, New(deps, orchestrator))
}

// connectServer serves srv over an in-memory transport and returns a
// client session to it.
func connectServer(t *testing.T, srv *mcp.Server) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		ss.Wait()
	})
	return cs
}

// as connects an agent-mode (or orchestrator) client for name.
func (tm *team) as(name string, orchestrator bool) *client {
	return &client{t: tm.t, cs: connect(tm.t, tm.deps(name), orchestrator)}
}

type client struct {
	t  *testing.T
	cs *mcp.ClientSession
}

// call calls tool and decodes its structured result into out; it fails
// the test on a tool error.
func (c *client) call(tool string, args any, out any) {
	c.t.Helper()
	res, err := c.raw(context.Background(), tool, args)
	if err != nil {
		c.t.Fatalf("%s: %v", tool, err)
	}
	if res.IsError {
		c.t.Fatalf("%s: tool error: %s", tool, text(res))
	}
	decode(c.t, res, out)
}

// callErr calls tool and returns its tool error text ("" when none).
func (c *client) callErr(tool string, args any) string {
	c.t.Helper()
	res, err := c.raw(context.Background(), tool, args)
	if err != nil {
		c.t.Fatalf("%s: %v", tool, err)
	}
	if !res.IsError {
		c.t.Fatalf("%s: want a tool error, got %s", tool, text(res))
	}
	return text(res)
}

func (c *client) raw(ctx context.Context, tool string, args any) (*mcp.CallToolResult, error) {
	return c.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
}

func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func decode(t *testing.T, res *mcp.CallToolResult, out any) {
	t.Helper()
	if out == nil {
		return
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("decoding %s: %v", b, err)
	}
}

// fakeLifecycle records calls and answers from its fields.
type fakeLifecycle struct {
	mu       sync.Mutex
	calls    []string
	shutdown lifecycle.ShutdownResult
	kill     lifecycle.KillResult
	status   []lifecycle.AgentStatus
	err      error
}

func (f *fakeLifecycle) record(s string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, s)
}

func (f *fakeLifecycle) Shutdown(_ context.Context, from string, t target.Target, reason string, wait time.Duration) (lifecycle.ShutdownResult, error) {
	f.record(fmt.Sprintf("shutdown %s from %s reason %q wait %s", t, from, reason, wait))
	return f.shutdown, f.err
}

func (f *fakeLifecycle) Kill(_ context.Context, t target.Target, grace time.Duration) (lifecycle.KillResult, error) {
	f.record(fmt.Sprintf("kill %s grace %s", t, grace))
	r := f.kill
	r.Target = t
	return r, f.err
}

func (f *fakeLifecycle) Status(_ context.Context, team string) ([]lifecycle.AgentStatus, error) {
	f.record("status " + team)
	return f.status, f.err
}

// Spawn makes fakeLifecycle a lifecycle that starts agents.
func (f *fakeLifecycle) Spawn(_ context.Context, r lifecycle.SpawnRequest) (target.Target, error) {
	f.record(fmt.Sprintf("spawn %s/%s %q in %q", r.Team, r.Name, r.Command, r.Dir))
	t, err := target.New(r.Team, r.Name)
	if err != nil {
		return t, err
	}
	return t, f.err
}

func (f *fakeLifecycle) log() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}
