package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/e2e/harness"
	"github.com/agentmsg/agentmsg/internal/procs"
)

// agentsDoc is agents --json.
type agentsDoc struct {
	Agents []agentDoc `json:"agents"`
	Reaped []agentDoc `json:"reaped"`
}

type agentDoc struct {
	Team       string `json:"team"`
	Agent      string `json:"agent"`
	State      string `json:"state"`
	Reason     string `json:"reason"`
	Registered bool   `json:"registered"`
	Kind       string `json:"kind"`
	PID        int    `json:"pid"`
	Pending    int    `json:"pending"`
}

// runAs runs agentmsg -S SOCKET args... as the agent team/name would from
// its own pane: AGENTMSG_FROM and AGENTMSG_TEAM set, nothing else changed.
func runAs(t *testing.T, s *harness.TestServer, team, name string, args ...string) harness.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), harness.RunTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.Bins.Agentmsg, append([]string{"-S", s.Socket}, args...)...)
	cmd.Env = append(s.Env(), "AGENTMSG_FROM="+name, "AGENTMSG_TEAM="+team) // the last value of a key wins
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 2 * time.Second
	err := cmd.Run()
	res := harness.Result{Stdout: stdout.String(), Stderr: stderr.String()}
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr):
		res.Code = exitErr.ExitCode()
	default:
		t.Fatalf("agentmsg %s: %v", strings.Join(args, " "), err)
	}
	return res
}

// spawnStandin spawns a stand-in as team/name through agentmsg spawn,
// with the shell prefix (an sh -c line that ends in exec "$@") when given,
// and waits for it to start. It returns the stand-in's log.
func spawnStandin(t *testing.T, s *harness.TestServer, team, name, shLine string) string {
	t.Helper()
	log := filepath.Join(s.Dir, "logs", team+"-"+name+".log")
	args := []string{"spawn", team, name, "--agent", "claude", "--"}
	if shLine != "" {
		args = append(args, "sh", "-c", shLine, "sh")
	}
	args = append(args, s.Bins.Standin, "-log", log, "-queue")
	wantCode(t, s.Run(args...), 0)
	waitFile(t, log, `"kind":"started"`)
	return log
}

