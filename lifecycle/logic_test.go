package lifecycle

// The lifecycle's logic on the fake tmux server (tmux/tmuxtest): the
// registry, refusing an existing session, the shutdown protocol, Status
// joining the registry with the server's sessions, and Reap. No process
// runs behind a fake pane (its pid is 0), so what needs one (Kill's
// signals and the process table, the environment reaching a process) is tested on a
// real server in lifecycle_test.go.

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/courier"
	"github.com/agentmsg/agentmsg/delivery"
	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/identity"
	"github.com/agentmsg/agentmsg/lock"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
	"github.com/agentmsg/agentmsg/target"
	"github.com/agentmsg/agentmsg/tmux"
	"github.com/agentmsg/agentmsg/tmux/tmuxtest"
)

// fake is a Manager on a fake tmux server with the given sessions, a temp
// mailbox and a settable clock.
type fake struct {
	*Manager
	tmux *tmuxtest.Server
	clk  *clock
}

func newFake(t *testing.T, sessions ...string) *fake {
	t.Helper()
	srv := tmuxtest.New(sessions...)
	opts := delivery.DefaultOptions()
	opts.ReadyTimeout, opts.ConfirmTimeout = 150*time.Millisecond, time.Second
	opts.Settle, opts.Poll = time.Millisecond, time.Millisecond
	locks := lock.Dir{Path: t.TempDir()}
	d := &dispatch.Dispatcher{Tmux: srv, Locks: locks, Clock: tmuxtest.Clock{}, Opts: opts, Concurrency: 4}
	store := mailbox.New(t.TempDir())
	store.PollInterval = 2 * time.Millisecond
	clk := &clock{t: time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)}
	m := &Manager{Tmux: srv, Dispatch: d, Store: store, Now: clk.Now,
		Courier: &courier.Courier{Store: store, Dispatch: d, Locks: locks}}
	return &fake{Manager: m, tmux: srv, clk: clk}
}

// envValue is the value tmux gives key from env: its last entry wins.
func envValue(env []string, key string) (string, bool) {
	v, ok := "", false
	for _, kv := range env {
		if k, val, _ := strings.Cut(kv, "="); k == key {
			v, ok = val, true
		}
	}
	return v, ok
}

func TestSpawnRegistersAndRefusesAnExistingSession(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	ctx := context.Background()
	dir := t.TempDir()
	cmd := []string{"sh", "-c", "exec sleep 1", "sh"}
	tg, err := f.Spawn(ctx, SpawnRequest{Team: "alpha", Name: "ana", Instance: "2", Dir: dir, Agent: "claude",
		Command: cmd, Env: []string{"EXTRA=x y;z", "AGENTMSG_FROM=impostor"}})
	if err != nil {
		t.Fatal(err)
	}
	if tg.Session != "agent-alpha-ana-2" {
		t.Fatalf("session %q", tg.Session)
	}
	st, ok := f.tmux.Started(tg.Session)
	if !ok || st.Dir != dir || !slices.Equal(st.Argv, cmd) {
		t.Errorf("started %+v, %v; want dir %s, argv %q", st, ok, dir, cmd)
	}
	// r.Env comes first, so it cannot change who the agent is.
	for key, want := range map[string]string{"AGENTMSG_FROM": "ana-2", "AGENTMSG_TEAM": "alpha", "AGENTMSG_SOCKET": "/fake/sock",
		"AGENTMSG_HOME": f.Store.Root, "EXTRA": "x y;z", "AGENTMSG_SOCKET_NAME": ""} {
		if got, ok := envValue(st.Env, key); !ok || got != want {
			t.Errorf("the agent's %s is %q (set: %v), want %q; env %q", key, got, ok, want, st.Env)
		}
	}
	rec, err := f.Store.RegisteredAgent("alpha", "ana-2")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Session != tg.Session || rec.Socket != "/fake/sock" || rec.Kind != "claude" || rec.Instance != "2" || rec.Dir != dir ||
		rec.Pane != f.tmux.PaneID(tg.Session) || !rec.Spawned.Equal(f.clk.Now()) || !slices.Equal(rec.Command, cmd) {
		t.Errorf("registry entry %+v", rec)
	}
	s := statusOf(t, f.Manager, "alpha", "ana-2")
	if s.State != Idle || !s.Registered || s.Pane != rec.Pane {
		t.Errorf("status %+v", s)
	}

	// Exactly that name exists: refused, and the first stays registered.
	if _, err := f.Spawn(ctx, SpawnRequest{Team: "alpha", Name: "ana", Instance: "2", Command: cmd}); !errors.Is(err, ErrExists) {
		t.Errorf("second spawn: %v, want ErrExists", err)
	}
	if again, err := f.Store.RegisteredAgent("alpha", "ana-2"); err != nil || again.Pane != rec.Pane {
		t.Errorf("entry after a refused spawn: %+v, %v", again, err)
	}
	// A name it prefixes is another agent.
	if _, err := f.Spawn(ctx, SpawnRequest{Team: "alpha", Name: "ana", Command: cmd}); err != nil {
		t.Errorf("spawning agent-alpha-ana next to agent-alpha-ana-2: %v", err)
	}

	for _, bad := range []SpawnRequest{
		{Team: "alpha", Name: "bob"},
		{Team: "alpha", Name: "Bob", Command: cmd},
		{Team: "alpha", Name: "bob", Command: []string{"/no/such/program"}},
		{Team: "alpha", Name: "bob", Command: cmd, Env: []string{"NOEQUALS"}},
		{Team: "alpha", Name: "bob", Command: cmd, Dir: "/no/such/dir"},
	} {
		if _, err := f.Spawn(ctx, bad); err == nil {
			t.Errorf("Spawn(%+v) succeeded", bad)
		}
	}
	if ok, _ := f.Tmux.HasSession(ctx, "agent-alpha-bob"); ok {
		t.Error("a refused spawn left a session")
	}
	if _, err := f.Store.RegisteredAgent("alpha", "bob"); !errors.Is(err, mailbox.ErrNotRegistered) {
		t.Errorf("a refused spawn registered bob: %v", err)
	}
}

