package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/courier"
	"github.com/agentmsg/agentmsg/delivery"
	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/e2e/harness"
	"github.com/agentmsg/agentmsg/lock"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
	"github.com/agentmsg/agentmsg/target"
	"github.com/agentmsg/agentmsg/tmux"
)

func TestMain(m *testing.M) {
	code := m.Run()
	harness.Cleanup()
	os.Exit(code)
}

// clock is a settable clock, safe for concurrent use.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }
func (realClock) Sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// fixture is a Manager on a private tmux server (never the user's own),
// with a mailbox in the server's dir.
type fixture struct {
	*Manager
	srv *harness.Server
	dir string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc")
	}
	srv, err := harness.NewServer()
	if err != nil {
		if strings.Contains(err.Error(), "not installed") {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	exec, err := tmux.NewExec(tmux.Server{Socket: srv.Socket}, os.Getenv("AGENTMSG_TMUX"))
	if err != nil {
		t.Fatal(err)
	}
	opts := delivery.DefaultOptions()
	opts.ReadyTimeout = 5 * time.Second
	d := &dispatch.Dispatcher{Tmux: exec, Locks: lock.Dir{Path: filepath.Join(srv.Dir, "runtime", "locks")},
		Clock: realClock{}, Opts: opts, Concurrency: 8}
	store := mailbox.New(filepath.Join(srv.Dir, "state", "agentmsg"))
	m := &Manager{Tmux: exec, Dispatch: d, Store: store,
		Courier: &courier.Courier{Store: store, Dispatch: d, Locks: lock.Dir{Path: filepath.Join(srv.Dir, "runtime", "locks")}}}
	return &fixture{Manager: m, srv: srv, dir: srv.Dir}
}

// standin is the argv of a stand-in agent logging to a file in the
// server's dir, and that file.
func (f *fixture) standin(name string) ([]string, string) {
	log := filepath.Join(f.dir, "logs", name+".log")
	return []string{f.srv.Bins.Standin, "-log", log, "-queue"}, log
}

// waitLog polls a stand-in's log until it holds want.
func waitLog(t *testing.T, path, want string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(path)
		if strings.Contains(string(b), want) {
			return string(b)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not show %q after 10s:\n%s", path, want, b)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func statusOf(t *testing.T, m *Manager, team, agent string) AgentStatus {
	t.Helper()
	list, err := m.Status(context.Background(), team)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list {
		if s.Target.Agent() == agent {
			return s
		}
	}
	t.Fatalf("%s/%s is not in the status list %+v", team, agent, list)
	return AgentStatus{}
}

// waitState polls Status until the agent is in state.
func waitState(t *testing.T, m *Manager, team, agent, state string) AgentStatus {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s := statusOf(t, m, team, agent)
		if s.State == state {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s/%s is %s (%s), want %s", team, agent, s.State, s.Reason, state)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestSpawnEnvironmentAndRegistry(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	argv, log := f.standin("ana")
	envFile := filepath.Join(f.dir, "logs", "env")
	// The shell line is an argument of sh, passed as is: no re-parsing.
	cmd := []string{"sh", "-c", `env > "$1"; shift; exec "$@"`, "sh", envFile}
	cmd = append(cmd, argv...)
	tg, err := f.Spawn(ctx, SpawnRequest{Team: "alpha", Name: "ana", Instance: "2", Dir: f.dir, Agent: "claude",
		Command: cmd, Env: []string{"EXTRA=x y;z", "AGENTMSG_FROM=impostor"}})
	if err != nil {
		t.Fatal(err)
	}
	if tg.Session != "agent-alpha-ana-2" {
		t.Fatalf("session %q", tg.Session)
	}
	waitLog(t, log, `"started"`)
	env, _ := os.ReadFile(envFile)
	for _, want := range []string{"AGENTMSG_FROM=ana-2\n", "AGENTMSG_TEAM=alpha\n", "AGENTMSG_SOCKET=" + f.srv.Socket + "\n",
		"AGENTMSG_HOME=" + f.Store.Root + "\n", "EXTRA=x y;z\n", "TMUX=" + f.srv.Socket + ","} {
		if !strings.Contains(string(env), want) {
			t.Errorf("the agent's environment lacks %q:\n%s", want, env)
		}
	}
	rec, err := f.Store.RegisteredAgent("alpha", "ana-2")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Session != tg.Session || rec.Kind != "claude" || rec.Instance != "2" || rec.Dir != f.dir || rec.PID == 0 ||
		rec.Pane == "" || rec.Spawned.IsZero() || len(rec.Command) != len(cmd) {
		t.Errorf("registry entry %+v", rec)
	}
	s := waitState(t, f.Manager, "alpha", "ana-2", Idle)
	if !s.Registered || s.Pane != rec.Pane || s.Command != "standin" {
		t.Errorf("status %+v", s)
	}

	// Exactly that name exists: refused. A name it prefixes is another agent.
	if _, err := f.Spawn(ctx, SpawnRequest{Team: "alpha", Name: "ana", Instance: "2", Command: argv}); !errors.Is(err, ErrExists) {
		t.Errorf("second spawn: %v, want ErrExists", err)
	}
	argv2, log2 := f.standin("ana-plain")
	if _, err := f.Spawn(ctx, SpawnRequest{Team: "alpha", Name: "ana", Command: argv2}); err != nil {
		t.Errorf("spawning agent-alpha-ana next to agent-alpha-ana-2: %v", err)
	}
	waitLog(t, log2, `"started"`)

	for _, bad := range []SpawnRequest{
		{Team: "alpha", Name: "bob"},
		{Team: "alpha", Name: "Bob", Command: argv},
		{Team: "alpha", Name: "bob", Command: []string{"/no/such/program"}},
		{Team: "alpha", Name: "bob", Command: argv, Env: []string{"NOEQUALS"}},
		{Team: "alpha", Name: "bob", Command: argv, Dir: "/no/such/dir"},
	} {
		if _, err := f.Spawn(ctx, bad); err == nil {
			t.Errorf("Spawn(%+v) succeeded", bad)
		}
	}
	if ok, _ := f.Tmux.HasSession(ctx, "agent-alpha-bob"); ok {
		t.Error("a refused spawn left a session")
	}
}

func TestKillLeavesNoProcess(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	argv, log := f.standin("bob")
	// A background child, and a double-forked one that leaves the tree.
	line := `(sleep 301 &); sleep 300 & exec "$@"`
	tg, err := f.Spawn(ctx, SpawnRequest{Team: "alpha", Name: "bob", Command: append([]string{"sh", "-c", line, "sh"}, argv...)})
	if err != nil {
		t.Fatal(err)
	}
	waitLog(t, log, `"started"`)
	res, err := f.Kill(ctx, tg, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.PIDs) < 3 || res.Forced {
		t.Errorf("kill result %+v: want at least 3 processes, ended by SIGTERM", res)
	}
	for _, pid := range res.PIDs {
		if pidAlive(pid) {
			t.Errorf("pid %d is still there", pid)
		}
	}
	if ok, _ := f.Tmux.HasSession(ctx, tg.Session); ok {
		t.Error("the session is still there")
	}
	if _, err := f.Store.RegisteredAgent("alpha", "bob"); !errors.Is(err, mailbox.ErrNotRegistered) {
		t.Errorf("registry entry after kill: %v", err)
	}
	if _, err := f.Kill(ctx, tg, time.Second); !errors.Is(err, dispatch.ErrTargetNotFound) {
		t.Errorf("second kill: %v, want ErrTargetNotFound", err)
	}
}

func TestKillForcesWhatIgnoresTerm(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	ready := filepath.Join(f.dir, "logs", "ready")
	// SIGTERM ignored by the shell and, inherited, by its child.
	line := fmt.Sprintf(`trap '' TERM; sleep 300 & touch %s; wait; sleep 300`, ready)
	tg, err := f.Spawn(ctx, SpawnRequest{Team: "alpha", Name: "stubborn", Command: []string{"sh", "-c", line}})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, err := os.Stat(ready); err != nil; _, err = os.Stat(ready) {
		if time.Now().After(deadline) {
			t.Fatal("the agent did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	res, err := f.Kill(ctx, tg, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Forced || len(res.PIDs) < 2 {
		t.Errorf("kill result %+v: want SIGKILL of at least 2 processes", res)
	}
	for _, pid := range res.PIDs {
		if pidAlive(pid) {
			t.Errorf("pid %d is still there", pid)
		}
	}
}

func TestHeartbeatTimeoutAndReap(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	clk := &clock{t: time.Now()}
	f.Now = clk.Now
	f.HeartbeatTimeout = 30 * time.Second
	argv, log := f.standin("cy")
	tg, err := f.Spawn(ctx, SpawnRequest{Team: "beta", Name: "cy", Command: argv})
	if err != nil {
		t.Fatal(err)
	}
	waitLog(t, log, `"started"`)
	// Never heart-beaten: no timeout applies.
	clk.Add(time.Hour)
	waitState(t, f.Manager, "beta", "cy", Idle)

	if err := f.Heartbeat("beta", "cy"); err != nil {
		t.Fatal(err)
	}
	clk.Add(29 * time.Second)
	if s := waitState(t, f.Manager, "beta", "cy", Idle); !s.Heartbeat.Equal(clk.Now().Add(-29 * time.Second)) {
		t.Errorf("heartbeat %v", s.Heartbeat)
	}
	clk.Add(2 * time.Second)
	s := statusOf(t, f.Manager, "beta", "cy")
	if s.State != Dead || !strings.Contains(s.Reason, "no heartbeat") {
		t.Fatalf("after 31s of silence: %s (%s), want dead for the heartbeat", s.State, s.Reason)
	}
	reaped, err := f.Reap(ctx, "beta")
	if err != nil || len(reaped) != 1 || reaped[0].Target != tg {
		t.Fatalf("reap: %+v, %v", reaped, err)
	}
	// Conservative: the session stays, unregistered, read from its screen.
	s = waitState(t, f.Manager, "beta", "cy", Idle)
	if s.Registered {
		t.Errorf("still registered after reap: %+v", s)
	}
	if _, err := f.Kill(ctx, tg, time.Second); err != nil {
		t.Fatal(err)
	}
}

func TestStatusSessionGoneAndCounts(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	argv, log := f.standin("dee")
	tg, err := f.Spawn(ctx, SpawnRequest{Team: "gamma", Name: "dee", Command: argv})
	if err != nil {
		t.Fatal(err)
	}
	waitLog(t, log, `"started"`)
	box, _ := f.Store.Box("gamma", "dee")
	id, _ := message.NewID("LEAD", nil)
	if err := box.Append(mailbox.Envelope{ID: id, From: "lead", To: "dee", Type: mailbox.TypeText, Content: "later",
		Delivery: &mailbox.Delivery{State: mailbox.StateDeferred}}); err != nil {
		t.Fatal(err)
	}
	if err := f.Store.Post("gamma", mailbox.Request{ID: "REQ_1", From: "dee", Description: "help"}); err != nil {
		t.Fatal(err)
	}
	if err := f.Store.SetStatus("gamma", "dee", mailbox.Status{State: "working", WorkingOn: "tests"}); err != nil {
		t.Fatal(err)
	}
	s := waitState(t, f.Manager, "gamma", "dee", Idle)
	if s.Pending != 1 || s.OpenRequests != 1 || s.Status == nil || s.Status.WorkingOn != "tests" || s.LastActivity.IsZero() {
		t.Errorf("status %+v", s)
	}
	// Another agent of the team, not spawned by us, shows too.
	if _, err := f.srv.StartAgent("agent-gamma-eve"); err != nil {
		t.Fatal(err)
	}
	if s := waitState(t, f.Manager, "gamma", "eve", Idle); s.Registered {
		t.Errorf("eve is not registered: %+v", s)
	}

	if err := f.Tmux.KillSession(ctx, tg.Session); err != nil {
		t.Fatal(err)
	}
	s = statusOf(t, f.Manager, "gamma", "dee")
	if s.State != Dead || !strings.Contains(s.Reason, "session gone") {
		t.Errorf("after its session went: %s (%s)", s.State, s.Reason)
	}
	reaped, err := f.Reap(ctx, "gamma")
	if err != nil || len(reaped) != 1 || reaped[0].Target.Agent() != "dee" {
		t.Fatalf("reap: %+v, %v", reaped, err)
	}
	list, err := f.Status(ctx, "gamma")
	if err != nil || len(list) != 1 || list[0].Target.Agent() != "eve" {
		t.Errorf("after reap: %+v, %v", list, err)
	}
	// Every team: the same.
	if all, err := f.Status(ctx, ""); err != nil || len(all) != 1 {
		t.Errorf("all teams: %+v, %v", all, err)
	}
}

func TestShutdownAcceptedDeferredAndUnanswered(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	argv, log := f.standin("fay")
	tg, err := f.Spawn(ctx, SpawnRequest{Team: "delta", Name: "fay", Command: argv})
	if err != nil {
		t.Fatal(err)
	}
	waitLog(t, log, `"started"`)

	// answer replies as the agent once the request is in its inbox.
	answer := func(accept, text string) <-chan error {
		done := make(chan error, 1)
		go func() {
			deadline := time.Now().Add(10 * time.Second)
			seen := map[message.ID]bool{}
			for time.Now().Before(deadline) {
				batch, err := f.Store.Read("delta", "fay")
				if err != nil {
					done <- err
					return
				}
				for _, e := range batch.Envelopes {
					if e.Type != mailbox.TypeShutdownRequest || seen[e.ID] {
						continue
					}
					seen[e.ID] = true
					if r, _ := f.Store.Read("delta", "lead"); answered(r, e.ID) {
						continue
					}
					box, _ := f.Store.Box("delta", "lead")
					id, _ := message.NewID("FAY", nil)
					done <- box.Append(mailbox.Envelope{ID: id, From: "fay", To: "lead", Type: mailbox.TypeShutdownResponse,
						ReplyTo: e.ID, Content: text, Metadata: map[string]string{"accept": accept}})
					return
				}
				time.Sleep(10 * time.Millisecond)
			}
			done <- errors.New("no shutdown-request arrived")
		}()
		return done
	}

	done := answer("true", "stopping now")
	res, err := f.Shutdown(ctx, "lead", tg, "", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !res.Answered || !res.Accepted || res.Reason != "stopping now" || res.Response == nil || res.Response.ReplyTo != res.RequestID {
		t.Errorf("accepted: %+v", res)
	}
	waitLog(t, log, string(res.RequestID)+": [shutdown-request] "+DefaultShutdownReason)

	done = answer("false", "need 10 more minutes")
	res, err = f.Shutdown(ctx, "lead", tg, "the sprint is over", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !res.Answered || res.Accepted || res.Reason != "need 10 more minutes" {
		t.Errorf("deferred: %+v", res)
	}
	waitLog(t, log, string(res.RequestID)+": [shutdown-request] the sprint is over")

	res, err = f.Shutdown(ctx, "lead", tg, "last call", 200*time.Millisecond)
	if err != nil || res.Answered || !res.Sent.OK() {
		t.Errorf("unanswered: %+v, %v", res, err)
	}
	// No wait: sent and back at once.
	if res, err = f.Shutdown(ctx, "lead", tg, "", 0); err != nil || res.Answered || res.RequestID == "" {
		t.Errorf("no wait: %+v, %v", res, err)
	}
	// A missing agent: not found, nothing recorded.
	missing, _ := target.New("delta", "nobody")
	if _, err := f.Shutdown(ctx, "lead", missing, "", time.Second); !errors.Is(err, dispatch.ErrTargetNotFound) {
		t.Errorf("missing agent: %v", err)
	}
}

func answered(b mailbox.Batch, id message.ID) bool {
	for _, e := range b.Envelopes {
		if e.ReplyTo == id {
			return true
		}
	}
	return false
}

// A heartbeat goes to the agent's registry entry, a team-less one's under
// team ralph; a named agent without its team is ErrNoTeam, worded for no
// front end in particular (the CLI and MCP each say how to give a team).
func TestHeartbeatEntry(t *testing.T) {
	m := &Manager{Store: mailbox.New(t.TempDir())}
	for _, s := range []struct{ team, name, inTeam string }{{"alpha", "ana-2", "alpha"}, {"", "ralph-7", "ralph"}, {"alpha", "ralph-8", "ralph"}} {
		if err := m.Heartbeat(s.team, s.name); err != nil {
			t.Fatalf("Heartbeat(%q, %q): %v", s.team, s.name, err)
		}
		if rec, err := m.Store.RegisteredAgent(s.inTeam, s.name); err != nil || rec.Heartbeat.IsZero() {
			t.Errorf("Heartbeat(%q, %q): entry %s/%s %+v, %v", s.team, s.name, s.inTeam, s.name, rec, err)
		}
	}
	err := m.Heartbeat("", "ana")
	if !errors.Is(err, ErrNoTeam) || strings.Contains(err.Error(), "--") || strings.Contains(err.Error(), "AGENTMSG_") {
		t.Errorf("Heartbeat without a team: %v, want ErrNoTeam in no front end's words", err)
	}
}
