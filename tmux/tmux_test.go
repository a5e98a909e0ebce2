package tmux

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/internal/procs"
)

// testServer starts a private tmux server on a short socket path and
// removes it when the test ends.
func testServer(t testing.TB) (*Exec, func(args ...string) string) {
	t.Helper()
	bin := testBin(t)
	dir, err := os.MkdirTemp("", "amt")
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "s")
	raw := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(bin, append([]string{"-S", sock, "-f", "/dev/null"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v: %s", args, err, out)
		}
		return string(out)
	}
	t.Cleanup(func() {
		_ = exec.Command(bin, "-S", sock, "kill-server").Run()
		os.RemoveAll(dir)
	})
	raw("new-session", "-d", "-s", "agent-alpha-ana-2", "-x", "120", "-y", "30", "cat")
	// Names that could shift fields: a tab (tmux 3.7 refuses it), the
	// octal escape that tmux 3.4 prints for a control character, a space.
	if _, err := exec.Command(bin, "-S", sock, "new-session", "-d", "-s", "odd\tname", "cat").CombinedOutput(); err != nil {
		raw("new-session", "-d", "-s", `odd\037 %9 1 0 0 1 1 1 1 $0 name`, "cat")
	}
	raw("select-pane", "-t", "=agent-alpha-ana-2:", "-T", "title -:- with the separator gotmux splits on")
	// tmux starts each cat through the shell, which then becomes cat: a
	// test that compares two looks must not see that change between them
	// (CI on 3.4: "nothing drawn, yet the fingerprint changed", bash then
	// cat).
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		cmds := strings.Fields(raw("list-panes", "-a", "-F", "#{pane_current_command}"))
		if !slices.ContainsFunc(cmds, func(c string) bool { return c != "cat" }) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sessions' cat never started:\n%s", raw("list-panes", "-a", "-F", "#{pane_current_command}"))
		}
	}
	e, err := NewExec(Server{Socket: sock}, bin)
	if err != nil {
		t.Fatal(err)
	}
	return e, raw
}

// testBin is the tmux under test: $AGENTMSG_TMUX (the version matrix of
// scripts/test) or the one on $PATH.
func testBin(t testing.TB) string {
	t.Helper()
	bin, err := FindBinary(os.Getenv("AGENTMSG_TMUX"))
	if err != nil {
		t.Fatalf("%v: scripts/test installs tmux", err)
	}
	return bin
}

type clientCase struct {
	name string
	make func(t *testing.T, e *Exec) Client
}

var clients = []clientCase{
	{"exec", func(t *testing.T, e *Exec) Client { return e }},
	{"control", func(t *testing.T, e *Exec) Client { return controlled(t, e) }},
}