// A one-word command goes through env(1), so tmux hands it to no shell;
// a team-less agent has no AGENTMSG_TEAM and is registered under ralph.
func TestSpawnOneWordAndTeamless(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	tg, err := f.Spawn(context.Background(), SpawnRequest{Name: "ralph-7", Command: []string{"sh"}})
	if err != nil {
		t.Fatal(err)
	}
	st, _ := f.tmux.Started(tg.Session)
	if len(st.Argv) != 2 || filepath.Base(st.Argv[0]) != "env" || st.Argv[1] != "sh" {
		t.Errorf("argv %q, want env sh", st.Argv)
	}
	if _, ok := envValue(st.Env, "AGENTMSG_TEAM"); ok {
		t.Errorf("a team-less agent has AGENTMSG_TEAM: %q", st.Env)
	}
	if from, _ := envValue(st.Env, "AGENTMSG_FROM"); from != "ralph-7" {
		t.Errorf("AGENTMSG_FROM=%q", from)
	}
	if _, err := f.Store.RegisteredAgent(target.RalphTeam, "ralph-7"); err != nil {
		t.Errorf("ralph-7 is not registered under %s: %v", target.RalphTeam, err)
	}
	if list, err := f.Status(context.Background(), target.RalphTeam); err != nil || len(list) != 1 || list[0].Target != tg {
		t.Errorf("status of %s: %+v, %v", target.RalphTeam, list, err)
	}
}

// racing hides sessions from HasSession, as when another spawn creates
// the same session between the check and new-session.
type racing struct{ tmux.Sessions }

func (racing) HasSession(context.Context, string) (bool, error) { return false, nil }

func TestSpawnLosesTheRace(t *testing.T) {
	t.Parallel()
	f := newFake(t, "agent-alpha-ana")
	f.Tmux = racing{f.tmux}
	_, err := f.Spawn(context.Background(), SpawnRequest{Team: "alpha", Name: "ana", Command: []string{"sh"}})
	if !errors.Is(err, ErrExists) {
		t.Errorf("spawn over a session created meanwhile: %v, want ErrExists", err)
	}
	if _, err := f.Store.RegisteredAgent("alpha", "ana"); !errors.Is(err, mailbox.ErrNotRegistered) {
		t.Errorf("the losing spawn registered ana: %v", err)
	}
	if ok, _ := f.tmux.HasSession(context.Background(), "agent-alpha-ana"); !ok {
		t.Error("the losing spawn removed the winner's session")
	}
}

