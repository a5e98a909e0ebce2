// Package app runs a small app of the daemon's API, written in TypeScript
// against a client generated from the daemon's own OpenAPI document, on a
// real daemon and a private tmux server with stand-in agents (issue 31:
// the contract is what a typed client gets right without reading docs).
//
// It needs Node.js and the npm tools scripts/apptools.sh installs
// (openapi-typescript, openapi-fetch, typescript, @types/node): set
// AGENTMSG_APP_TOOLS to their directory (scripts/test does); without it
// the test says so and skips.
package app

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/e2e/harness"
)

func TestMain(m *testing.M) {
	code := m.Run()
	harness.Cleanup()
	os.Exit(code)
}

// run runs name with args in dir, within d, and fails t with its output
// when it fails.
func run(t *testing.T, d time.Duration, dir, name string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
	t.Logf("%s %s: %s", filepath.Base(name), strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
}

func TestTypeScriptApp(t *testing.T) {
	tools := os.Getenv("AGENTMSG_APP_TOOLS")
	if tools == "" {
		t.Skip("AGENTMSG_APP_TOOLS is not set: the npm tools for the TypeScript app (scripts/apptools.sh) are not installed")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	bin := filepath.Join(tools, "node_modules", ".bin")

	s := harness.NewTestServer(t)
	addr, err := s.ServeTCP()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.StopDaemon() })
	token, err := os.ReadFile(filepath.Join(s.Dir, "serve-token"))
	if err != nil {
		t.Fatal(err)
	}
	ana := s.StartAgent("agent-alpha-ana", harness.InitialState("busy"))
	bob := s.StartAgent("agent-alpha-bob")
	cy := s.StartAgent("agent-alpha-cy", harness.InitialState("dialog"))

	// The client is generated from the document this daemon serves.
	work := t.TempDir()
	for _, f := range []string{"scenario.ts", "tsconfig.json", "package.json"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(work, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(tools, "node_modules"), filepath.Join(work, "node_modules")); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("GET", "http://"+addr+"/v1/openapi.json", nil)
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /v1/openapi.json: %d %v", resp.StatusCode, err)
	}
	if err := os.WriteFile(filepath.Join(work, "openapi.json"), doc, 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, 2*time.Minute, work, filepath.Join(bin, "openapi-typescript"), "openapi.json", "-o", "api.d.ts")
	run(t, 3*time.Minute, work, filepath.Join(bin, "tsc"), "-p", "tsconfig.json")

	// The app runs; what it asks of the world (an agent ready now), the
	// test does.
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join("out", "scenario.js"))
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "AGENTMSG_URL=http://"+addr, "AGENTMSG_TOKEN="+strings.TrimSpace(string(token)))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	ok := false
	for sc.Scan() {
		line := sc.Text()
		t.Log(line)
		switch line {
		case "ASK ana ready":
			ana.SetState("ready")
		case "app: OK":
			ok = true
		}
	}
	err = cmd.Wait()
	t.Logf("the app ran %s", time.Since(start).Round(time.Millisecond))
	if err != nil || !ok {
		t.Fatalf("the app failed: %v\n%s", err, stderr.String())
	}

	// The agents' own logs are the truth: each got each message once.
	for _, a := range []*harness.TestAgent{ana, bob, cy} {
		got := a.Received()
		seen := map[string]bool{}
		for _, p := range got {
			if seen[p] {
				t.Errorf("%s received %q twice", a.Session, p)
			}
			seen[p] = true
		}
	}
	if n := len(ana.Received()); n != 2 {
		t.Errorf("ana received %d messages, want 2 (the one sent while she was busy, the broadcast): %q", n, ana.Received())
	}
	if n := len(cy.Received()); n != 0 {
		t.Errorf("cy, in a dialog throughout, received %q", cy.Received())
	}
}
