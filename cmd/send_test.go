package cmd

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/log"
	"github.com/spf13/cobra"

	"github.com/agentmsg/agentmsg/delivery"
	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/lock"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
	"github.com/agentmsg/agentmsg/tmux"
	"github.com/agentmsg/agentmsg/tmux/tmuxtest"
)

// runFixture is a Factory for lead of team alpha whose Dispatcher is a
// fake tmux server, with a mailbox in a temp dir: the run functions are
// called on it as the commands call them.
type runFixture struct {
	f           *Factory
	srv         *tmuxtest.Server
	client      tmux.Client // what the dispatcher talks to (srv unless replaced)
	store       *mailbox.Store
	out, errOut *bytes.Buffer
}

func newRunFixture(t *testing.T, sessions ...string) *runFixture {
	t.Helper()
	root := t.TempDir()
	f, out, errOut := testFactory(map[string]string{
		"AGENTMSG_FROM": "lead", "AGENTMSG_TEAM": "alpha", "AGENTMSG_HOME": root,
		"XDG_CONFIG_HOME": t.TempDir(), "XDG_RUNTIME_DIR": t.TempDir(),
	})
	fx := &runFixture{f: f, srv: tmuxtest.New(sessions...), store: storeAt(root), out: out, errOut: errOut}
	fx.client = fx.srv
	locks := t.TempDir()
	f.Dispatcher = func() (*dispatch.Dispatcher, error) {
		opts := delivery.DefaultOptions()
		opts.Settle, opts.Poll, opts.ReadyTimeout = time.Millisecond, time.Millisecond, 50*time.Millisecond
		return &dispatch.Dispatcher{Tmux: fx.client, Locks: lock.Dir{Path: locks}, Clock: tmuxtest.Clock{}, Opts: opts}, nil
	}
	f.Mailbox = func() (*mailbox.Store, error) { return fx.store, nil }
	NewCmdRoot(f) // wires Config and Identity
	return fx
}

// options parses args with the command built by build, capturing its
// options through runF, as the root command would.
func options[O any](t *testing.T, fx *runFixture, build func(*Factory, func(context.Context, O) error) *cobra.Command, args ...string) O {
	t.Helper()
	var got O
	c := build(fx.f, func(_ context.Context, o O) error { got = o; return nil })
	c.SetArgs(args)
	c.SetOut(fx.out)
	c.SetErr(fx.errOut)
	if err := c.ExecuteContext(context.Background()); err != nil {
		t.Fatalf("parsing %q: %v", args, err)
	}
	return got
}

func TestSendRun(t *testing.T) {
	fx := newRunFixture(t, "agent-alpha-ana")
	opts := options(t, fx, NewCmdSend, "alpha", "ana", "run", "the", "tests")
	if err := sendRun(context.Background(), opts); err != nil {
		t.Fatalf("sendRun: %v\n%s", err, fx.errOut)
	}
	got := fx.srv.Received("agent-alpha-ana")
	if len(got) != 1 || !strings.HasPrefix(got[0], "MSG_LEAD_") || !strings.HasSuffix(got[0], ": run the tests") {
		t.Fatalf("ana received %q", got)
	}
	if !strings.Contains(fx.out.String(), "submitted to alpha/ana") {
		t.Errorf("stdout: %s", fx.out)
	}
}

// A dialog the whole ready timeout: the message is deferred (exit 0),
// and with --no-queue it is not ready (exit 4). Nothing is typed.
func TestSendRunNotReady(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"alpha", "ana", "hi"}, ExitOK, "deferred for alpha/ana"},
		{[]string{"--no-queue", "alpha", "ana", "hi"}, ExitNotReady, "not delivered to alpha/ana"},
	} {
		fx := newRunFixture(t, "agent-alpha-ana")
		fx.srv.SetDialog("agent-alpha-ana", true)
		err := sendRun(context.Background(), options(t, fx, NewCmdSend, tc.args...))
		if exitCode(err) != tc.code || !strings.Contains(fx.out.String()+fx.errOut.String(), tc.says) {
			t.Errorf("%q: exit %d, want %d saying %q\nstdout: %s\nstderr: %s", tc.args, exitCode(err), tc.code, tc.says, fx.out, fx.errOut)
		}
		if got := fx.srv.Received("agent-alpha-ana"); len(got) != 0 {
			t.Errorf("%q: typed %q into a dialog", tc.args, got)
		}
	}
}

