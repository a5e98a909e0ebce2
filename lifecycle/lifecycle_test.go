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

// The environment and argv reach the agent's process through tmux: the
// fake tests Spawn's logic, this its effect on a real process.
func TestSpawnEnvironmentReachesTheAgent(t *testing.T) {
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
	if rec.PID == 0 || rec.Pane == "" {
		t.Errorf("registry entry %+v", rec)
	}
	s := waitState(t, f.Manager, "alpha", "ana-2", Idle)
	if !s.Registered || s.Pane != rec.Pane || s.PID != rec.PID || s.Command != "standin" {
		t.Errorf("status %+v", s)
	}
	if _, err := f.Kill(ctx, tg, time.Second); err != nil {
		t.Fatal(err)
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
