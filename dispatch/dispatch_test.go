package dispatch

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/delivery"
	"github.com/agentmsg/agentmsg/message"
	"github.com/agentmsg/agentmsg/profile"
	"github.com/agentmsg/agentmsg/target"
	"github.com/agentmsg/agentmsg/tmux"
	"github.com/agentmsg/agentmsg/tmux/tmuxtest"
)

type noLocks struct{}

func (noLocks) Pane(ctx context.Context, socket, pane string) (func(), error) { return func() {}, nil }

func newDispatcher(s *tmuxtest.Server) *Dispatcher {
	opts := delivery.DefaultOptions()
	opts.ReadyTimeout, opts.ConfirmTimeout = 100*time.Millisecond, 500*time.Millisecond
	opts.Settle, opts.Poll = time.Millisecond, time.Millisecond
	return &Dispatcher{
		Tmux: s, Locks: noLocks{}, Clock: tmuxtest.Clock{}, Opts: opts, Concurrency: 4,
	}
}

// send and broadcastText wrap a text in a message and deliver it.
func send(d *Dispatcher, t target.Target, sender, text string) Outcome {
	msg, err := d.NewMessage(sender, text)
	if err != nil {
		return Outcome{Target: t, Verdict: delivery.Failed, Err: err}
	}
	r, err := d.Resolve(context.Background(), t, Call{})
	if err != nil {
		return d.Unsent(r, msg.ID, err)
	}
	return d.Deliver(context.Background(), r, msg, Call{})
}

// report is one broadcast: its message's id and one outcome per target.
type report struct {
	ID       message.ID
	Outcomes []Outcome
}

func broadcastText(d *Dispatcher, team, sender, text string) (report, error) {
	msg, err := d.NewMessage(sender, text)
	if err != nil {
		return report{}, err
	}
	rs, err := d.ResolveTeam(context.Background(), team, Call{})
	if err != nil {
		return report{}, err
	}
	return report{ID: msg.ID, Outcomes: d.DeliverEach(context.Background(), rs, msg, Call{})}, nil
}