// --mailbox-only needs no tmux at all: for a new name with --create, and
// for a name that has an inbox already.
func TestSendRunMailboxOnlyNeedsNoTmux(t *testing.T) {
	fx := newRunFixture(t)
	fx.f.Dispatcher = func() (*dispatch.Dispatcher, error) { return nil, tmux.ErrNotInstalled }
	for _, args := range [][]string{{"--mailbox-only", "--create", "alpha", "dana", "hi"}, {"--mailbox-only", "alpha", "dana", "again"}} {
		if err := sendRun(context.Background(), options(t, fx, NewCmdSend, args...)); err != nil {
			t.Fatalf("sendRun %q: %v\n%s", args, err, fx.errOut)
		}
	}
	b, err := fx.store.Read("alpha", "dana")
	if err != nil || len(b.Envelopes) != 2 || b.Envelopes[0].Content != "hi" {
		t.Fatalf("dana's inbox %+v, %v", b.Envelopes, err)
	}
}

// --mailbox-only to a name with no session, no inbox and no board entry
// is a typo until --create says otherwise: it is refused (exit 3, naming
// the agents of the team) and no inbox is made for it. It used to exit 0
// and make one, which MCP then listed as an agent of the team.
func TestSendRunMailboxOnlyRefusesAnUnknownName(t *testing.T) {
	fx := newRunFixture(t, "agent-alpha-ana")
	err := sendRun(context.Background(), options(t, fx, NewCmdSend, "--mailbox-only", "alpha", "nobodyhere", "hi"))
	if code := exitCode(err); code != ExitNotFound {
		t.Fatalf("--mailbox-only to a typo: exit %d (%v), want %d\n%s", code, err, ExitNotFound, fx.out)
	}
	for _, want := range []string{"nobodyhere", "ana", "--create"} {
		if !strings.Contains(errText(err), want) {
			t.Errorf("the refusal %q does not mention %q", errText(err), want)
		}
	}
	if names, _ := fx.store.Agents("alpha"); slices.Contains(names, "nobodyhere") {
		t.Errorf("an inbox was made for the typo: %q", names)
	}
	// An agent with a session is known, though it has no inbox yet.
	if err := sendRun(context.Background(), options(t, fx, NewCmdSend, "--mailbox-only", "alpha", "ana", "hi")); err != nil {
		t.Errorf("--mailbox-only to ana, who has a session: %v", err)
	}
}

// One broadcast verdict: a target in a dialog is deferred, not failed, so
// the broadcast exits 0 and says so.
func TestBroadcastRun(t *testing.T) {
	fx := newRunFixture(t, "agent-alpha-ana", "agent-alpha-bob", "agent-beta-cy")
	fx.srv.SetDialog("agent-alpha-bob", true)
	err := broadcastRun(context.Background(), options(t, fx, NewCmdBroadcast, "alpha", "stand-up"))
	if exitCode(err) != ExitOK {
		t.Fatalf("exit %d\n%s%s", exitCode(err), fx.out, fx.errOut)
	}
	if got := fx.srv.Received("agent-alpha-ana"); len(got) != 1 || !strings.HasSuffix(got[0], ": stand-up") {
		t.Errorf("ana received %q", got)
	}
	if got := fx.srv.Received("agent-beta-cy"); len(got) != 0 {
		t.Errorf("another team's agent received %q", got)
	}
	if !strings.Contains(fx.out.String(), "1 of 2 delivered") || !strings.Contains(fx.out.String(), "1 deferred") {
		t.Errorf("stdout: %s", fx.out)
	}
}

