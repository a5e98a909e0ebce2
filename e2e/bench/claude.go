package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	claudeharness "github.com/agentmsg/agentmsg/e2e/claude"
	"github.com/agentmsg/agentmsg/e2e/fakeapi"
	"github.com/agentmsg/agentmsg/e2e/harness"
	"github.com/agentmsg/agentmsg/profile"
)

// phases is the delivery's own account of its time (--json phases_ms).
type phases struct {
	Lock, Ready, Type, Settle, Confirm float64
}

type claudeReport struct {
	harness.SendReport
	Profile string `json:"profile"`
	Phases  phases `json:"phases_ms"`
}

// benchClaude times sends to the real Claude Code, idle, offline against the
// fake API, and splits the median send into its phases.
func benchClaude(n int) (row, error) {
	claude, err := claudeharness.Find()
	if err != nil {
		return row{}, fmt.Errorf("claude: %w (scripts/bench installs it with npm; -claude=false skips this)", err)
	}
	bins, err := harness.Build()
	if err != nil {
		return row{}, err
	}
	dir, err := os.MkdirTemp("", "amb")
	if err != nil {
		return row{}, err
	}
	defer os.RemoveAll(dir)
	api, err := fakeapi.New(fakeapi.Config{})
	if err != nil {
		return row{}, err
	}
	if err := api.Start(); err != nil {
		return row{}, err
	}
	defer api.Close()
	sock := filepath.Join(dir, "s")
	agent, err := claudeharness.Start(claudeharness.Options{Claude: claude, Socket: sock, Root: dir, APIURL: api.URL()})
	if err != nil {
		_ = exec.Command(harness.TmuxBin(), "-S", sock, "kill-server").Run()
		return row{}, err
	}
	defer func() {
		_ = agent.Close()
		_, _ = agent.Tmux("kill-server")
	}()
	env := append(harnessEnv(), "XDG_STATE_HOME="+filepath.Join(dir, "state"), "XDG_RUNTIME_DIR="+filepath.Join(dir, "run"))
	var (
		times []time.Duration
		reps  []claudeReport
	)
	for i := range n {
		if _, err := agent.WaitFor(15*time.Second, claudeharness.IsReady); err != nil {
			return row{}, fmt.Errorf("claude not idle before send %d: %w", i, err)
		}
		cmd := exec.Command(bins.Agentmsg, "-S", sock, "--json", "send", "e2e", "claude", fmt.Sprintf("benchmark message %d", i))
		cmd.Env = env
		start := time.Now()
		out, err := cmd.Output()
		took := time.Since(start)
		if err != nil {
			return row{}, fmt.Errorf("send %d: %v\n%s", i, err, out)
		}
		rep, err := harness.Decode[claudeReport](string(out))
		if err != nil || rep.Verdict != "submitted" {
			return row{}, fmt.Errorf("send %d: %v\n%s", i, err, out)
		}
		times = append(times, took)
		reps = append(reps, rep)
	}
	if got := len(api.Prompts()); got != n {
		return row{}, fmt.Errorf("the API got %d prompts, want %d", got, n)
	}
	return row{
		what:   fmt.Sprintf("send to the real Claude Code, idle (n=%d, profile %s)", n, reps[0].Profile),
		result: fmt.Sprintf("median %s, p95 %s; %s", ms(harness.Percentile(times, 50)), ms(harness.Percentile(times, 95)), medianPhases(times, reps)),
		target: "shows where the time goes",
	}, nil
}

// medianPhases splits the send whose total is the median into its phases;
// what the delivery does not account for is the process starting, reading
// its config and finding the agent (one tmux call).
func medianPhases(times []time.Duration, reps []claudeReport) string {
	order := make([]int, len(times))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return int(times[a] - times[b]) })
	mid := order[len(order)/2]
	p := reps[mid].Phases
	inside := p.Lock + p.Ready + p.Type + p.Settle + p.Confirm
	total := float64(times[mid].Microseconds()) / 1000
	return fmt.Sprintf("the median one: type %.1f, settle %.1f, confirm %.1f, lock+ready %.1f, process+find %.1f ms",
		p.Type, p.Settle, p.Confirm, p.Lock+p.Ready, total-inside)
}

// harnessEnv is the environment for agentmsg runs: no TMUX, no AGENTMSG_*
// or XDG_* from the caller.
func harnessEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "TMUX") || strings.HasPrefix(kv, "AGENTMSG_") || strings.HasPrefix(kv, "XDG_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "AGENTMSG_FROM=bench")
}

// claudeSettle is the claude profile's calibrated settle.
func claudeSettle() time.Duration {
	p, _ := profile.Lookup("claude")
	return p.Settle
}
