package tmux

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testServer starts a private tmux server on a short socket path and
// removes it when the test ends.
func testServer(t *testing.T) (*Exec, func(args ...string) string) {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatal("tmux is not installed: scripts/test installs it")
	}
	dir, err := os.MkdirTemp("", "amt")
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "s")
	raw := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("tmux", append([]string{"-S", sock, "-f", "/dev/null"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v: %s", args, err, out)
		}
		return string(out)
	}
	t.Cleanup(func() {
		_ = exec.Command("tmux", "-S", sock, "kill-server").Run()
		os.RemoveAll(dir)
	})
	raw("new-session", "-d", "-s", "agent-alpha-ana-2", "-x", "120", "-y", "30", "cat")
	raw("new-session", "-d", "-s", "odd\tname", "cat")
	raw("select-pane", "-t", "=agent-alpha-ana-2:", "-T", "title -:- with the separator gotmux splits on")
	e, err := NewExec(Server{Socket: sock})
	if err != nil {
		t.Fatal(err)
	}
	return e, raw
}

type clientCase struct {
	name string
	make func(t *testing.T, e *Exec) Client
}

var clients = []clientCase{
	{"exec", func(t *testing.T, e *Exec) Client { return e }},
	{"control", func(t *testing.T, e *Exec) Client {
		c, err := DialControl(context.Background(), e, "agent-alpha-ana-2")
		if err != nil {
			t.Fatalf("DialControl: %v", err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}},
	{"attached", func(t *testing.T, e *Exec) Client {
		a, err := Attach(context.Background(), e, "agent-alpha-ana-2")
		if err != nil || !a.Control() {
			t.Fatalf("Attach: %v (control %v)", err, err == nil && a.Control())
		}
		t.Cleanup(func() { a.Close() })
		return a
	}},
}

func TestClient(t *testing.T) {
	for _, cc := range clients {
		t.Run(cc.name, func(t *testing.T) {
			e, raw := testServer(t)
			c := cc.make(t, e)
			ctx := context.Background()

			// Exact resolution: agent-alpha-ana must not find agent-alpha-ana-2.
			if _, err := c.SessionPane(ctx, "agent-alpha-ana"); !errors.Is(err, ErrSessionNotFound) {
				t.Fatalf("SessionPane(agent-alpha-ana) = %v, want ErrSessionNotFound", err)
			}
			p, err := c.SessionPane(ctx, "agent-alpha-ana-2")
			if err != nil || !strings.HasPrefix(p.ID, "%") || p.Command != "cat" || p.Width != 120 {
				t.Fatalf("SessionPane = %+v, %v", p, err)
			}
			panes, err := c.ListPanes(ctx)
			if err != nil || len(panes) != 2 {
				t.Fatalf("ListPanes = %+v, %v (a -:- title or an odd session name must not break it)", panes, err)
			}

			// Text as data: everything tmux could misread arrives as typed.
			text := "-x 'q' \"d\" #{pane_id} é 世界 end;"
			if err := c.Paste(ctx, p.ID, "agentmsg-test-1", text); err != nil {
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
			if p2, _ := c.SessionPane(ctx, "agent-alpha-ana-2"); p2.InMode {
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
	e, err := NewExec(Server{Socket: filepath.Join(dir, "none")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.ListPanes(context.Background()); !errors.Is(err, ErrNoServer) {
		t.Errorf("ListPanes without a server: %v, want ErrNoServer", err)
	}
	if _, err := DialControl(context.Background(), e, "agent-a-b"); !errors.Is(err, ErrNoServer) {
		t.Errorf("DialControl without a server: %v, want ErrNoServer", err)
	}
}

func TestControlDialMissingSession(t *testing.T) {
	e, _ := testServer(t)
	if _, err := DialControl(context.Background(), e, "agent-alpha-ana"); !errors.Is(err, ErrSessionNotFound) {
		t.Fatalf("DialControl to a prefix of a session: %v, want ErrSessionNotFound", err)
	}
}

func TestControlServerGone(t *testing.T) {
	e, raw := testServer(t)
	c, err := DialControl(context.Background(), e, "agent-alpha-ana-2")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	raw("kill-server")
	_, err = c.ListPanes(context.Background())
	if err == nil {
		t.Fatal("ListPanes after kill-server succeeded")
	}
}

// A broadcast shares one client attached to one agent's session; when that
// session goes away, the others must still be reachable.
func TestAttachedOutlivesItsSession(t *testing.T) {
	e, raw := testServer(t)
	a, err := Attach(context.Background(), e, "agent-alpha-ana-2")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	raw("kill-session", "-t", "=agent-alpha-ana-2")
	panes, err := a.ListPanes(context.Background())
	if err != nil || len(panes) != 1 || !strings.HasPrefix(panes[0].Session, "odd") {
		t.Fatalf("ListPanes after the attached session went: %+v, %v", panes, err)
	}
	if a.Control() {
		t.Error("still claims a live control client")
	}
}

func TestAttachMissing(t *testing.T) {
	e, _ := testServer(t)
	if _, err := Attach(context.Background(), e, "agent-alpha-ana"); !errors.Is(err, ErrSessionNotFound) {
		t.Fatalf("Attach to a prefix of a session: %v, want ErrSessionNotFound", err)
	}
}

func TestResolveServer(t *testing.T) {
	env := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	uid := os.Getuid()
	tests := []struct {
		path, name string
		env        map[string]string
		want       string
		wantErr    bool
	}{
		{path: "/tmp/x/s", want: "/tmp/x/s"},
		{name: "work", env: map[string]string{"TMUX_TMPDIR": "/nonexistent-dir"}, want: filepath.Join("/nonexistent-dir", fmt.Sprintf("tmux-%d", uid), "work")},
		{env: map[string]string{"TMUX": "/tmp/caller/sock,123,0"}, want: "/tmp/caller/sock"},
		{env: map[string]string{"TMUX_TMPDIR": "/nonexistent-dir"}, want: filepath.Join("/nonexistent-dir", fmt.Sprintf("tmux-%d", uid), "default")},
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

func TestCommandNames(t *testing.T) {
	if got := commandNames([]string{"load-buffer", "-b", "x", "-", ";", "paste-buffer", "-t", "%1"}); got != "load-buffer+paste-buffer" {
		t.Errorf("commandNames = %q", got)
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