// A broadcast says, under each target's line, which older messages it
// tried first and what became of each, as send does; --json has them in
// each result's older.
func TestBroadcastRunSaysWhatWentFirst(t *testing.T) {
	fx := newRunFixture(t, "agent-alpha-ana", "agent-alpha-bob", "agent-alpha-cy")
	older := map[string]string{}
	for _, name := range []string{"bob", "cy"} {
		fx.srv.SetDialog("agent-alpha-"+name, true)
		out, _, _ := sendLine(t, fx, "alpha", name, "older to "+name)
		older[name] = strings.TrimSuffix(strings.Fields(out)[4], ":")
	}
	fx.srv.SetDialog("agent-alpha-bob", false)
	err := broadcastRun(context.Background(), options(t, fx, NewCmdBroadcast, "alpha", "to everyone"))
	lines := strings.Split(fx.out.String(), "\n")
	after := func(who string) string {
		for i, l := range lines {
			if strings.Contains(l, " alpha/"+who+" ") && i+1 < len(lines) {
				return lines[i+1]
			}
		}
		return ""
	}
	if exitCode(err) != ExitOK || after("bob") != "  older messages tried first: "+older["bob"]+" submitted" ||
		after("cy") != "  older messages tried first: "+older["cy"]+" deferred (a dialog stayed open)" ||
		strings.Contains(after("ana"), "older") {
		t.Fatalf("exit %d; want a line of older messages under bob's and cy's:\n%s", exitCode(err), fx.out)
	}
	fx.out.Reset()
	fx.f.JSON = true
	fx.srv.SetDialog("agent-alpha-cy", false)
	err = broadcastRun(context.Background(), options(t, fx, NewCmdBroadcast, "alpha", "again"))
	doc := decodeJSON[struct {
		Results []struct {
			Agent string
			Older []struct{ ID, Verdict string }
		}
	}](t, fx.out.String())
	var cy []struct{ ID, Verdict string }
	for _, r := range doc.Results {
		if r.Agent == "cy" {
			cy = r.Older
		}
	}
	if exitCode(err) != ExitOK || len(cy) != 2 || cy[0].ID != older["cy"] || cy[0].Verdict != "submitted" || cy[1].Verdict != "submitted" {
		t.Fatalf("--json: cy's older %+v, want %s and the first broadcast, both submitted\n%s", cy, older["cy"], fx.out)
	}
}

// plantMessage puts a message from ana into lead's inbox.
func plantMessage(t *testing.T, fx *runFixture, requestID string) message.ID {
	t.Helper()
	box, err := fx.store.Box("alpha", "lead")
	if err != nil {
		t.Fatal(err)
	}
	id := message.ID("MSG_ANA_0123abcd")
	if err := box.Append(mailbox.Envelope{ID: id, From: "ana", To: "lead", Type: mailbox.TypeText, Content: "done?", RequestID: requestID}); err != nil {
		t.Fatal(err)
	}
	return id
}

func TestReplyRun(t *testing.T) {
	fx := newRunFixture(t, "agent-alpha-ana")
	id := plantMessage(t, fx, "")
	build := func(f *Factory, runF func(context.Context, *ReplyOptions) error) *cobra.Command {
		return newCmdReply(f, runF)
	}
	if err := replyRun(context.Background(), options(t, fx, build, string(id), "yes")); err != nil {
		t.Fatalf("replyRun: %v\n%s", err, fx.errOut)
	}
	got := fx.srv.Received("agent-alpha-ana")
	if len(got) != 1 || !strings.Contains(got[0], "re "+string(id)+": yes") {
		t.Fatalf("ana received %q", got)
	}
}

// brokenTmux answers every look with an error that is not "no server".
type brokenTmux struct{ *fakeServer }

var errBroken = errors.New("tmux: protocol version mismatch")

func (brokenTmux) SessionPanes(context.Context, string) ([]tmux.Pane, error) {
	return nil, errBroken
}