func TestClient(t *testing.T) {
	for _, cc := range clients {
		t.Run(cc.name, func(t *testing.T) {
			e, raw := testServer(t)
			c := cc.make(t, e)
			ctx := context.Background()

			// Exact resolution: agent-alpha-ana must not find agent-alpha-ana-2.
			if _, err := sessionPane(ctx, c, "agent-alpha-ana"); !errors.Is(err, ErrSessionNotFound) {
				t.Fatalf("SessionPane(agent-alpha-ana) = %v, want ErrSessionNotFound", err)
			}
			// The pane's command is tmux's own until the child has exec'd
			// cat: on a loaded machine that takes a moment.
			var p Pane
			waitFor(t, func() bool {
				var err error
				p, err = sessionPane(ctx, c, "agent-alpha-ana-2")
				return err == nil && p.Command == "cat"
			})
			if !strings.HasPrefix(p.ID, "%") || p.Width <= 0 || p.Height <= 0 { // tmux 3.2a sizes a detached session 80x23
				t.Fatalf("SessionPane = %+v", p)
			}
			panes, err := c.ListPanes(ctx)
			if err != nil || len(panes) != 2 {
				t.Fatalf("ListPanes = %+v, %v (a -:- title or an odd session name must not break it)", panes, err)
			}

			// Text as data: everything tmux could misread arrives as typed.
			text := "-x 'q' \"d\" #{pane_id} é 世界 end;"
			if err := c.Paste(ctx, p.ID, text); err != nil {
				t.Fatalf("Paste: %v", err)
			}
			if err := c.SendBytes(ctx, p.ID, '\r'); err != nil {
				t.Fatalf("SendBytes: %v", err)
			}
			deadline := time.Now().Add(5 * time.Second)
			for {
				lines, err := c.Capture(ctx, p.ID, 0)
				if err != nil {
					t.Fatalf("Capture: %v", err)
				}
				if strings.Count(strings.Join(lines, "\n"), text) == 2 { // the tty echo and cat's copy
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("screen never showed the text twice:\n%s", strings.Join(lines, "\n"))
				}
				time.Sleep(10 * time.Millisecond)
			}
			if out := raw("list-buffers"); out != "" {
				t.Errorf("buffers left behind: %q", out)
			}

			raw("copy-mode", "-t", p.ID)
			if err := c.LeaveMode(ctx, p.ID); err != nil {
				t.Fatalf("LeaveMode: %v", err)
			}
			if err := c.LeaveMode(ctx, p.ID); err != nil {
				t.Fatalf("LeaveMode when in no mode: %v", err)
			}
			if p2, _ := sessionPane(ctx, c, "agent-alpha-ana-2"); p2.InMode {
				t.Errorf("still in copy mode")
			}

			_, err = c.Capture(ctx, "%999", 0)
			var te *Error
			if !errors.Is(err, ErrPaneNotFound) || !errors.As(err, &te) || !strings.Contains(te.Stderr, "can't find pane") {
				t.Errorf("Capture of a missing pane: %v, want ErrPaneNotFound keeping tmux's words", err)
			}
			if info, err := c.Info(ctx); err != nil || !strings.HasPrefix(info.Version, "3.") {
				t.Errorf("Info = %+v, %v", info, err)
			}
		})
	}
}

func TestNoServer(t *testing.T) {
	dir := t.TempDir()
	e, err := NewExec(Server{Socket: filepath.Join(dir, "none")}, testBin(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.ListPanes(context.Background()); !errors.Is(err, ErrNoServer) {
		t.Errorf("ListPanes without a server: %v, want ErrNoServer", err)
	}
}

func TestResolveServer(t *testing.T) {
	env := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	uid := os.Getuid()
	tmp := t.TempDir()
	tests := []struct {
		path, name string
		env        map[string]string
		want       string
		wantErr    bool
	}{
		{path: "/tmp/x/s", want: "/tmp/x/s"},
		{name: "work", env: map[string]string{"TMUX_TMPDIR": tmp}, want: filepath.Join(tmp, fmt.Sprintf("tmux-%d", uid), "work")},
		// tmux itself fails where it cannot make its socket directory.
		{name: "work", env: map[string]string{"TMUX_TMPDIR": "/nonexistent-dir"}, wantErr: true},
		{env: map[string]string{"TMUX": "/tmp/caller/sock,123,0"}, want: "/tmp/caller/sock"},
		{env: map[string]string{"TMUX_TMPDIR": tmp}, want: filepath.Join(tmp, fmt.Sprintf("tmux-%d", uid), "default")},
		{path: "/a", name: "b", wantErr: true},
		{name: "a/b", wantErr: true},
	}
	for _, tt := range tests {
		got, err := ResolveServer(tt.path, tt.name, env(tt.env))
		if (err != nil) != tt.wantErr || (err == nil && got.Socket != tt.want) {
			t.Errorf("ResolveServer(%q, %q, %v) = %q, %v; want %q", tt.path, tt.name, tt.env, got.Socket, err, tt.want)
		}
	}
}

// tmux's socket directory is checked as tmux checks it before agentmsg
// names a server in it by path (-S, with which tmux checks nothing): one
// that other users may enter, or that is theirs, holds a server that may
// be theirs (issue 29).
func TestResolveServerRefusesASocketDirOthersControl(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, dir string)
		why   string
	}{
		{"open to others", func(t *testing.T, dir string) { os.Mkdir(dir, 0o700); os.Chmod(dir, 0o777) }, "open to other users (mode 0777)"},
		{"a file", func(t *testing.T, dir string) { os.WriteFile(dir, nil, 0o600) }, "is not a directory"},
		{"a symbolic link", func(t *testing.T, dir string) { os.Symlink(t.TempDir(), dir) }, "is not a directory"},
		{"another user's", func(t *testing.T, dir string) {
			if os.Geteuid() != 0 {
				t.Skip("only root can make a directory that belongs to another user")
			}
			os.Mkdir(dir, 0o700)
			os.Chown(dir, 65534, 65534)
		}, "owned by uid 65534"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			tc.setup(t, filepath.Join(base, fmt.Sprintf("tmux-%d", os.Getuid())))
			lookup := func(k string) (string, bool) {
				if k == "TMUX_TMPDIR" {
					return base, true
				}
				return "", false
			}
			for _, name := range []string{"", "work"} {
				_, err := ResolveServer("", name, lookup)
				if !errors.Is(err, ErrUnsafeSocketDir) || !strings.Contains(err.Error(), tc.why) {
					t.Errorf("-L %q: %v, want ErrUnsafeSocketDir saying %q", name, err, tc.why)
				}
			}
		})
	}
}

