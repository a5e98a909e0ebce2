package service

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/courier"
	"github.com/agentmsg/agentmsg/delivery"
	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/lifecycle"
	"github.com/agentmsg/agentmsg/lock"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
	"github.com/agentmsg/agentmsg/target"
	"github.com/agentmsg/agentmsg/tmux/tmuxtest"
)

// world is one test's team "t": a fake tmux server with the given agent
// sessions, a temp mailbox, and a lifecycle manager over both.
type world struct {
	tmux  *tmuxtest.Server
	store *mailbox.Store
	d     *dispatch.Dispatcher
	c     *courier.Courier
}

func newWorld(t *testing.T, agents ...string) *world {
	t.Helper()
	sessions := make([]string, len(agents))
	for i, a := range agents {
		sessions[i] = "agent-t-" + a
	}
	store := checkedStore(t)
	store.PollInterval = 2 * time.Millisecond
	opts := delivery.DefaultOptions()
	opts.ReadyTimeout, opts.ConfirmTimeout = 150*time.Millisecond, time.Second
	opts.Settle, opts.Poll = time.Millisecond, time.Millisecond
	locks := lock.Dir{Path: t.TempDir()}
	w := &world{tmux: tmuxtest.New(sessions...), store: store}
	w.d = &dispatch.Dispatcher{Tmux: w.tmux, Locks: locks, Clock: tmuxtest.Clock{}, Opts: opts, Concurrency: 4}
	w.c = &courier.Courier{Store: store, Dispatch: w.d, Locks: locks}
	return w
}

// service is the caller name of team t, with lc as its lifecycle (nil: a
// lifecycle.Manager over the world).
func (w *world) service(t *testing.T, name string, lc Lifecycle) *Service {
	t.Helper()
	sender, err := message.Sender(name)
	if err != nil {
		t.Fatal(err)
	}
	if lc == nil {
		lc = &lifecycle.Manager{Tmux: w.tmux, Dispatch: w.d, Courier: w.c, Store: w.store}
	}
	return &Service{
		Team: "t", Name: name, Sender: sender,
		Dispatcher: func() (*dispatch.Dispatcher, error) { return w.d, nil },
		Courier:    w.c,
		Store:      w.store,
		Lifecycle:  func() (Lifecycle, error) { return lc, nil },
		Now:        time.Now,
	}
}

func mustTarget(t *testing.T, team, name string) target.Target {
	t.Helper()
	tg, err := target.New(team, name)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

func TestShutdownWaitsForTheAnswer(t *testing.T) {
	t.Parallel()
	for _, accept := range []string{"true", "false"} {
		w := newWorld(t, "ana")
		svc := w.service(t, "lead", nil)
		ana := mustTarget(t, "t", "ana")
		// ana answers the request as soon as it is in her inbox.
		answered := make(chan struct{})
		t.Cleanup(func() { <-answered }) // no t.Error after the test is over
		go func() {
			defer close(answered)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			req, err := w.store.Wait(ctx, "t", "ana", func(e mailbox.Envelope) bool {
				return e.Type == mailbox.TypeShutdownRequest
			}, mailbox.Position{})
			if err != nil {
				return
			}
			box, err := w.store.Box("t", "lead")
			if err != nil {
				t.Error(err)
				return
			}
			err = box.Append(mailbox.Envelope{ID: "MSG_ANA_0000000a", From: "ana", To: "lead", Type: mailbox.TypeShutdownResponse,
				ReplyTo: req.ID, Content: "ok", Metadata: map[string]string{"accept": accept}})
			if err != nil {
				t.Error(err)
			}
		}()
		res, err := svc.Shutdown(context.Background(), ShutdownRequest{Target: ana, Wait: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if res.NotSent() || res.TimedOut() || !res.Answered || res.Accepted != (accept == "true") || res.Reason != "ok" || res.From != "lead" {
			t.Errorf("accept=%s: %+v", accept, res)
		}
		got := w.tmux.Received("agent-t-ana")
		if len(got) != 1 || !strings.Contains(got[0], lifecycle.DefaultShutdownReason) {
			t.Errorf("ana's agent got %q", got)
		}
	}
}

func TestShutdownNoAnswerTimesOut(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "ana")
	svc := w.service(t, "lead", nil)
	res, err := svc.Shutdown(context.Background(), ShutdownRequest{Target: mustTarget(t, "t", "ana"), Reason: "done", Wait: 20 * time.Millisecond})
	if err != nil || !res.TimedOut() || res.Answered || !res.Waited {
		t.Errorf("%+v, %v", res, err)
	}
}

func TestShutdownNotSent(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "ana")
	svc := w.service(t, "lead", nil)
	res, err := svc.Shutdown(context.Background(), ShutdownRequest{Target: mustTarget(t, "t", "bob"), Wait: time.Second})
	if err == nil || !res.NotSent() || res.TimedOut() || res.RequestID == "" {
		t.Errorf("a shutdown of a missing agent: %+v, %v", res, err)
	}
}

// fakeLifecycle records the calls that reach it.
type fakeLifecycle struct {
	mu     sync.Mutex
	calls  []string
	status []lifecycle.AgentStatus
}

func (f *fakeLifecycle) record(s string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, s)
}