// When tmux fails to say whether the sender has a session, a reply is an
// error (exit 1), as MCP's send_message was: it used to be recorded in the
// inbox only, never typed, while the CLI reported success.
func TestReplyRunTmuxErrorIsAnError(t *testing.T) {
	fx := newRunFixture(t, "agent-alpha-ana")
	fx.client = brokenTmux{fx.srv}
	id := plantMessage(t, fx, "")
	build := func(f *Factory, runF func(context.Context, *ReplyOptions) error) *cobra.Command {
		return newCmdReply(f, runF)
	}
	err := replyRun(context.Background(), options(t, fx, build, string(id), "yes"))
	if !errors.Is(err, errBroken) || exitCode(err) != ExitError {
		t.Fatalf("replyRun = %v (exit %d); want the tmux error, exit 1\nstdout: %s", err, exitCode(err), fx.out)
	}
	if b, _ := fx.store.Read("alpha", "ana"); len(b.Envelopes) != 0 {
		t.Errorf("the reply was recorded anyway: %+v", b.Envelopes)
	}
}

// deliver types a message send deferred (its agent showed a dialog) once
// the agent is ready, exactly once.
func TestDeliverRun(t *testing.T) {
	fx := newRunFixture(t, "agent-alpha-ana")
	fx.srv.SetDialog("agent-alpha-ana", true)
	if err := sendRun(context.Background(), options(t, fx, NewCmdSend, "alpha", "ana", "later")); err != nil {
		t.Fatalf("sendRun: %v", err)
	}
	fx.srv.SetDialog("agent-alpha-ana", false)
	var opts *DeliverOptions
	c := NewCmdDeliver(fx.f, func(_ context.Context, o *DeliverOptions) error { opts = o; return nil })
	c.SetArgs([]string{"alpha"})
	if err := c.ExecuteContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second pass finds nothing left to type
		if err := deliverRun(context.Background(), opts); err != nil {
			t.Fatalf("deliverRun: %v\n%s", err, fx.errOut)
		}
	}
	got := fx.srv.Received("agent-alpha-ana")
	if len(got) != 1 || !strings.HasSuffix(got[0], ": later") {
		t.Fatalf("ana received %q; want the deferred message once", got)
	}
	if !strings.Contains(fx.out.String(), "nothing to deliver") {
		t.Errorf("the second pass did not say it had nothing to do:\n%s", fx.out)
	}
}

// --turn-end is one pass: not with --watch.
func TestDeliverTurnEndIsOnePass(t *testing.T) {
	fx := newRunFixture(t, "agent-alpha-ana")
	c := NewCmdDeliver(fx.f, func(context.Context, *DeliverOptions) error { return nil })
	c.SetArgs([]string{"--turn-end", "--watch"})
	c.SilenceErrors, c.SilenceUsage = true, true
	if err := c.ExecuteContext(context.Background()); exitCode(err) != ExitUsage {
		t.Errorf("--turn-end --watch: %v, want a usage error", err)
	}
}

// A deliver in which a message failed exits 6, as a broadcast in which a
// target failed does: a script or hook must not read 0 as "all typed".
// A message still kept for later is marked … (not ✓: it was not typed).
func TestDeliverRunExitCodeAndMarks(t *testing.T) {
	fx := newRunFixture(t, "agent-alpha-ana", "agent-alpha-bob")
	for _, name := range []string{"ana", "bob"} {
		fx.srv.SetDialog("agent-alpha-"+name, true)
		if err := sendRun(context.Background(), options(t, fx, NewCmdSend, "alpha", name, "later")); err != nil {
			t.Fatalf("sendRun to %s: %v", name, err)
		}
	}
	fx.srv.SetDialog("agent-alpha-ana", false)
	fx.srv.SetDead("agent-alpha-ana")
	fx.out.Reset()
	err := deliverRun(context.Background(), options(t, fx, NewCmdDeliver, "alpha"))
	if code := exitCode(err); code != ExitPartial {
		t.Errorf("deliver with a failed message: exit %d (%v), want %d\n%s", code, err, ExitPartial, fx.out)
	}
	if !strings.Contains(fx.out.String(), "✗ ") {
		t.Errorf("the failed message is not marked ✗:\n%s", fx.out)
	}
	if !strings.Contains(fx.out.String(), "… deferred for alpha/bob") {
		t.Errorf("the deferral is not marked …:\n%s", fx.out)
	}
}

