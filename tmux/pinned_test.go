package tmux

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// privateServer starts nothing yet: it names a socket in a short private
// dir and returns a raw tmux runner for it, killing any server on it when
// the test ends.
func privateServer(t *testing.T) (sock string, raw func(args ...string) string) {
	t.Helper()
	bin := testBin(t)
	dir, err := os.MkdirTemp("", "amp")
	if err != nil {
		t.Fatal(err)
	}
	sock = filepath.Join(dir, "s")
	raw = func(args ...string) string {
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
	return sock, raw
}

// A server replaced at the same socket numbers its panes from %0 again: a
// pane found on the old one must not be typed into on the new one, where
// its id names another agent (issue 17, item 2).
func TestPinnedRefusesAReplacedServer(t *testing.T) {
	sock, raw := privateServer(t)
	ctx := context.Background()
	raw("new-session", "-d", "-s", "agent-t-ana", "cat")
	raw("new-session", "-d", "-s", "agent-t-bob", "cat")
	e, err := NewExec(Server{Socket: sock}, testBin(t))
	if err != nil {
		t.Fatal(err)
	}
	ana, err := sessionPane(ctx, e, "agent-t-ana")
	if err != nil {
		t.Fatal(err)
	}
	if ana.ID != "%0" || ana.Server.IsZero() {
		t.Fatalf("ana = %+v, want %%0 and its server's instance", ana)
	}
	term := e.Pinned(ana)
	if _, err := term.Capture(ctx, ana.ID, 0); err != nil {
		t.Fatalf("pinned capture on the same server: %v", err)
	}

	// The server is replaced; bob now starts first and gets %0, in a
	// session named like ana's before (the worst case: same names, same
	// ids, same window ids).
	raw("kill-server")
	waitFor(t, func() bool {
		return exec.Command(testBin(t), "-S", sock, "-f", "/dev/null", "new-session", "-d", "-s", "agent-t-ana", "cat").Run() == nil
	})
	if err := term.Paste(ctx, ana.ID, "the secret is 42"); !errors.Is(err, ErrServerReplaced) || !errors.Is(err, ErrPaneNotFound) {
		t.Fatalf("pinned paste on a replaced server: %v, want ErrServerReplaced", err)
	}
	if err := term.SendBytes(ctx, ana.ID, '\r'); !errors.Is(err, ErrServerReplaced) {
		t.Fatalf("pinned press on a replaced server: %v, want ErrServerReplaced", err)
	}
	if _, err := term.Capture(ctx, ana.ID, 0); !errors.Is(err, ErrServerReplaced) {
		t.Fatalf("pinned capture on a replaced server: %v, want ErrServerReplaced", err)
	}
	if out := raw("capture-pane", "-p", "-t", "%0"); strings.Contains(out, "secret") {
		t.Fatalf("the new server's %%0 got the text:\n%s", out)
	}
	if out := raw("list-buffers"); out != "" {
		t.Errorf("buffers left on the new server: %q", out)
	}
	// A fresh lookup on the new server is its own instance, and works.
	again, err := sessionPane(ctx, e, "agent-t-ana")
	if err != nil || again.Server == ana.Server {
		t.Fatalf("lookup on the new server = %+v, %v; want a new instance", again, err)
	}
	if err := e.Pinned(again).Paste(ctx, again.ID, "hello"); err != nil {
		t.Fatalf("paste pinned to the new instance: %v", err)
	}
	if hidden := raw("show-environment", "-g", "-h"); strings.Count(hidden, "AGENTMSG_SERVER_") != 1 || !strings.Contains(hidden, again.Server.marker()) {
		t.Errorf("hidden variables on the new server = %q, want only its own marker", hidden)
	}
}

// A session's panes in every window are listed; the pinned view types
// into the agent's pane even when a person made another window current
// (issue 17, item 1), and a pane moved to another window is not reached.
func TestSessionPanesAndPinnedTargets(t *testing.T) {
	sock, raw := privateServer(t)
	ctx := context.Background()
	raw("new-session", "-d", "-s", "agent-t-fay", "-n", "agent", "cat")
	raw("new-window", "-d", "-t", "=agent-t-fay:", "-n", "dev server", "cat")
	raw("split-window", "-d", "-t", "=agent-t-fay:1", "cat")
	raw("select-window", "-t", "=agent-t-fay:1")
	e, err := NewExec(Server{Socket: sock}, testBin(t))
	if err != nil {
		t.Fatal(err)
	}
	panes, screen, err := e.SessionPanesScreen(ctx, "agent-t-fay")
	if err != nil || len(panes) != 3 || screen == nil {
		t.Fatalf("SessionPanesScreen = %+v, %d lines, %v; want 3 panes", panes, len(screen), err)
	}
	var agent Pane
	active := 0
	for _, p := range panes {
		if p.Active {
			active++
			if p.WindowIndex != 1 || p.WindowName != "dev server" {
				t.Errorf("active pane %+v, want one in window 1 (dev server)", p)
			}
		}
		if p.WindowName == "agent" {
			agent = p
		}
	}
	if active != 1 || agent.ID == "" || agent.Window == "" || agent.Index != 0 {
		t.Fatalf("panes = %+v: want one active, and the agent's in window \"agent\"", panes)
	}
	if err := e.Pinned(agent).Paste(ctx, agent.ID, "for the agent"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return strings.Contains(raw("capture-pane", "-p", "-t", agent.ID), "for the agent") })
	if out := raw("capture-pane", "-p", "-t", "=agent-t-fay:"); strings.Contains(out, "for the agent") {
		t.Fatalf("the current window got the text:\n%s", out)
	}
	all, err := e.ListPanes(ctx)
	if err != nil || len(all) != 3 {
		t.Fatalf("ListPanes = %+v, %v; want 3", all, err)
	}

	// The agent's pane moves into the other window: a target made before
	// no longer reaches it, nor anything else.
	raw("join-pane", "-d", "-s", agent.ID, "-t", "=agent-t-fay:1")
	if err := e.Pinned(agent).Paste(ctx, agent.ID, "again"); !errors.Is(err, ErrPaneNotFound) {
		t.Fatalf("paste into a pane that moved: %v, want ErrPaneNotFound", err)
	}
}