// Without a process behind the pane, Kill ends the session and the entry;
// a second kill, and a kill of an entry whose session is gone, find no
// session (the latter removes the entry).
func TestKillSessionAndRegistry(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	ctx := context.Background()
	tg, err := f.Spawn(ctx, SpawnRequest{Team: "alpha", Name: "bob", Command: []string{"sh"}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := f.Kill(ctx, tg, time.Second)
	if err != nil || res.Target != tg || len(res.PIDs) != 0 || res.Forced {
		t.Errorf("kill: %+v, %v", res, err)
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

	cy, err := f.Spawn(ctx, SpawnRequest{Team: "alpha", Name: "cy", Command: []string{"sh"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.tmux.KillSession(ctx, cy.Session); err != nil {
		t.Fatal(err)
	}
	_, err = f.Kill(ctx, cy, time.Second)
	if !errors.Is(err, dispatch.ErrTargetNotFound) || !strings.Contains(err.Error(), "entry is removed") {
		t.Errorf("kill of a registered agent whose session is gone: %v", err)
	}
	if _, err := f.Store.RegisteredAgent("alpha", "cy"); !errors.Is(err, mailbox.ErrNotRegistered) {
		t.Errorf("registry entry of an agent without a session: %v", err)
	}
}

func TestHeartbeatTimeoutAndReap(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	ctx := context.Background()
	f.HeartbeatTimeout = 30 * time.Second
	tg, err := f.Spawn(ctx, SpawnRequest{Team: "beta", Name: "cy", Command: []string{"sh"}})
	if err != nil {
		t.Fatal(err)
	}
	// Never heart-beaten: no timeout applies.
	f.clk.Add(time.Hour)
	if s := statusOf(t, f.Manager, "beta", "cy"); s.State != Idle {
		t.Errorf("an hour after spawn, never heart-beaten: %s (%s), want idle", s.State, s.Reason)
	}

	if err := f.Heartbeat("beta", "cy"); err != nil {
		t.Fatal(err)
	}
	f.clk.Add(29 * time.Second)
	if s := statusOf(t, f.Manager, "beta", "cy"); s.State != Idle || !s.Heartbeat.Equal(f.clk.Now().Add(-29*time.Second)) {
		t.Errorf("29s after a heartbeat: %s (%s), heartbeat %v", s.State, s.Reason, s.Heartbeat)
	}
	f.clk.Add(2 * time.Second)
	s := statusOf(t, f.Manager, "beta", "cy")
	if s.State != Dead || !strings.Contains(s.Reason, "no heartbeat") {
		t.Fatalf("after 31s of silence: %s (%s), want dead for the heartbeat", s.State, s.Reason)
	}
	// A longer timeout for this call only: alive.
	if list, err := f.StatusWithin(ctx, "beta", time.Minute); err != nil || len(list) != 1 || list[0].State != Idle {
		t.Errorf("StatusWithin a minute: %+v, %v", list, err)
	}
	reaped, err := f.Reap(ctx, "beta")
	if err != nil || len(reaped) != 1 || reaped[0].Target != tg {
		t.Fatalf("reap: %+v, %v", reaped, err)
	}
	// Conservative: the session stays, unregistered, read from its screen.
	s = statusOf(t, f.Manager, "beta", "cy")
	if s.Registered || s.State != Idle {
		t.Errorf("after reap: %+v", s)
	}
	if ok, _ := f.Tmux.HasSession(ctx, tg.Session); !ok {
		t.Error("reap removed the session")
	}
}

func TestStatusSessionGoneAndCounts(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	ctx := context.Background()
	tg, err := f.Spawn(ctx, SpawnRequest{Team: "gamma", Name: "dee", Command: []string{"sh"}})
	if err != nil {
		t.Fatal(err)
	}
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
	s := statusOf(t, f.Manager, "gamma", "dee")
	if s.State != Idle || s.Pending != 1 || s.OpenRequests != 1 || s.Status == nil || s.Status.WorkingOn != "tests" || s.LastActivity.IsZero() {
		t.Errorf("status %+v", s)
	}
	// Another agent of the team, not spawned by us, shows too; one of
	// another team does not.
	for _, name := range []string{"agent-gamma-eve", "agent-delta-flo"} {
		if _, _, err := f.tmux.NewSession(ctx, name, "", nil, []string{"agent"}); err != nil {
			t.Fatal(err)
		}
	}
	if s := statusOf(t, f.Manager, "gamma", "eve"); s.Registered || s.State != Idle {
		t.Errorf("eve: %+v", s)
	}

	if err := f.Tmux.KillSession(ctx, tg.Session); err != nil {
		t.Fatal(err)
	}
	s = statusOf(t, f.Manager, "gamma", "dee")
	if s.State != Dead || !strings.Contains(s.Reason, "session gone") || !s.Registered || s.Pane != "" {
		t.Errorf("after its session went: %s (%s) %+v", s.State, s.Reason, s)
	}
	reaped, err := f.Reap(ctx, "gamma")
	if err != nil || len(reaped) != 1 || reaped[0].Target.Agent() != "dee" {
		t.Fatalf("reap: %+v, %v", reaped, err)
	}
	list, err := f.Status(ctx, "gamma")
	if err != nil || len(list) != 1 || list[0].Target.Agent() != "eve" {
		t.Errorf("after reap: %+v, %v", list, err)
	}
	// Every team: eve and flo, sorted by session name.
	all, err := f.Status(ctx, "")
	if err != nil || len(all) != 2 || all[0].Target.Session != "agent-delta-flo" || all[1].Target.Session != "agent-gamma-eve" {
		t.Errorf("all teams: %+v, %v", all, err)
	}
	if _, err := f.Status(ctx, "Bad Team"); err == nil {
		t.Error("status of an invalid team name succeeded")
	}
}

// A pane whose program has exited is dead, and reaped, while its
// session stays.
func TestStatusDeadPane(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	ctx := context.Background()
	tg, err := f.Spawn(ctx, SpawnRequest{Team: "gamma", Name: "gus", Command: []string{"sh"}})
	if err != nil {
		t.Fatal(err)
	}
	f.tmux.SetDead(tg.Session)
	s := statusOf(t, f.Manager, "gamma", "gus")
	if s.State != Dead || !strings.Contains(s.Reason, "has exited") || s.Pane == "" {
		t.Errorf("a dead pane: %s (%s) %+v", s.State, s.Reason, s)
	}
	if reaped, err := f.Reap(ctx, "gamma"); err != nil || len(reaped) != 1 {
		t.Errorf("reap: %+v, %v", reaped, err)
	}
	if _, err := f.Store.RegisteredAgent("gamma", "gus"); !errors.Is(err, mailbox.ErrNotRegistered) {
		t.Errorf("entry after reap: %v", err)
	}
}

func TestShutdownAcceptedDeferredAndUnanswered(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	ctx := context.Background()
	tg, err := f.Spawn(ctx, SpawnRequest{Team: "delta", Name: "fay", Command: []string{"sh"}})
	if err != nil {
		t.Fatal(err)
	}

	// answerAs replies as from once the request is in fay's inbox.
	answerAs := func(from, accept, text string) <-chan error {
		done := make(chan error, 1)
		go func() {
			wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			req, err := f.Store.Wait(wctx, "delta", "fay", func(e mailbox.Envelope) bool {
				if e.Type != mailbox.TypeShutdownRequest {
					return false
				}
				r, _ := f.Store.Read("delta", "lead")
				return !answered(r, e.ID)
			}, mailbox.Position{})
			if err != nil {
				done <- err
				return
			}
			box, _ := f.Store.Box("delta", "lead")
			id, _ := message.NewID(strings.ToUpper(from), nil)
			done <- box.Append(mailbox.Envelope{ID: id, From: from, To: "lead", Type: mailbox.TypeShutdownResponse,
				ReplyTo: req.ID, Content: text, Metadata: map[string]string{"accept": accept}})
		}()
		return done
	}
	answer := func(accept, text string) <-chan error { return answerAs("fay", accept, text) }
	typed := func(id message.ID, reason string) {
		t.Helper()
		want := string(id) + ": [shutdown-request] " + reason
		for _, got := range f.tmux.Received(tg.Session) {
			if strings.Contains(got, want) {
				return
			}
		}
		t.Errorf("the agent got %q, want one holding %q", f.tmux.Received(tg.Session), want)
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
	typed(res.RequestID, DefaultShutdownReason)

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
	typed(res.RequestID, "the sprint is over")

	// Only fay may answer fay's request: another agent's answer to it
	// is not hers.
	done = answerAs("gil", "true", "I accept for fay")
	res, err = f.Shutdown(ctx, "lead", tg, "for fay only", 500*time.Millisecond)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err != nil || res.Answered {
		t.Errorf("answered by another agent: %+v, %v", res, err)
	}

	res, err = f.Shutdown(ctx, "lead", tg, "last call", 50*time.Millisecond)
	if err != nil || res.Answered || !res.Sent.OK() {
		t.Errorf("unanswered: %+v, %v", res, err)
	}
	// No wait: sent and back at once.
	if res, err = f.Shutdown(ctx, "lead", tg, "", 0); err != nil || res.Answered || res.RequestID == "" {
		t.Errorf("no wait: %+v, %v", res, err)
	}
	if n := len(f.tmux.Received(tg.Session)); n != 5 {
		t.Errorf("the agent got %d prompts, want 5", n)
	}
	// A missing agent: not found, nothing recorded.
	missing, _ := target.New("delta", "nobody")
	if _, err := f.Shutdown(ctx, "lead", missing, "", time.Second); !errors.Is(err, dispatch.ErrTargetNotFound) {
		t.Errorf("missing agent: %v", err)
	}
	if b, err := f.Store.Read("delta", "nobody"); err == nil && len(b.Envelopes) > 0 {
		t.Errorf("a shutdown of a missing agent was recorded: %+v", b.Envelopes)
	}
	// A cancelled wait is an error.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := f.Shutdown(cctx, "lead", tg, "", time.Second); err == nil {
		t.Error("a shutdown with a cancelled context succeeded")
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

// With Tokens, a spawned agent's environment holds a token of its own for
// the daemon's MCP endpoint (who it is there comes from that token, not
// from what it says), after the request's variables so that they cannot
// change it; a new spawn of the session revokes the earlier spawn's
// token, and a spawn that starts nothing leaves none.
func TestSpawnGivesTheAgentItsMCPToken(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	f.Tokens = &identity.Tokens{Path: filepath.Join(t.TempDir(), "mcp-tokens.json")}
	ctx := context.Background()
	spawn := func() string {
		t.Helper()
		tg, err := f.Spawn(ctx, SpawnRequest{Team: "alpha", Name: "ana", Command: []string{"sh"}, Env: []string{"AGENTMSG_MCP_TOKEN=amt_mine"}})
		if err != nil {
			t.Fatal(err)
		}
		st, _ := f.tmux.Started(tg.Session)
		token, _ := envValue(st.Env, "AGENTMSG_MCP_TOKEN")
		if g, ok := f.Tokens.Lookup(token); !ok || g.Team != "alpha" || g.Name != "ana" || g.Orchestrator || g.Session != "agent-alpha-ana" {
			t.Fatalf("AGENTMSG_MCP_TOKEN=%q speaks for %+v (known: %v)", token, g, ok)
		}
		return token
	}
	first := spawn()
	if err := f.Tmux.KillSession(ctx, "agent-alpha-ana"); err != nil {
		t.Fatal(err)
	}
	second := spawn()
	if _, ok := f.Tokens.Lookup(first); ok || first == second {
		t.Error("the earlier spawn's token still works")
	}
	// Refused (the session exists), and lost to a racing spawn: no token.
	if _, err := f.Spawn(ctx, SpawnRequest{Team: "alpha", Name: "ana", Command: []string{"sh"}}); !errors.Is(err, ErrExists) {
		t.Fatalf("spawn over a running session: %v", err)
	}
	f.Tmux = racing{f.tmux}
	if _, err := f.Spawn(ctx, SpawnRequest{Team: "alpha", Name: "ana", Command: []string{"sh"}}); !errors.Is(err, ErrExists) {
		t.Fatalf("spawn that lost the race: %v", err)
	}
	if n, err := f.Tokens.Revoke("alpha", "ana"); n != 1 || err != nil {
		t.Errorf("ana has %d tokens (%v), want only the running spawn's", n, err)
	}

	// Without Tokens, no variable.
	plain := newFake(t)
	tg, err := plain.Spawn(ctx, SpawnRequest{Team: "alpha", Name: "bob", Command: []string{"sh"}})
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := plain.tmux.Started(tg.Session); slices.ContainsFunc(st.Env, func(kv string) bool { return strings.HasPrefix(kv, "AGENTMSG_MCP_TOKEN=") }) {
		t.Errorf("env %q", st.Env)
	}
}