// broadcast "x" (the team forgotten, stdin empty) took "x" for the team
// and said "the message is empty"; it says what it took for what.
func TestBroadcastRunTeamForgotten(t *testing.T) {
	fx := newRunFixture(t, "agent-alpha-ana")
	err := broadcastRun(context.Background(), options(t, fx, NewCmdBroadcast, "standup"))
	if exitCode(err) != ExitUsage {
		t.Fatalf("broadcast \"standup\": exit %d (%v), want %d", exitCode(err), err, ExitUsage)
	}
	for _, want := range []string{`"standup" was taken for the TEAM`, "agentmsg broadcast TEAM MESSAGE"} {
		if !strings.Contains(errText(err), want) {
			t.Errorf("%q lacks %q", errText(err), want)
		}
	}
}

// shutdown names its request once: it printed "shutdown-request MSG_X:
// submitted to alpha/ana as MSG_X".
func TestShutdownRunNamesTheRequestOnce(t *testing.T) {
	fx := newRunFixture(t, "agent-alpha-ana")
	if err := shutdownRun(context.Background(), options(t, fx, NewCmdShutdown, "alpha", "ana")); err != nil {
		t.Fatalf("shutdownRun: %v\n%s", err, fx.errOut)
	}
	line := strings.TrimSpace(fx.out.String())
	id := line[strings.Index(line, "MSG_"):][:len("MSG_LEAD_")+8]
	if strings.Count(line, id) != 1 || !strings.HasPrefix(line, "shutdown-request submitted to alpha/ana as "+id) {
		t.Errorf("shutdown's report: %q", line)
	}
}

// sendLine runs send with args on fx and returns its stdout, stderr and
// exit code, the buffers emptied for the next run.
func sendLine(t *testing.T, fx *runFixture, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	err := sendRun(context.Background(), options(t, fx, NewCmdSend, args...))
	stdout, stderr = fx.out.String(), fx.errOut.String()
	fx.out.Reset()
	fx.errOut.Reset()
	return stdout, stderr, exitCode(err)
}

// A deferral says why in text as in --json: the agent not ready in time,
// or older messages waiting before it. A send that typed older messages
// first says which, and what became of each.
func TestSendRunSaysWhyAndWhatWentFirst(t *testing.T) {
	fx := newRunFixture(t, "agent-alpha-ana")
	fx.srv.SetDialog("agent-alpha-ana", true)
	out, _, code := sendLine(t, fx, "alpha", "ana", "first")
	if code != ExitOK || !strings.Contains(out, "deferred for alpha/ana as MSG_LEAD_") || !strings.Contains(out, "a dialog stayed open") {
		t.Fatalf("a deferral for a dialog (exit %d):\n%s", code, out)
	}
	first := strings.TrimSuffix(strings.Fields(out)[4], ":")
	out, _, _ = sendLine(t, fx, "alpha", "ana", "second")
	if !strings.Contains(out, "behind older messages") || strings.Contains(out, "a dialog stayed open; kept") ||
		!strings.Contains(out, "tried older message "+first+" first: deferred (a dialog stayed open)") {
		t.Fatalf("a deferral behind an older message must say so, and what became of the older one:\n%s", out)
	}
	fx.srv.SetDialog("agent-alpha-ana", false)
	fx.f.JSON = true
	out, _, code = sendLine(t, fx, "alpha", "ana", "third")
	fx.f.JSON = false
	doc := decodeJSON[struct {
		Verdict string
		Older   []struct{ ID, Verdict, Reason string }
	}](t, out)
	if code != ExitOK || doc.Verdict != "submitted" || len(doc.Older) != 2 || doc.Older[0].ID != first || doc.Older[0].Verdict != "submitted" || doc.Older[1].Verdict != "submitted" {
		t.Fatalf("--json of a send that typed two older messages first: %+v\n%s", doc, out)
	}
	fx.srv.SetDialog("agent-alpha-ana", true)
	sendLine(t, fx, "alpha", "ana", "fourth")
	fx.srv.SetDialog("agent-alpha-ana", false)
	out, _, _ = sendLine(t, fx, "alpha", "ana", "fifth")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "first: submitted") || !strings.HasPrefix(lines[1], "submitted to alpha/ana") {
		t.Fatalf("text of a send that typed an older message first: want the older one's line, then the new one's:\n%s", out)
	}
}