func TestCommandNames(t *testing.T) {
	cl := &call{cmds: splitCommands([]string{"load-buffer", "-b", "x", "secret text", ";", "paste-buffer", "-t", "%1"})}
	if got := callNames(cl); got != "load-buffer+paste-buffer" {
		t.Errorf("callNames = %q", got)
	}
}

func TestSessions(t *testing.T) {
	e, _ := testServer(t)
	ctx := context.Background()
	pane, pid, err := e.NewSession(ctx, "agent-alpha-ana", t.TempDir(), []string{"AGENTMSG_FROM=ana"}, []string{"sleep", "300"})
	if err != nil || !strings.HasPrefix(pane, "%") || pid <= 0 {
		t.Fatalf("NewSession = %q, %d, %v", pane, pid, err)
	}
	if _, _, err := e.NewSession(ctx, "agent-alpha-ana", "", nil, []string{"sleep", "300"}); !errors.Is(err, ErrDuplicateSession) {
		t.Errorf("second NewSession: %v, want ErrDuplicateSession", err)
	}
	// Exact: agent-alpha-an is no session, though tmux would prefix-match it.
	for name, want := range map[string]bool{"agent-alpha-ana": true, "agent-alpha-an": false, "agent-alpha-ana-2": true} {
		if got, err := e.HasSession(ctx, name); err != nil || got != want {
			t.Errorf("HasSession(%q) = %v, %v; want %v", name, got, err, want)
		}
	}
	acts, err := e.Activity(ctx)
	if err != nil || acts["agent-alpha-ana"].IsZero() {
		t.Errorf("Activity = %v, %v", acts, err)
	}
	if err := e.KillSession(ctx, "agent-alpha-ana"); err != nil {
		t.Fatal(err)
	}
	if err := e.KillSession(ctx, "agent-alpha-ana"); err != nil {
		t.Errorf("killing a session already gone: %v", err)
	}
	if ok, _ := e.HasSession(ctx, "agent-alpha-ana"); ok {
		t.Error("still there after KillSession")
	}
}

// Calls made at once share tmux processes, and each gets its own answer,
// including the failures in the middle of a shared command list.
func TestBatchedCalls(t *testing.T) {
	e, raw := testServer(t)
	ctx := context.Background()
	const n = 40
	panes := make([]string, n)
	for i := range panes {
		name := fmt.Sprintf("agent-batch-a%02d", i)
		raw("new-session", "-d", "-s", name, "-x", "80", "-y", "10", fmt.Sprintf("printf 'pane %d here\\n'; exec cat", i))
		p, err := sessionPane(ctx, e, name)
		if err != nil {
			t.Fatal(err)
		}
		panes[i] = p.ID
	}
	for i, p := range panes {
		waitFor(t, func() bool {
			lines, err := e.Capture(ctx, p, 0)
			return err == nil && strings.Contains(strings.Join(lines, "\n"), fmt.Sprintf("pane %d here", i))
		})
	}
	before := e.procs.Load()
	errs := make(chan error, 3*n)
	for i, p := range panes {
		go func() {
			lines, err := e.Capture(ctx, p, 0)
			if err == nil && !strings.Contains(strings.Join(lines, "\n"), fmt.Sprintf("pane %d here", i)) {
				err = fmt.Errorf("capture of %s got another pane's screen: %q", p, lines)
			}
			errs <- err
		}()
		go func() {
			_, err := e.Capture(ctx, "%9999", 0)
			if !errors.Is(err, ErrPaneNotFound) {
				errs <- fmt.Errorf("capture of a missing pane: %v", err)
				return
			}
			errs <- nil
		}()
		go func() {
			_, err := sessionPane(ctx, e, fmt.Sprintf("agent-batch-a%02d", i))
			errs <- err
		}()
	}
	for range 3 * n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if procs := e.procs.Load() - before; procs >= 3*n {
		t.Errorf("%d calls took %d tmux processes: nothing was batched", 3*n, procs)
	} else {
		t.Logf("%d calls in %d tmux processes", 3*n, procs)
	}
}