// waitFile polls a file until it holds want, and returns its content.
func waitFile(t *testing.T, path, want string) string {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		b, _ := os.ReadFile(path)
		if strings.Contains(string(b), want) {
			return string(b)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not hold %q after 15s:\n%s", path, want, b)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// agents runs agents --json args... and decodes it.
func agents(t *testing.T, s *harness.TestServer, args ...string) agentsDoc {
	t.Helper()
	res := s.Run(append([]string{"--json", "agents"}, args...)...)
	wantCode(t, res, 0)
	doc, err := harness.Decode[agentsDoc](res.Stdout)
	if err != nil {
		t.Fatalf("%v\n%s", err, res)
	}
	return doc
}

// waitAgentState polls agents until team/name is in state.
func waitAgentState(t *testing.T, s *harness.TestServer, team, name, state string, args ...string) agentDoc {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	var last agentDoc
	for {
		for _, a := range agents(t, s, append([]string{team}, args...)...).Agents {
			if a.Agent == name {
				last = a
				if a.State == state {
					return a
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s/%s: %+v, want state %s", team, name, last, state)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

var shutdownIDRe = regexp.MustCompile(`(MSG_TESTER_[0-9a-f]{8}): \[shutdown-request\]`)

// shutdownAnswered runs shutdown --wait for alpha/ana and answers it as
// ana with accept; it returns shutdown's result and JSON document.
func shutdownAnswered(t *testing.T, s *harness.TestServer, log, accept, text string) (harness.Result, map[string]any) {
	t.Helper()
	before := len(shutdownIDRe.FindAllStringSubmatch(waitFile(t, log, "started"), -1))
	type run struct {
		res harness.Result
		err error
	}
	done := make(chan run, 1)
	go func() {
		res, err := s.Server.Run("--json", "shutdown", "alpha", "ana", "--reason", "wrap up", "--wait", "--timeout", "20s")
		done <- run{res, err}
	}()
	// The agent reads the request's id from what was typed into it.
	var id string
	deadline := time.Now().Add(15 * time.Second)
	for id == "" {
		b, _ := os.ReadFile(log)
		if m := shutdownIDRe.FindAllStringSubmatch(string(b), -1); len(m) > before {
			id = m[len(m)-1][1]
		} else if time.Now().After(deadline) {
			t.Fatalf("no shutdown-request reached the agent:\n%s", b)
		} else {
			time.Sleep(10 * time.Millisecond)
		}
	}
	wantCode(t, runAs(t, s, "alpha", "ana", "reply", "--type", "shutdown-response", "--meta", "accept="+accept, id, text), 0)
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(r.res.Stdout), &doc); err != nil {
		t.Fatalf("%v\n%s", err, r.res)
	}
	if doc["request_id"] != id {
		t.Errorf("request_id %v, want %s", doc["request_id"], id)
	}
	return r.res, doc
}

func TestLifecycleSpawnShutdownKill(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	log := spawnStandin(t, s, "alpha", "ana", "")

	a := waitAgentState(t, s, "alpha", "ana", "idle")
	if !a.Registered || a.Kind != "claude" || a.PID == 0 {
		t.Errorf("ana: %+v", a)
	}
	res := s.Run("spawn", "alpha", "ana", "--", s.Bins.Standin, "-log", log)
	if res.Code != 1 || !strings.Contains(res.Stderr, "already exists") || !strings.Contains(res.Stderr, "(stop it with agentmsg kill, or pick another --instance)") {
		t.Errorf("a second spawn of alpha/ana: %s", res)
	}

	res, doc := shutdownAnswered(t, s, log, "true", "stopping now")
	wantCode(t, res, 0)
	if doc["answered"] != true || doc["accepted"] != true || doc["reason"] != "stopping now" || doc["verdict"] != "submitted" {
		t.Errorf("accepted shutdown: %s", res.Stdout)
	}
	res, doc = shutdownAnswered(t, s, log, "false", "the migration needs 10 more minutes")
	wantCode(t, res, 9)
	if doc["answered"] != true || doc["accepted"] != false || doc["reason"] != "the migration needs 10 more minutes" {
		t.Errorf("deferred shutdown: %s", res.Stdout)
	}
	// Nobody answers: exit 7.
	res = s.Run("shutdown", "alpha", "ana", "--wait", "--timeout", "300ms")
	wantCode(t, res, 7)

	// Kill: a command that starts a child of its own.
	spawnStandin(t, s, "alpha", "bob", `sleep 300 & exec "$@"`)
	panePID, err := strconv.Atoi(strings.TrimSpace(s.Tmux("display-message", "-p", "-t", "=agent-alpha-bob:", "#{pane_pid}")))
	if err != nil {
		t.Fatal(err)
	}
	before := append([]int{panePID}, childrenOf(t, panePID)...)
	if len(before) < 2 {
		t.Fatalf("the agent's sleep child is missing: %v", before)
	}
	res = s.Run("--json", "kill", "alpha", "bob", "--grace", "3s")
	wantCode(t, res, 0)
	var killed struct {
		PIDs []int `json:"pids"`
	}
	if err := json.Unmarshal([]byte(res.Stdout), &killed); err != nil {
		t.Fatalf("%v\n%s", err, res)
	}
	for _, pid := range before {
		if !containsInt(killed.PIDs, pid) {
			t.Errorf("kill did not collect pid %d (it reports %v)", pid, killed.PIDs)
		}
	}
	for _, pid := range append(before, killed.PIDs...) {
		if running(pid) {
			t.Errorf("pid %d is still running after kill", pid)
		}
	}
	for _, a := range agents(t, s, "alpha").Agents {
		if a.Agent == "bob" {
			t.Errorf("bob is still listed after kill: %+v", a)
		}
	}
	wantCode(t, s.Run("kill", "alpha", "bob"), 3)
}

func TestLifecycleHeartbeatTimeoutMarksDead(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	spawnStandin(t, s, "beta", "cy", "")
	// No heartbeat yet: a short timeout does not apply.
	waitAgentState(t, s, "beta", "cy", "idle", "--heartbeat-timeout", "1ms")

	wantCode(t, runAs(t, s, "beta", "cy", "heartbeat", "-q"), 0)
	waitAgentState(t, s, "beta", "cy", "idle", "--heartbeat-timeout", "1m")
	a := waitAgentState(t, s, "beta", "cy", "dead", "--heartbeat-timeout", "300ms")
	if !strings.Contains(a.Reason, "no heartbeat") {
		t.Errorf("dead for the wrong reason: %+v", a)
	}
	doc := agents(t, s, "beta", "--reap", "--heartbeat-timeout", "300ms")
	if len(doc.Reaped) != 1 || doc.Reaped[0].Agent != "cy" {
		t.Errorf("reaped %+v", doc.Reaped)
	}
	// Reaping kills nothing: the session stays, no longer registered.
	if a := waitAgentState(t, s, "beta", "cy", "idle", "--heartbeat-timeout", "300ms"); a.Registered {
		t.Errorf("still registered after reap: %+v", a)
	}
	wantCode(t, s.Run("kill", "beta", "cy"), 0)
}

// childrenOf lists the direct children of pid (package procs: /proc on
// Linux, sysctl on macOS).
func childrenOf(t *testing.T, pid int) []int {
	t.Helper()
	all, err := procs.All()
	if err != nil {
		t.Fatalf("the process table: %v", err)
	}
	var out []int
	for _, p := range all {
		if p.PPID == pid {
			out = append(out, p.PID)
		}
	}
	return out
}

// running reports whether pid is a live process (a zombie has ended).
func running(pid int) bool {
	p, err := procs.Get(pid)
	return err == nil && !p.Ended()
}

func containsInt(list []int, x int) bool {
	for _, v := range list {
		if v == x {
			return true
		}
	}
	return false
}