// Two spellings of one socket are one server (issue 17, item 8).
func TestCanonicalSocket(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	if err := os.Mkdir(real, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(dir, "alias")); err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(real, "s")
	t.Chdir(dir)
	env := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	for _, tt := range []struct {
		path string
		env  map[string]string
	}{
		{path: want},
		{path: filepath.Join(dir, "alias", "s")},
		{path: "alias/s"},
		{path: "real/../alias/s"},
		{env: map[string]string{"TMUX": filepath.Join(dir, "alias", "s") + ",123,0"}},
	} {
		got, err := ResolveServer(tt.path, "", env(tt.env))
		if err != nil || got.Socket != want {
			t.Errorf("ResolveServer(%q, env %v) = %q, %v; want %q", tt.path, tt.env, got.Socket, err, want)
		}
	}
	if c := CallerFrom(env(map[string]string{"TMUX": filepath.Join(dir, "alias", "s") + ",123,0"})); !c.In(Server{Socket: want}) {
		t.Errorf("a caller whose $TMUX goes through the alias is not in %s: %+v", want, c)
	}
}

// The server check adds nothing to what a pinned command answers: a
// capture is the screen, line for line.
func TestPinnedCaptureIsTheScreenOnly(t *testing.T) {
	sock, raw := privateServer(t)
	ctx := context.Background()
	raw("new-session", "-d", "-s", "agent-t-ana", "-x", "80", "-y", "5", "printf 'first\\nsecond\\n'; cat")
	e, err := NewExec(Server{Socket: sock}, testBin(t))
	if err != nil {
		t.Fatal(err)
	}
	ana, err := sessionPane(ctx, e, "agent-t-ana")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		plain, _ := e.Capture(ctx, ana.ID, 0)
		return len(plain) > 0 && strings.TrimRight(plain[0], " ") == "first" // 3.2a pads with spaces
	})
	plain, _ := e.Capture(ctx, ana.ID, 0)
	pinned, err := e.Pinned(ana).Capture(ctx, ana.ID, 0)
	if err != nil || strings.Join(pinned, "\n") != strings.Join(plain, "\n") {
		t.Fatalf("pinned capture = %q, %v; want %q", pinned, err, plain)
	}
}