func (f *fakeLifecycle) Shutdown(_ context.Context, _ string, t target.Target, _ string, _ time.Duration) (lifecycle.ShutdownResult, error) {
	f.record("shutdown " + t.String())
	return lifecycle.ShutdownResult{}, nil
}

func (f *fakeLifecycle) Kill(_ context.Context, t target.Target, grace time.Duration) (lifecycle.KillResult, error) {
	f.record("kill " + t.String() + " " + grace.String())
	return lifecycle.KillResult{Target: t}, nil
}

func (f *fakeLifecycle) Status(context.Context, string) ([]lifecycle.AgentStatus, error) {
	f.record("status")
	return f.status, nil
}

// The MCP server refused to kill its caller, the CLI did not: both refuse
// now (the safer side), before any signal.
func TestKillRefusesTheCaller(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "lead", "ana")
	fake := &fakeLifecycle{}
	svc := w.service(t, "lead", fake)
	_, err := svc.Kill(context.Background(), KillRequest{Target: mustTarget(t, "t", "lead")})
	if !errors.Is(err, dispatch.ErrSelf) {
		t.Errorf("killing yourself: %v, want dispatch.ErrSelf", err)
	}
	if _, err := svc.Kill(context.Background(), KillRequest{Target: mustTarget(t, "t", "ana")}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"kill t/ana " + lifecycle.DefaultGrace.String()}; strings.Join(fake.calls, ";") != strings.Join(want, ";") {
		t.Errorf("calls %q, want %q", fake.calls, want)
	}
}

func TestNoLifecycle(t *testing.T) {
	t.Parallel()
	svc := &Service{Team: "t", Name: "lead"}
	if _, err := svc.Kill(context.Background(), KillRequest{Target: mustTarget(t, "t", "ana")}); !errors.Is(err, ErrNoLifecycle) {
		t.Errorf("kill: %v", err)
	}
	if _, err := svc.Shutdown(context.Background(), ShutdownRequest{Target: mustTarget(t, "t", "ana")}); !errors.Is(err, ErrNoLifecycle) {
		t.Errorf("shutdown: %v", err)
	}
}

// spawningLifecycle starts nothing: it registers the agent as
// lifecycle.Manager does once its session is up.
type spawningLifecycle struct {
	fakeLifecycle
	store *mailbox.Store
}

func (f *spawningLifecycle) Spawn(_ context.Context, r lifecycle.SpawnRequest) (target.Target, error) {
	t, err := target.New(r.Team, r.Name)
	if err != nil {
		return t, err
	}
	return t, f.store.Register(r.Team, mailbox.AgentRecord{Agent: r.Name, Session: t.Session, Socket: "/fake/sock", Pane: "%7", PID: 42})
}

func TestSpawn(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	svc := w.service(t, "lead", &spawningLifecycle{store: w.store})
	res, err := svc.Spawn(context.Background(), lifecycle.SpawnRequest{Team: "t", Name: "ana", Command: []string{"claude"}})
	if err != nil || res.Target.Session != "agent-t-ana" || res.Socket != "/fake/sock" || res.Pane != "%7" || res.PID != 42 {
		t.Errorf("%+v, %v", res, err)
	}
	svc = w.service(t, "lead", &fakeLifecycle{})
	if _, err := svc.Spawn(context.Background(), lifecycle.SpawnRequest{Team: "t", Name: "ana"}); !errors.Is(err, ErrNoSpawn) {
		t.Errorf("a lifecycle that cannot spawn: %v", err)
	}
}

// Spawn and Kill through the lifecycle on the fake tmux: the session and
// the registry entry come and go together; an existing session is refused.
func TestSpawnAndKillOverTheLifecycle(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	svc := w.service(t, "lead", nil)
	ctx := context.Background()
	res, err := svc.Spawn(ctx, lifecycle.SpawnRequest{Team: "t", Name: "ana", Command: []string{"sh"}})
	if err != nil || res.Target.Session != "agent-t-ana" || res.Socket != "/fake/sock" || res.Pane != w.tmux.PaneID("agent-t-ana") {
		t.Fatalf("spawn: %+v, %v", res, err)
	}
	if _, err := svc.Spawn(ctx, lifecycle.SpawnRequest{Team: "t", Name: "ana", Command: []string{"sh"}}); !errors.Is(err, lifecycle.ErrExists) {
		t.Errorf("second spawn: %v, want lifecycle.ErrExists", err)
	}
	if _, err := svc.Kill(ctx, KillRequest{Target: res.Target}); err != nil {
		t.Fatal(err)
	}
	if ok, _ := w.tmux.HasSession(ctx, "agent-t-ana"); ok {
		t.Error("the session is still there after kill")
	}
	if _, err := w.store.RegisteredAgent("t", "ana"); !errors.Is(err, mailbox.ErrNotRegistered) {
		t.Errorf("registry entry after kill: %v", err)
	}
	if _, err := svc.Kill(ctx, KillRequest{Target: res.Target}); !errors.Is(err, dispatch.ErrTargetNotFound) {
		t.Errorf("second kill: %v, want dispatch.ErrTargetNotFound", err)
	}
}