// A message typed as a pointer (one line and "agentmsg read ID") says so
// in text, as --json's pointer does.
func TestSendRunSaysAPointerWasTyped(t *testing.T) {
	fx := newRunFixture(t, "agent-alpha-ana")
	out, _, code := sendLine(t, fx, "--agent", "claude", "alpha", "ana", "line one\nline two\nline three\nline four\nline five")
	got := fx.srv.Received("agent-alpha-ana")
	if code != ExitOK || len(got) != 1 || !strings.Contains(got[0], "(full text: agentmsg read MSG_LEAD_") {
		t.Fatalf("setup: exit %d, ana received %q", code, got)
	}
	if !strings.Contains(out, "submitted to alpha/ana") || !strings.Contains(out, "typed as its first line and a pointer to the whole text (agentmsg read MSG_LEAD_") {
		t.Fatalf("a pointer send must say so:\n%s", out)
	}
}

// --while-busy that cannot apply to the agent is said, with why, in text
// and --json (doctor says it in its profile line).
func TestSendRunSaysWhileBusyDoesNotApply(t *testing.T) {
	fx := newRunFixture(t, "agent-alpha-ana")
	_, errOut, code := sendLine(t, fx, "--while-busy", "--agent", "generic", "alpha", "ana", "hi")
	if code != ExitOK || !strings.Contains(errOut, "--while-busy does not apply to alpha/ana: profile generic does not queue") {
		t.Fatalf("exit %d; stderr:\n%s", code, errOut)
	}
	fx.f.JSON = true
	out, _, _ := sendLine(t, fx, "--while-busy", "--agent", "generic", "alpha", "ana", "hi")
	if doc := decodeJSON[struct {
		WhileBusyIgnored string `json:"while_busy_ignored"`
	}](t, out); !strings.Contains(doc.WhileBusyIgnored, "profile generic does not queue") {
		t.Fatalf("--json:\n%s", out)
	}
	fx.f.JSON = false
	if _, errOut, _ := sendLine(t, fx, "--while-busy", "--agent", "claude", "alpha", "ana", "hi"); strings.Contains(errOut, "--while-busy") {
		t.Fatalf("claude queues: nothing to say\n%s", errOut)
	}
}

// list -v says which sessions named agent-... it left out, and why.
func TestListVerboseNamesSkippedSessions(t *testing.T) {
	fx := newRunFixture(t, "agent-alpha-ana", "agent-solo", "agent-Alpha-x")
	fx.f.Log.SetLevel(log.DebugLevel)
	opts := options(t, fx, NewCmdList)
	if err := listRun(context.Background(), opts); err != nil {
		t.Fatalf("listRun: %v\n%s", err, fx.errOut)
	}
	for _, want := range []string{"skipped session agent-solo: not agent-TEAM-NAME", "skipped session agent-Alpha-x: "} {
		if !strings.Contains(fx.errOut.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, fx.errOut)
		}
	}
	if strings.Contains(fx.errOut.String(), "agent-alpha-ana") {
		t.Errorf("an agent's session is not skipped:\n%s", fx.errOut)
	}
}
