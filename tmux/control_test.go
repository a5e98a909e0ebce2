package tmux

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/lock"
)

// startControl starts a control client of e's server, its lock beside the
// socket, and waits until it is attached; it is closed when the test ends.
func startControl(t testing.TB, e *Exec) *Control {
	t.Helper()
	needControl(t, e.Bin())
	ctl, err := StartControl(e.Server(), e.Bin(), lock.ForServer(e.Server().Socket, lock.Dir{Path: t.TempDir()}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ctl.Close(); err != nil {
			t.Error(err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ctl.WaitAttached(ctx); err != nil {
		t.Fatal(err)
	}
	return ctl
}

// needControl skips a test of the control client on a tmux that never
// gets one (ControlUnsafeError): the version matrix runs it on 3.7c.
func needControl(t testing.TB, bin string) {
	t.Helper()
	if v, err := BinaryVersion(context.Background(), bin); err != nil || !v.AtLeast(3, 7) {
		t.Skipf("tmux %s: no control client before 3.7 (ControlUnsafeError); scripts/test runs this on 3.7c", v)
	}
}

// Before 3.7 no control client ever attaches: every command list goes as
// a tmux process, and the Control says why.
func TestNoControlClientBefore37(t *testing.T) {
	e, raw := testServer(t)
	if v, _ := BinaryVersion(context.Background(), e.Bin()); v.AtLeast(3, 7) {
		t.Skipf("tmux %s attaches control clients", v)
	}
	ctl, err := StartControl(e.Server(), e.Bin(), lock.ForServer(e.Server().Socket, lock.Dir{Path: t.TempDir()}))
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.Close()
	if err := e.UseControl(ctl); err != nil {
		t.Fatal(err)
	}
	var unsafe *ControlUnsafeError
	waitFor(t, func() bool { return errors.As(ctl.Down(), &unsafe) })
	if out := raw("list-clients", "-F", "#{client_control_mode}"); strings.Contains(out, "1") {
		t.Fatalf("a control client attached: %q", out)
	}
	if _, err := e.Capture(context.Background(), "%0", 0); err != nil {
		t.Fatalf("a capture with no control client: %v", err)
	}
}

// controlled is e sending through a control client, and checks when the
// test ends that no command list went to a tmux process: none that carried
// text either, where the server can open our files (serverOpensOurFiles:
// not on Darwin, nor in the agentmsg_portable build).
func controlled(t *testing.T, e *Exec) *Exec {
	t.Helper()
	ctl := startControl(t, e)
	if err := e.UseControl(ctl); err != nil {
		t.Fatal(err)
	}
	before, textBefore := e.procs.Load(), e.textProcs.Load()
	t.Cleanup(func() {
		n := e.procs.Load() - before
		if !serverOpensOurFiles {
			n -= e.textProcs.Load() - textBefore
		}
		if n > 0 {
			t.Errorf("%d command lists went to tmux processes beside the control client", n)
		}
	})
	return e
}

// Every argument reaches tmux byte for byte through the control client's
// command line: nothing in it is a quote, an escape, a variable, a
// comment, a separator or the end of the line to tmux's parser.
func TestControlArgumentsArriveIntact(t *testing.T) {
	e, raw := testServer(t)
	ctl := startControl(t, e)
	for i, text := range []string{
		"-", "'", `"`, `\`, `\\'`, `a'b"c\d`, "trailing backslash\\",
		"$HOME ~ ~/x ${X} $", "#{pane_id} # not a comment", "a;", ";", `w\;`, "{ }", "}", "{",
		"%if 1", "%12", "%", "A=b", "=agent-x:", "line1\nline2\r\n", "\r", "\t\x01\x1b[201~\x7f",
		"é 世界", "\xff\xfe not UTF-8 \xff", "\x80\xc3", strings.Repeat("x'\n", 1000),
	} {
		buffer := fmt.Sprintf("agentmsg-test-%d", i)
		res, ok := ctl.run([][]string{{"set-buffer", "-b", buffer, "--", text}}, nil, true)
		if !ok || res.err != nil || res.exitCode != 0 {
			t.Errorf("set-buffer %q: %+v, sent %v", text, res, ok)
			continue
		}
		if got := raw("save-buffer", "-b", buffer, "-"); got != text {
			t.Errorf("set-buffer %q through the control client stored %q", text, got)
		}
	}
	// Random bytes, read back from a file the server writes.
	rng := rand.New(rand.NewPCG(1, 2))
	dir := t.TempDir()
	for i := range 300 {
		b := make([]byte, 1+rng.IntN(40))
		for j := range b {
			b[j] = byte(1 + rng.IntN(255))
		}
		file := filepath.Join(dir, fmt.Sprint(i))
		res, ok := ctl.run([][]string{{"set-buffer", "-b", "agentmsg-rand", "--", string(b)}, {"save-buffer", "-b", "agentmsg-rand", file}}, nil, true)
		if got, err := os.ReadFile(file); !ok || res.exitCode != 0 || err != nil || string(got) != string(b) {
			t.Errorf("set-buffer %q stored %q (%+v, %v)", b, got, res, err)
		}
	}
	// An empty argument is one, not none.
	if res, ok := ctl.run([][]string{{"display-message", "-p", ""}, {"display-message", "-p", "x"}}, nil, false); !ok || string(res.stdout) != "\nx\n" {
		t.Errorf("display-message -p '' = %+v", res)
	}
}

// A command list stops at its first failing command, in control mode as
// in a tmux process: what ran before it answered, its error kept, nothing
// after it run.
func TestControlListStopsAtFailure(t *testing.T) {
	e, raw := testServer(t)
	ctl := startControl(t, e)
	res, ok := ctl.run([][]string{
		{"display-message", "-p", "before"},
		{"capture-pane", "-p", "-t", "%999"},
		{"set-buffer", "-b", "agentmsg-after", "--", "never"},
	}, nil, true)
	if !ok || res.err != nil || res.exitCode != 1 || string(res.stdout) != "before\n" || classify(res.stderr) != ErrPaneNotFound {
		t.Fatalf("list with a failing command = %+v (sent %v): want exit 1, the first output, ErrPaneNotFound", res, ok)
	}
	if out := raw("list-buffers"); out != "" {
		t.Errorf("a command after the failure ran: buffers %q", out)
	}
	// The client is still in step: the next list gets its own answer.
	if res, ok := ctl.run([][]string{{"display-message", "-p", "next"}}, nil, false); !ok || string(res.stdout) != "next\n" {
		t.Errorf("next list = %+v", res)
	}
}

// A pinned view's server check fails the list before its paste, through
// the control client too.
func TestControlPinnedGuardStopsTheList(t *testing.T) {
	e, raw := testServer(t)
	c := controlled(t, e)
	ctx := context.Background()
	p, err := sessionPane(ctx, c, "agent-alpha-ana-2")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Pinned(p).Capture(ctx, p.ID, 0); err != nil {
		t.Fatalf("pinned to the server it runs on: %v", err)
	}
	other := p
	other.Server = Instance{PID: p.Server.PID + 1, Start: p.Server.Start}
	if err := c.Pinned(other).Paste(ctx, p.ID, "for another server"); !errors.Is(err, ErrServerReplaced) {
		t.Fatalf("paste pinned to another instance: %v, want ErrServerReplaced", err)
	}
	if out := raw("capture-pane", "-p", "-t", p.ID); strings.Contains(out, "for another server") {
		t.Fatalf("the text was typed:\n%s", out)
	}
	if out := raw("list-buffers"); out != "" {
		t.Errorf("buffers left: %q", out)
	}
}

// Calls made at once through the control client each get their own
// answer, failures in the middle of a list included.
func TestControlBatchedCalls(t *testing.T) {
	e, raw := testServer(t)
	c := controlled(t, e)
	ctx := context.Background()
	const n = 30
	panes := make([]string, n)
	for i := range panes {
		name := fmt.Sprintf("agent-batch-a%02d", i)
		raw("new-session", "-d", "-s", name, "-x", "80", "-y", "10", fmt.Sprintf("printf 'pane %d here\\n'; exec cat", i))
		p, err := sessionPane(ctx, c, name)
		if err != nil {
			t.Fatal(err)
		}
		panes[i] = p.ID
		waitFor(t, func() bool {
			lines, err := c.Capture(ctx, p.ID, 0)
			return err == nil && strings.Contains(strings.Join(lines, "\n"), fmt.Sprintf("pane %d here", i))
		})
	}
	errs := make(chan error, 3*n)
	for i, p := range panes {
		go func() {
			lines, err := c.Capture(ctx, p, 0)
			if err == nil && !strings.Contains(strings.Join(lines, "\n"), fmt.Sprintf("pane %d here", i)) {
				err = fmt.Errorf("capture of %s got another pane's screen: %q", p, lines)
			}
			errs <- err
		}()
		go func() {
			if _, err := c.Capture(ctx, "%9999", 0); !errors.Is(err, ErrPaneNotFound) {
				errs <- fmt.Errorf("capture of a missing pane: %v", err)
				return
			}
			errs <- nil
		}()
		go func() { errs <- c.Paste(ctx, p, fmt.Sprintf("text %d;", i)) }()
	}
	for range 3 * n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	for i, p := range panes {
		waitFor(t, func() bool {
			return strings.Contains(raw("capture-pane", "-p", "-t", p), fmt.Sprintf("text %d;", i))
		})
	}
}

// A server killed under the client: calls fail as no server (through
// processes), the client's process is gone, and a server started again
// at the socket gets a client again.
func TestControlServerKilledUnderIt(t *testing.T) {
	e, raw := testServer(t)
	c := e
	ctl := startControl(t, e)
	if err := c.UseControl(ctl); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	client := ctl.conn.Load().pid
	raw("kill-server")
	waitFor(t, func() bool { _, err := c.ListPanes(ctx); return errors.Is(err, ErrNoServer) })
	waitFor(t, func() bool { return !ctl.Attached() && gone(client) })
	if err := ctl.Down(); err == nil {
		t.Error("Down = nil with no server")
	}
	waitFor(t, func() bool {
		return exec.Command(e.Bin(), "-S", e.Server().Socket, "-f", "/dev/null", "new-session", "-d", "-s", "agent-t-new", "cat").Run() == nil
	})
	ctx2, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := ctl.WaitAttached(ctx2); err != nil {
		t.Fatal(err)
	}
	before := c.procs.Load()
	if _, err := sessionPane(ctx, c, "agent-t-new"); err != nil {
		t.Fatal(err)
	}
	if n := c.procs.Load() - before; n != 0 {
		t.Errorf("%d tmux processes after the client attached to the new server", n)
	}
}

// The session the client is attached to ends: tmux lets the client go,
// and another attaches to a session that is left.
func TestControlOutlivesItsSession(t *testing.T) {
	e, raw := testServer(t)
	ctl := startControl(t, e)
	first := ctl.conn.Load().pid
	attachedTo := func() string {
		for line := range strings.SplitSeq(raw("list-clients", "-F", "#{client_control_mode} #{session_id}"), "\n") {
			if id, ok := strings.CutPrefix(line, "1 "); ok {
				return id
			}
		}
		return ""
	}
	session := attachedTo()
	if session == "" {
		t.Fatal("no control client listed")
	}
	raw("kill-session", "-t", session)
	// Attached on our side comes a moment before the server lists it.
	waitFor(t, func() bool {
		now := attachedTo()
		return gone(first) && ctl.Attached() && now != "" && now != session
	})
	if res, ok := ctl.run([][]string{{"display-message", "-p", "still here"}}, nil, false); !ok || string(res.stdout) != "still here\n" {
		t.Fatalf("after reattaching: %+v", res)
	}
}

// A control client attaching while other clients make sessions (each a
// notification to every control client): on 3.2a to 3.6a this crashed the
// server (ControlUnsafeError); where a client attaches at all, the server
// must outlive it.
func TestControlAttachesBesideNewSessions(t *testing.T) {
	e, raw := testServer(t)
	needControl(t, e.Bin())
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			name := fmt.Sprintf("agent-churn-a%d", i)
			if err := exec.Command(e.Bin(), "-S", e.Server().Socket, "new-session", "-d", "-s", name, "cat").Run(); err != nil {
				done <- fmt.Errorf("new-session %s: %w", name, err)
				return
			}
			_ = exec.Command(e.Bin(), "-S", e.Server().Socket, "kill-session", "-t", "="+name).Run()
		}
	}()
	for range 15 {
		ctl, err := StartControl(e.Server(), e.Bin(), lock.ForServer(e.Server().Socket, lock.Dir{Path: t.TempDir()}))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = ctl.WaitAttached(ctx)
		cancel()
		if cerr := ctl.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	raw("has-session", "-t", "=agent-alpha-ana-2")
}

// Calls that wait while a list runs go through a control client together,
// in lists far longer than a tmux process takes: each list is a turn of
// the server's loop, which polls every pane (0.55 ms with 500 panes), and
// a broadcast to 500 agents sent 150 lists of about 20 calls.
func TestControlListsAreLong(t *testing.T) {
	e, _ := testServer(t)
	c := controlled(t, e)
	ctx := context.Background()
	panes, err := c.SessionPanes(ctx, "agent-alpha-ana-2")
	if err != nil {
		t.Fatal(err)
	}
	// A list that runs until the test lets it end: the calls below queue.
	release := holdLists(t, c)
	before := c.lists.Load()
	const n = 150 // 4 KB lists would take 8 of them
	errs := make(chan error, n)
	for range n {
		go func() {
			_, err := c.Pinned(panes[0]).Capture(ctx, panes[0].ID, 0)
			errs <- err
		}()
	}
	waitFor(t, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.queue) == n
	})
	release()
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if lists := c.lists.Load() - before; lists > 2 {
		t.Errorf("%d calls that waited together took %d command lists", n, lists)
	}
}

// A list made long for a control client that has left by the time it
// runs is not sent to a tmux process, which would refuse it as too long:
// its calls go again, in lists a process takes.
func TestLongListWithoutControlGoesAgain(t *testing.T) {
	e, _ := testServer(t)
	var list []*call
	for range 60 { // about 7 KB
		list = append(list, &call{ctx: context.Background(), cmds: [][]string{{"display-message", "-p", strings.Repeat("x", 60)}}, done: make(chan callResult, 1)})
	}
	before := e.procs.Load()
	if again := e.runList(list); len(again) != len(list) {
		t.Fatalf("%d of %d calls to go again", len(again), len(list))
	}
	if procs := e.procs.Load() - before; procs != 0 {
		t.Errorf("%d tmux processes for a list too long for one", procs)
	}
	// One call alone always goes, however long.
	if again := e.runList(list[:1]); len(again) != 0 {
		t.Fatalf("a call alone went again")
	}
	if r := <-list[0].done; r.err != nil || strings.TrimSpace(string(r.out)) != strings.Repeat("x", 60) {
		t.Errorf("the call alone: %q, %v", r.out, r.err)
	}
}

// A command list checks the server once for all the calls pinned to it
// (it runs in one server process from start to end), and a call pinned to
// another instance still gets a check of its own, which fails: in one list
// of calls pinned to this server, to a replaced one and to this one again,
// only the second fails and nothing of it runs. Through a control client
// no call carries a marker line: each command's answer is a block of its
// own.
func TestOneServerCheckPerList(t *testing.T) {
	e, raw := testServer(t)
	c := controlled(t, e)
	ctx := context.Background()
	p, err := sessionPane(ctx, c, "agent-alpha-ana-2")
	if err != nil {
		t.Fatal(err)
	}
	other := p
	other.Server = Instance{PID: p.Server.PID + 1, Start: p.Server.Start}
	a, b := &call{pin: &p.Server}, &call{pin: &other.Server}
	cmds, _, _ := listCommands([]*call{a, {}, {pin: &p.Server}, b, {pin: &p.Server}}, "")
	if len(cmds) != 3 || !a.guarded || !b.guarded {
		t.Errorf("list %q: want the guards of the two servers alone, no markers", cmds)
	}
	// The three calls wait together behind a list that runs until the
	// test lets it end.
	release := holdLists(t, c)
	errs := make([]chan error, 3)
	for i, pin := range []Pane{p, other, p} {
		errs[i] = make(chan error, 1)
		go func() { errs[i] <- c.Pinned(pin).Paste(ctx, p.ID, fmt.Sprintf("text %d", i)) }()
		waitFor(t, func() bool { c.mu.Lock(); defer c.mu.Unlock(); return len(c.queue) == i+1 })
	}
	release()
	for i, want := range []error{nil, ErrServerReplaced, nil} {
		if err := <-errs[i]; !errors.Is(err, want) && err != want {
			t.Errorf("paste %d: %v, want %v", i, err, want)
		}
	}
	waitFor(t, func() bool {
		out := raw("capture-pane", "-p", "-t", p.ID)
		return strings.Contains(out, "text 0") && strings.Contains(out, "text 2")
	})
	if out := raw("capture-pane", "-p", "-t", p.ID); strings.Contains(out, "text 1") {
		t.Errorf("the paste pinned to a replaced server was typed:\n%s", out)
	}
}

// A call whose command runs others (if-shell, as Pinned's first mark of a
// server) gets their answers too, as blocks of their own: it goes in a
// list of its own, and the calls that waited with it get their own
// answers (a daemon's first sends got another call's answer: "tmux's
// answer lacked its markers").
func TestACallThatRunsOthersGoesAlone(t *testing.T) {
	e, _ := testServer(t)
	c := controlled(t, e)
	ctx := context.Background()
	release := holdLists(t, c)
	type answer struct {
		out string
		err error
	}
	got := make([]chan answer, 4)
	for i := range got {
		got[i] = make(chan answer, 1)
		go func() {
			var out []byte
			var err error
			if i == 1 {
				out, err = c.submit(ctx, &call{alone: true, cmds: [][]string{{"if-shell", "-F", "1", "display-message -p nested"}}})
			} else {
				out, err = c.run(ctx, "display-message", "-p", fmt.Sprintf("call %d", i))
			}
			got[i] <- answer{string(out), err}
		}()
		waitFor(t, func() bool { c.mu.Lock(); defer c.mu.Unlock(); return len(c.queue) == i+1 })
	}
	release()
	for i, want := range []string{"call 0\n", "nested\n", "call 2\n", "call 3\n"} {
		if a := <-got[i]; a.err != nil || a.out != want {
			t.Errorf("call %d: %q, %v; want %q", i, a.out, a.err, want)
		}
	}
}

// holdLists runs a command list that lasts until release is called, so
// that the calls made meanwhile wait together for the next. The test's
// end releases it too (a tmux server waits for its run-shell jobs).
func holdLists(t *testing.T, c *Exec) (release func()) {
	t.Helper()
	dir := t.TempDir()
	gate := filepath.Join(dir, "open")
	held := make(chan error, 1)
	running := c.lists.Load() + 1
	go func() {
		_, err := c.run(context.Background(), "run-shell", "while [ ! -e '"+gate+"' ] && [ -d '"+dir+"' ]; do sleep 0.01; done")
		held <- err
	}()
	var once sync.Once
	release = func() {
		once.Do(func() {
			if err := os.WriteFile(gate, nil, 0o600); err != nil {
				t.Error(err)
			}
			if err := <-held; err != nil {
				t.Error(err)
			}
		})
	}
	t.Cleanup(release)
	waitFor(t, func() bool { return c.lists.Load() == running })
	return release
}

// Through a control client, pastes go in command lists with other calls
// (a broadcast's), and each call still gets its own answer: a paste into a
// dead pane says so, one into a live pane pastes, and the captures beside
// them read their own panes (Paste's if-shell runs two commands in either
// branch, call.inserted).
func TestControlPastesBesideOtherCalls(t *testing.T) {
	e, raw := testServer(t)
	raw("set-option", "-g", "remain-on-exit", "on")
	raw("new-session", "-d", "-s", "agent-t-gone", "true")
	waitFor(t, func() bool {
		return strings.TrimSpace(raw("display-message", "-p", "-t", "=agent-t-gone:", "#{pane_dead}")) == "1"
	})
	ctx := context.Background()
	dead, err := e.SessionPanes(ctx, "agent-t-gone")
	if err != nil || len(dead) != 1 {
		t.Fatalf("panes %+v, %v", dead, err)
	}
	live, err := e.SessionPanes(ctx, "agent-alpha-ana-2")
	if err != nil || len(live) != 1 {
		t.Fatalf("panes %+v, %v", live, err)
	}
	c := controlled(t, e)
	release := holdLists(t, c) // what follows waits, and goes as one list
	var wg sync.WaitGroup
	errs := make([]error, 4)
	var screen []string
	wg.Go(func() { errs[0] = c.Pinned(dead[0]).Paste(ctx, dead[0].ID, "into the dead") })
	wg.Go(func() { errs[1] = c.Pinned(live[0]).Paste(ctx, live[0].ID, "into the living") })
	wg.Go(func() { screen, errs[2] = c.Pinned(dead[0]).Capture(ctx, dead[0].ID, 0) })
	wg.Go(func() { errs[3] = c.Pinned(dead[0]).Paste(ctx, dead[0].ID, "into the dead again") })
	time.Sleep(100 * time.Millisecond) // all four queued behind the held list
	lists := c.lists.Load()
	release()
	wg.Wait()
	if !errors.Is(errs[0], ErrPaneDead) || !errors.Is(errs[3], ErrPaneDead) {
		t.Errorf("pastes into the dead pane: %v, %v; want ErrPaneDead", errs[0], errs[3])
	}
	if errs[1] != nil || errs[2] != nil {
		t.Fatalf("paste into the live pane: %v; capture: %v", errs[1], errs[2])
	}
	if !slices.ContainsFunc(screen, func(l string) bool { return strings.Contains(l, "Pane is dead") }) {
		t.Errorf("the capture beside the pastes read %q, not the dead pane", screen)
	}
	// Together; where the control client takes no text (Darwin, the
	// agentmsg_portable build), the pastes go in lists of their own, by
	// process, and the capture may fall between them.
	want := int64(2)
	if !serverOpensOurFiles {
		want = 3
	}
	if n := c.lists.Load() - lists; n > want {
		t.Errorf("the four calls took %d command lists, want them together (at most %d)", n, want)
	}
	waitFor(t, func() bool { return strings.Contains(raw("capture-pane", "-p", "-t", live[0].ID), "into the living") })
	if out := raw("list-buffers"); strings.Contains(out, "agentmsg-") {
		t.Errorf("buffers left: %s", out)
	}
}