// An argument ending in ";" is data, not tmux's command separator.
func TestArgumentEndingInSemicolon(t *testing.T) {
	e, _ := testServer(t)
	for _, s := range []string{"x;", `w\;`, "a b ;"} {
		out, err := e.run(context.Background(), "display-message", "-p", s)
		if err != nil || strings.TrimSuffix(string(out), "\n") != s {
			t.Errorf("display-message -p %q = %q, %v", s, out, err)
		}
	}
}

func waitFor(t testing.TB, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestVersion(t *testing.T) {
	for _, tt := range []struct {
		v            Version
		atLeast37    bool
		crashHazard  bool
		unknownFirst bool
	}{
		{"3.2a", false, true, false},
		{"3.3a", false, true, false},
		{"3.6a", false, true, false},
		{"3.7", true, false, false},
		{"3.7c", true, false, false},
		{"3.10", true, false, false},
		{"next-3.8", true, false, false},
		{"master", true, false, false},
		{"openbsd-7.6", false, true, true},
	} {
		if got := tt.v.AtLeast(3, 7); got != tt.atLeast37 {
			t.Errorf("%s.AtLeast(3, 7) = %v", tt.v, got)
		}
		hs := tt.v.Hazards()
		crash := false
		for _, h := range hs {
			crash = crash || strings.Contains(h.Summary, "segfaults")
		}
		if crash != tt.crashHazard && !tt.unknownFirst {
			t.Errorf("%s: hazards %+v, crash hazard %v want %v", tt.v, hs, crash, tt.crashHazard)
		}
		if tt.unknownFirst && (len(hs) == 0 || !strings.Contains(hs[0].Summary, "unknown tmux version")) {
			t.Errorf("%s: hazards %+v, want an unknown-version warning", tt.v, hs)
		}
	}
}

// Inside a tmux pane with no tmux configured, agentmsg runs the binary its
// own server runs: an agent's $PATH may hold another release, whose client
// cannot talk to that server.
func TestBinaryOfTheServerYouRunIn(t *testing.T) {
	e, _ := testServer(t)
	info, err := e.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	exe, err := procs.Exe(info.PID)
	if err != nil {
		t.Fatalf("the server's binary: %v", err)
	}
	env := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	inside := env(map[string]string{"TMUX": fmt.Sprintf("%s,%d,0", e.Server().Socket, info.PID), "TMUX_PANE": "%0", "PATH": ""})
	if c := CallerFrom(inside); c.Socket != e.Server().Socket || c.ServerPID != info.PID || c.Pane != "%0" || !c.In(e.Server()) {
		t.Errorf("CallerFrom = %+v", c)
	}
	if got, why, err := Binary("", e.Server(), inside); err != nil || got != exe || !strings.Contains(why, "server you run in") {
		t.Errorf("Binary inside the server = %q (%s), %v; want %q", got, why, err, exe)
	}
	if got, why, err := Binary(exe, Server{Socket: "/elsewhere"}, inside); err != nil || got != exe || why != "configured" {
		t.Errorf("Binary configured = %q (%s), %v", got, why, err)
	}
	if got, _, _ := Binary("", Server{Socket: "/another/server"}, inside); got == exe && !strings.HasPrefix(exe, "/usr/bin") {
		t.Errorf("Binary for another server took this server's binary %q", got)
	}
	if c := CallerFrom(env(nil)); c != (Caller{}) {
		t.Errorf("CallerFrom outside tmux = %+v", c)
	}
}

func TestWatchCommand(t *testing.T) {
	for _, tt := range []struct{ socket, session, want string }{
		{"/tmp/am1/sock", "agent-alpha-ana", "tmux -S /tmp/am1/sock attach -r -t =agent-alpha-ana"},
		{"/tmp/my dir/it's", "agent-a-b", `tmux -S '/tmp/my dir/it'\''s' attach -r -t =agent-a-b`},
		{"/s", "x;rm -rf ~", `tmux -S /s attach -r -t '=x;rm -rf ~'`},
	} {
		if got := WatchCommand(Server{Socket: tt.socket}, tt.session); got != tt.want {
			t.Errorf("WatchCommand(%q, %q) = %s, want %s", tt.socket, tt.session, got, tt.want)
		}
	}
}

// The stdin path that a tmux before 3.2 gets: several pastes at once, one
// per command list, each arriving whole in its own pane.
func TestPasteOnStdinForOldTmux(t *testing.T) {
	e, raw := testServer(t)
	e.oldPaste.Store(pasteOld)
	ctx := context.Background()
	const n = 6
	panes := make([]string, n)
	for i := range panes {
		name := fmt.Sprintf("agent-old-a%d", i)
		raw("new-session", "-d", "-s", name, "-x", "80", "-y", "10", "cat")
		p, err := sessionPane(ctx, e, name)
		if err != nil {
			t.Fatal(err)
		}
		panes[i] = p.ID
	}
	errs := make(chan error, n)
	for i, p := range panes {
		go func() { errs <- e.Paste(ctx, p, fmt.Sprintf("text for pane %d;", i)) }()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for i, p := range panes {
		waitFor(t, func() bool {
			lines, err := e.Capture(ctx, p, 0)
			return err == nil && strings.Contains(strings.Join(lines, "\n"), fmt.Sprintf("text for pane %d;", i))
		})
	}
}

// The server's version comes with a pane lookup, so a paste needs no
// tmux -V of its own.
func TestPaneLookupLearnsTheServerVersion(t *testing.T) {
	e, _ := testServer(t)
	// A binary that says when it is asked its version: a list without
	// text never needs it, and the lookup tells it anyway (asking first
	// cost every command-line send a tmux process).
	dir := t.TempDir()
	asked := filepath.Join(dir, "asked")
	wrapper := filepath.Join(dir, "tmux")
	script := "#!/bin/sh\n[ \"$1\" = -V ] && echo >>" + asked + "\nexec " + e.Bin() + " \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	w, err := NewExec(e.Server(), wrapper)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := w.SessionPanesScreen(context.Background(), "agent-alpha-ana-2"); err != nil {
		t.Fatal(err)
	}
	if got := w.oldPaste.Load(); got == pasteUnknown {
		t.Fatal("the server's version was not noted")
	}
	if _, err := os.Stat(asked); err == nil {
		t.Error("the binary was asked its version (tmux -V) before a lookup that tells it")
	}
}

// sessionPane is the one pane of session.
func sessionPane(ctx context.Context, c Client, session string) (Pane, error) {
	panes, err := c.SessionPanes(ctx, session)
	if err != nil {
		return Pane{}, err
	}
	if len(panes) != 1 {
		return Pane{}, fmt.Errorf("%s has %d panes, want 1", session, len(panes))
	}
	return panes[0], nil
}

// A server killed while it runs a command list (kill-server from another
// client) leaves the client to exit 0 with nothing more printed: the calls
// it never finished failed because the server went, not for an unknown
// reason (CI: a sender waiting for ana's readiness said failed with "exit
// status 0" when her server was replaced, and its message was lost to
// deliver).
func TestAListCutShortWithExitZeroIsNoServer(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "tmux")
	script := "#!/bin/sh\nif [ \"$1\" = -V ]; then echo 'tmux 3.3a'; fi\nexit 0\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	e, err := NewExec(Server{Socket: filepath.Join(dir, "sock")}, bin)
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.ListPanes(context.Background())
	if !errors.Is(err, ErrNoServer) {
		t.Errorf("a list cut short, exit 0: %v, want ErrNoServer", err)
	}
}