func mustTarget(t *testing.T, team, name string) target.Target {
	t.Helper()
	tg, err := target.New(team, name)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

func TestSendDelivers(t *testing.T) {
	s := tmuxtest.New("agent-alpha-ana")
	d := newDispatcher(s)
	out := send(d, mustTarget(t, "alpha", "ana"), "LEAD", "hello")
	if !out.OK() || out.Err != nil {
		t.Fatalf("outcome %+v", out)
	}
	got := s.Received("agent-alpha-ana")
	if want := string(out.ID) + ": hello"; len(got) != 1 || got[0] != want {
		t.Fatalf("received %q, want [%q]", got, want)
	}
}

// A bare tmux target prefix-matches: "agent-alpha-ana" would find
// agent-alpha-ana-2. The dispatcher must say "not found" instead.
func TestSendIsExact(t *testing.T) {
	s := tmuxtest.New("agent-alpha-ana-2", "agent-alpha-bob")
	out := send(newDispatcher(s), mustTarget(t, "alpha", "ana"), "LEAD", "hi")
	if out.Verdict != delivery.NotFound || !errors.Is(out.Err, ErrTargetNotFound) {
		t.Fatalf("outcome %+v, want not found", out)
	}
	for _, want := range []string{"agent-alpha-ana", "ana-2", "bob"} {
		if !strings.Contains(out.Err.Error(), want) {
			t.Errorf("error %q does not mention %q", out.Err, want)
		}
	}
	if got := s.Received("agent-alpha-ana-2"); len(got) != 0 {
		t.Errorf("ana-2 received %q", got)
	}
}

func TestSendRefusesEmpty(t *testing.T) {
	s := tmuxtest.New("agent-alpha-ana")
	out := send(newDispatcher(s), mustTarget(t, "alpha", "ana"), "LEAD", " \n\x1b[0m ")
	if !errors.Is(out.Err, ErrEmptyMessage) {
		t.Fatalf("outcome %+v, want ErrEmptyMessage", out)
	}
}

func TestBroadcastTeamReportsEachTarget(t *testing.T) {
	s := tmuxtest.New("agent-alpha-ana", "agent-alpha-bob", "agent-alpha-cy", "agent-beta-dee", "scratch")
	s.SetDialog("agent-alpha-bob", true)
	rep, err := broadcastText(newDispatcher(s), "alpha", "LEAD", "all hands")
	if err != nil {
		t.Fatal(err)
	}
	if ok, failed := counts(rep); ok != 2 || failed != 1 || len(rep.Outcomes) != 3 {
		t.Fatalf("report %+v, want 2 delivered, 1 failed", rep)
	}
	wantOrder := []string{"agent-alpha-ana", "agent-alpha-bob", "agent-alpha-cy"}
	for i, o := range rep.Outcomes {
		if o.Target.Session != wantOrder[i] {
			t.Errorf("outcome %d is %s, want %s", i, o.Target.Session, wantOrder[i])
		}
		if o.ID != rep.ID {
			t.Errorf("outcome %d has id %s, want the broadcast's %s", i, o.ID, rep.ID)
		}
	}
	if bob := rep.Outcomes[1]; bob.OK() || !errors.Is(bob.Err, delivery.ErrNotReady) {
		t.Errorf("bob: %+v, want not ready", bob)
	}
	if got := s.Received("agent-beta-dee"); len(got) != 0 {
		t.Errorf("another team received %q", got)
	}
}

func TestBroadcastAllSkipsNonAgents(t *testing.T) {
	s := tmuxtest.New("agent-alpha-ana", "agent-ralph-7", "scratch", "agent-", "agent-Bad-Name", "agentish")
	rep, err := broadcastText(newDispatcher(s), "", "LEAD", "hi")
	if err != nil {
		t.Fatal(err)
	}
	if ok, failed := counts(rep); ok != 2 || failed != 0 {
		t.Fatalf("report %+v, want the 2 agents", rep)
	}
	for _, other := range []string{"scratch", "agent-", "agent-Bad-Name", "agentish"} {
		if got := s.Received(other); len(got) != 0 {
			t.Errorf("%s received %q", other, got)
		}
	}
}

func TestBroadcastWithoutTargets(t *testing.T) {
	s := tmuxtest.New("scratch")
	_, err := broadcastText(newDispatcher(s), "alpha", "LEAD", "hi")
	if !errors.Is(err, ErrNoTargets) {
		t.Fatalf("err %v, want ErrNoTargets", err)
	}
}

func TestAgentsReadsStates(t *testing.T) {
	s := tmuxtest.New("agent-alpha-ana", "agent-alpha-bob", "scratch")
	s.SetDialog("agent-alpha-bob", true)
	agents, err := newDispatcher(s).Agents(context.Background(), "alpha", Call{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]delivery.State{}
	for _, a := range agents {
		got[a.Target.Name] = a.State
	}
	if len(agents) != 2 || got["ana"] != delivery.Ready || got["bob"] != delivery.Dialog {
		t.Fatalf("states %v, want ana ready, bob dialog", got)
	}
}

// Agents names the profile each screen was read as: the agent's CLI as
// delivery sees it.
func TestAgentsNamesTheProfile(t *testing.T) {
	s := tmuxtest.New("agent-alpha-ana")
	d := newDispatcher(s)
	d.Profile = func(tmux.Pane, []string) (profile.Profile, string) { return profile.Profile{Name: "codex"}, "test" }
	agents, err := d.Agents(context.Background(), "alpha", Call{})
	if err != nil || len(agents) != 1 || agents[0].Profile != "codex" {
		t.Fatalf("Agents = %+v, %v; want ana read as codex", agents, err)
	}
}

func TestBroadcastLeavesOutTheCaller(t *testing.T) {
	s := tmuxtest.New("agent-alpha-ana", "agent-alpha-bob")
	d := newDispatcher(s)
	d.Self = s.PaneID("agent-alpha-bob")
	rep, err := broadcastText(d, "alpha", "BOB", "hi team")
	if err != nil {
		t.Fatal(err)
	}
	if ok, _ := counts(rep); ok != 1 || len(rep.Outcomes) != 1 || rep.Outcomes[0].Target.Name != "ana" {
		t.Fatalf("report %+v, want ana only", rep)
	}
	out := send(d, mustTarget(t, "alpha", "bob"), "BOB", "note to self")
	if !errors.Is(out.Err, ErrSelf) || len(s.Received("agent-alpha-bob")) != 0 {
		t.Fatalf("send to oneself: %+v, want ErrSelf and nothing typed", out)
	}
}

// busyBox reads every screen as a busy agent whose box is empty.
type busyBox struct{}

func (busyBox) Read([]string) delivery.Reading {
	return delivery.Reading{State: delivery.Busy, BoxRow: 0}
}

// Inspect plans what a send would do by the rules a send follows: the
// profile's reader, settle and queueing, --while-busy, the caller's pane.
func TestInspectPlansAsASendDoes(t *testing.T) {
	s := tmuxtest.New("agent-alpha-ana", "agent-alpha-bob")
	s.SetDialog("agent-alpha-bob", true)
	d := newDispatcher(s)
	ctx := context.Background()
	plan := func(name string, call Call) Plan {
		t.Helper()
		in, err := d.Inspect(ctx, mustTarget(t, "alpha", name), 0, call)
		if err != nil {
			t.Fatal(err)
		}
		return in.Would
	}
	if p := plan("ana", Call{}); p.Action != delivery.ActType || p.Settle != d.Opts.Settle {
		t.Errorf("ready: %+v", p)
	}
	if p := plan("bob", Call{}); p.Action != delivery.ActWait || p.State != delivery.Dialog || p.ReadyTimeout != d.Opts.ReadyTimeout {
		t.Errorf("dialog: %+v", p)
	}
	if p := plan("cy", Call{}); p.Stop != StopNotFound {
		t.Errorf("missing: %+v", p)
	}
	queues := &profile.Profile{Name: "q", Reader: busyBox{}, Queues: true, Settle: time.Second}
	if p := plan("ana", Call{Agent: queues, WhileBusy: true}); p.Action != delivery.ActQueue || p.Settle != time.Second {
		t.Errorf("busy, queues, --while-busy: %+v", p)
	}
	if p := plan("ana", Call{Agent: queues}); p.Action != delivery.ActWait || p.State != delivery.Busy {
		t.Errorf("busy, queues, by default: %+v", p)
	}
	d.Self = s.PaneID("agent-alpha-ana")
	if p := plan("ana", Call{}); p.Stop != StopSelf {
		t.Errorf("own pane: %+v", p)
	}
}

// counts is how many targets of a broadcast took the message, and how many
// did not.
func counts(rep report) (ok, failed int) {
	for _, o := range rep.Outcomes {
		if o.OK() {
			ok++
		} else {
			failed++
		}
	}
	return ok, failed
}

// A team with no agents names the teams that have some: "broadcast nosuch
// x" said only that nosuch had none.
func TestNoTargetsNamesTheTeamsThere(t *testing.T) {
	s := tmuxtest.New("agent-alpha-ana", "agent-beta-bob", "agent-alpha-cy", "scratch")
	_, err := newDispatcher(s).ResolveTeam(context.Background(), "nosuch", Call{})
	if !errors.Is(err, ErrNoTargets) || !strings.Contains(err.Error(), "(teams there: alpha, beta)") {
		t.Fatalf("err %v, want ErrNoTargets naming alpha and beta", err)
	}
}

// --while-busy that cannot apply (the agent's profile does not queue what
// is submitted while it works, or no profile reads it) says why: a send
// then waits for the turn to end as if it had not been asked.
func TestWhileBusyThatCannotApplySaysWhy(t *testing.T) {
	s := tmuxtest.New("agent-alpha-ana")
	d := newDispatcher(s)
	ana := mustTarget(t, "alpha", "ana")
	deliver := func(call Call) Outcome {
		t.Helper()
		msg, err := d.NewMessage("LEAD", "hi")
		if err != nil {
			t.Fatal(err)
		}
		r, err := d.Resolve(context.Background(), ana, call)
		if err != nil {
			t.Fatal(err)
		}
		return d.Deliver(context.Background(), r, msg, call)
	}
	queues := &profile.Profile{Name: "q", Queues: true}
	waits := &profile.Profile{Name: "w"}
	if o := deliver(Call{Agent: queues, AgentWhy: "--agent q", WhileBusy: true}); o.WhileBusyIgnored != "" {
		t.Errorf("a profile that queues: %q", o.WhileBusyIgnored)
	}
	if o := deliver(Call{Agent: waits, AgentWhy: "--agent w"}); o.WhileBusyIgnored != "" {
		t.Errorf("not asked: %q", o.WhileBusyIgnored)
	}
	if o := deliver(Call{Agent: waits, AgentWhy: "--agent w", WhileBusy: true}); !strings.Contains(o.WhileBusyIgnored, "profile w does not queue") || !strings.Contains(o.WhileBusyIgnored, "--agent w") {
		t.Errorf("a profile that does not queue: %q", o.WhileBusyIgnored)
	}
	if o := deliver(Call{WhileBusy: true}); !strings.Contains(o.WhileBusyIgnored, "no profile") {
		t.Errorf("no profile: %q", o.WhileBusyIgnored)
	}
}

// A pass reuses a pane for its next message only when the agent took the
// last one, and only while the pane was read by an agent CLI's own profile
// (or by none): a generic or python reader takes a shell's prompt too, and
// the pane's foreground command, looked up again, is what tells a shell.
func TestAgainOnlyForAnAgentsOwnReader(t *testing.T) {
	r := Resolved{Pane: tmux.Pane{ID: "%1"}}
	taken := func(p profile.Profile, ok bool) Outcome {
		return Outcome{Pane: "%1", Verdict: delivery.Submitted, read: &readAs{profile: p, ok: ok}}
	}
	builtin := func(name string) profile.Profile {
		p, ok := profile.Lookup(name)
		if !ok {
			t.Fatalf("no builtin profile %s", name)
		}
		return p
	}
	for _, c := range []struct {
		out  Outcome
		want bool
	}{
		{taken(builtin("claude"), true), true},
		{taken(profile.Profile{Name: "standin"}, true), true},
		{taken(profile.Profile{}, false), true}, // no profiles at all
		{taken(builtin("generic"), true), false},
		{taken(builtin("python"), true), false},
		{taken(builtin("shell"), true), false},
		{Outcome{Pane: "%1", Verdict: delivery.NotReady, read: &readAs{ok: false}}, false},
		{Outcome{Pane: "%2", Verdict: delivery.Submitted, read: &readAs{ok: false}}, false},
		{Outcome{Pane: "%1", Verdict: delivery.Submitted}, false},
	} {
		if _, got := Again(r, c.out); got != c.want {
			t.Errorf("Again after %s into %s read as %+v: %v, want %v", c.out.Verdict, c.out.Pane, c.out.read, got, c.want)
		}
	}
}

// An agent behind a launcher (pyenv's bash shim, npx, a wrapper script)
// reads as a shell until the launcher hands it the pane: a delivery that
// waits sees its foreground command change in its looks and reads it with
// its own profile from then on. Before, the shell's profile, picked at the
// first look, read it for the whole ready timeout, and the message was
// deferred (not_ready) though the agent was up a moment later. Nothing is
// typed into the launcher meanwhile.
func TestAnAgentBehindALauncherIsReadAsItselfOnceItStarts(t *testing.T) {
	s := tmuxtest.New("agent-alpha-ana")
	s.SetLauncher("agent-alpha-ana", "bash")
	d := newDispatcher(s)
	d.Opts.ReadyTimeout = 10 * time.Second
	d.Profile = func(p tmux.Pane, _ []string) (profile.Profile, string) {
		if p.Command == "bash" {
			return profile.Profile{Name: "shell", Reader: profile.Shell{}}, "foreground command bash: a shell"
		}
		return profile.Profile{Name: "agent"}, "foreground command " + p.Command
	}
	var waits []string
	var mu sync.Mutex
	call := Call{OnWait: func(w Wait) {
		mu.Lock()
		defer mu.Unlock()
		if len(waits) == 0 || waits[len(waits)-1] != w.Profile {
			waits = append(waits, w.Profile)
		}
		if w.Profile == "shell" {
			s.SetLauncher("agent-alpha-ana", "") // it execs the agent
		}
	}}
	ana := mustTarget(t, "alpha", "ana")
	msg, _ := d.NewMessage("LEAD", "hi")
	r, err := d.Resolve(context.Background(), ana, call)
	if err != nil {
		t.Fatal(err)
	}
	out := d.Deliver(context.Background(), r, msg, call)
	if out.Verdict != delivery.Submitted || out.Profile != "agent" {
		t.Fatalf("a send to an agent behind a launcher: %s as %s (%v) after %s; want submitted, read as the agent", out.Verdict, out.Profile, out.Err, out.Elapsed)
	}
	if got := s.Received("agent-alpha-ana"); len(got) != 1 || got[0] != string(msg.ID)+": hi" {
		t.Errorf("ana received %q", got)
	}
	if got := s.TypedAhead("agent-alpha-ana"); len(got) != 0 {
		t.Errorf("typed into the launcher: %q", got)
	}
	if mu.Lock(); len(waits) == 0 || waits[0] != "shell" {
		t.Errorf("waited as %q; want first as the shell", waits)
	}
	mu.Unlock()
}