// Changes stays the same while nothing is drawn and changes with output,
// a new pane or a new window, and newest is the last output's second.
func TestChangesSeesOutputAndNewPanes(t *testing.T) {
	e, raw := testServer(t)
	ctx := context.Background()
	pane, _, err := e.NewSession(ctx, "agent-alpha-ana", t.TempDir(), nil, []string{"sh", "-c", "read x; echo got $x; sleep 300"})
	if err != nil {
		t.Fatal(err)
	}
	// Until its program runs, a new pane's command is tmux's own child
	// (seen on 3.7c in CI: "tmux", then "sh"), which the fingerprint holds.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		panes, err := e.ListPanes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if i := slices.IndexFunc(panes, func(p Pane) bool { return p.ID == pane }); i >= 0 && panes[i].Command == "sh" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the new pane's sh never ran: %+v", panes)
		}
	}
	fp, newest, err := e.Changes(ctx)
	if err != nil || fp == "" || newest.IsZero() {
		t.Fatalf("Changes = %q, %v, %v", fp, newest, err)
	}
	if again, _, _ := e.Changes(ctx); again != fp {
		t.Errorf("nothing drawn, yet the fingerprint changed:\n%s\n%s", fp, again)
	}
	// Output a second later moves the window's activity.
	time.Sleep(1100 * time.Millisecond)
	if err := e.Paste(ctx, pane, "hello\n"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		now, n, _ := e.Changes(ctx)
		if now != fp && n.After(newest) {
			fp = now
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("output not seen: %q, newest %v", now, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	raw("new-window", "-d", "-t", "=agent-alpha-ana:", "sleep", "300")
	if now, _, _ := e.Changes(ctx); now == fp {
		t.Errorf("a new window, and the fingerprint is the same: %q", now)
	}
}

// A pane whose program has exited and that stays (remain-on-exit) is never
// pasted into: tmux 3.2a and 3.3a end their server on a bracketed paste
// into one (3.4 and newer refuse it). Paste says ErrPaneDead, the server
// lives, and no buffer of ours is left.
func TestPasteNeverGoesIntoADeadPane(t *testing.T) {
	e, raw := testServer(t)
	ctx := context.Background()
	raw("set-option", "-g", "remain-on-exit", "on")
	raw("new-session", "-d", "-s", "agent-t-gone", "true")
	waitFor(t, func() bool {
		return strings.TrimSpace(raw("display-message", "-p", "-t", "=agent-t-gone:", "#{pane_dead}")) == "1"
	})
	panes, err := e.SessionPanes(ctx, "agent-t-gone")
	if err != nil || len(panes) != 1 {
		t.Fatalf("panes %+v, %v", panes, err)
	}
	for _, c := range []Client{e, e.Pinned(panes[0])} {
		if err := c.Paste(ctx, panes[0].ID, "into the dead"); !errors.Is(err, ErrPaneDead) {
			t.Errorf("paste into a dead pane: %v, want ErrPaneDead", err)
		}
	}
	if _, err := e.Info(ctx); err != nil {
		t.Fatalf("the server after the pastes: %v", err)
	}
	if out := raw("list-buffers"); strings.Contains(out, "agentmsg-") {
		t.Errorf("buffers left: %s", out)
	}
	// A live pane next to it still gets its paste.
	live, err := e.SessionPanes(ctx, "agent-alpha-ana-2")
	if err != nil || len(live) != 1 {
		t.Fatalf("panes %+v, %v", live, err)
	}
	if err := e.Pinned(live[0]).Paste(ctx, live[0].ID, "into the living"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return strings.Contains(raw("capture-pane", "-p", "-t", live[0].ID), "into the living") })
}

// A look with the foreground command says what runs in the pane now, in
// the same round trip as its screen: a launcher (sh waiting for a file)
// that execs the program reads as sh, then as the program.
func TestLookForegroundSeesALauncherHandOver(t *testing.T) {
	for _, cc := range clients {
		t.Run(cc.name, func(t *testing.T) {
			e, raw := testServer(t)
			c := cc.make(t, e).(*Exec)
			ctx := context.Background()
			gate := filepath.Join(t.TempDir(), "go")
			raw("new-session", "-d", "-s", "launch", "-x", "120", "-y", "30",
				"sh", "-c", `echo launching; while [ ! -e "$0" ]; do sleep 0.01; done; exec cat`, gate)
			var p Pane
			// sh runs, and has drawn its line (under load the command
			// read sh before the echo reached the screen).
			waitFor(t, func() bool {
				var err error
				p, err = sessionPane(ctx, c, "launch")
				return err == nil && p.Command == "sh" && strings.Contains(raw("capture-pane", "-p", "-t", p.ID), "launching")
			})
			raw("copy-mode", "-t", p.ID)
			screen, command, err := c.LookForeground(ctx, p.ID, true)
			launching := func(l string) bool { return strings.TrimSpace(l) == "launching" } // 3.2a keeps trailing blanks
			if err != nil || command != "sh" || !slices.ContainsFunc(screen, launching) {
				t.Fatalf("LookForeground of the launcher = %q, %q, %v", screen, command, err)
			}
			if p2, _ := sessionPane(ctx, c, "launch"); p2.InMode {
				t.Error("LookForeground with leave left the pane in copy mode")
			}
			plain, err := c.Capture(ctx, p.ID, 0)
			if err != nil || !slices.Equal(plain, screen) {
				t.Errorf("the look's screen %q, a capture's %q (%v)", screen, plain, err)
			}
			if err := os.WriteFile(gate, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			waitFor(t, func() bool {
				_, command, err = c.LookForeground(ctx, p.ID, false)
				return err == nil && command == "cat"
			})
			if _, _, err := c.LookForeground(ctx, "%999", false); !errors.Is(err, ErrPaneNotFound) {
				t.Errorf("LookForeground of a missing pane: %v, want ErrPaneNotFound", err)
			}
		})
	}
}

// A new session's environment and command never ride on a tmux process's
// command line, which every local user can read in /proc/PID/cmdline: the
// agent's MCP token goes there (issue 29). They arrive byte for byte, also
// on a socket where no server runs yet.
func TestNewSessionKeepsEnvOffCommandLines(t *testing.T) {
	secret := `amt_s3cret 'quoted' "double" $HOME ~ #{pane_id} a;b \ end`
	for _, fresh := range []bool{false, true} {
		t.Run(fmt.Sprintf("fresh server %v", fresh), func(t *testing.T) {
			e, _ := testServer(t)
			server := e.Server()
			if fresh {
				dir, err := os.MkdirTemp("", "amt")
				if err != nil {
					t.Fatal(err)
				}
				server.Socket = filepath.Join(dir, "s")
				t.Cleanup(func() {
					_ = exec.Command(e.Bin(), "-S", server.Socket, "kill-server").Run()
					os.RemoveAll(dir)
				})
			}
			dir := t.TempDir()
			argvLog := filepath.Join(dir, "argv")
			wrapper := filepath.Join(dir, "tmux")
			script := "#!/bin/sh\nprintf '%s\\n' \"$*\" >>" + argvLog + "\nexec " + e.Bin() + " \"$@\"\n"
			if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			w, err := NewExec(server, wrapper)
			if err != nil {
				t.Fatal(err)
			}
			got := filepath.Join(dir, "got")
			ctx := context.Background()
			_, _, err = w.NewSession(ctx, "agent-alpha-bea", dir, []string{"SECRET=" + secret},
				[]string{"sh", "-c", `printf %s "$SECRET" >` + got + `.tmp && mv ` + got + `.tmp ` + got + `; sleep 300`, "secret-arg-" + secret})
			if err != nil {
				t.Fatal(err)
			}
			var b []byte
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				if b, err = os.ReadFile(got); err == nil {
					break
				}
			}
			if string(b) != secret {
				t.Errorf("the agent's SECRET = %q, want %q", b, secret)
			}
			argv, _ := os.ReadFile(argvLog)
			if bytes.Contains(argv, []byte("s3cret")) {
				t.Errorf("the secret was on a tmux command line:\n%s", argv)
			}
		})
	}
}
