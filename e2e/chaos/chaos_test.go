package chaos

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/e2e/harness"
)

var (
	seedFlag     = flag.Uint64("chaos.seed", 0, "the first round's seed (0: from the clock); round i runs seed+i")
	durationFlag = flag.Duration("chaos.duration", 2*time.Minute, "start rounds, and steps, until this much time has passed")
	soakFlag     = flag.Duration("soak", 0, "a long run: -chaos.duration, for this long")
	kindsFlag    = flag.String("chaos.kinds", "all", "fault kinds, comma-separated: all, or some of "+strings.Join(allKinds, ",")+"; -KIND leaves one out (all,-disk)")
	roundsFlag   = flag.Int("chaos.rounds", 0, "at most this many rounds (0: as many as the duration allows)")
	stepsFlag    = flag.Int("chaos.steps", 40, "steps per round")
	traceFlag    = flag.Bool("chaos.trace", false, "print each round's trace, not only a failing one's")
)

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	harness.Cleanup()
	os.Exit(code)
}

// TestChaos runs random scenarios (see doc.go) and holds every outcome to
// the oracle. Each round is one seed: a failing round prints its seed, and
// -chaos.seed=SEED -chaos.rounds=1 runs that scenario again.
func TestChaos(t *testing.T) {
	if !asked() {
		t.Skip("the randomized scenarios take minutes: set AGENTMSG_E2E_CHAOS=1, or give a -chaos.* flag or -soak")
	}
	if _, err := exec.LookPath(harness.TmuxBin()); err != nil {
		t.Skip("tmux is not installed; the chaos test needs it")
	}
	on, err := parseKinds(*kindsFlag)
	if err != nil {
		t.Fatal(err)
	}
	if on[kindDisk] && os.Geteuid() != 0 {
		t.Log("fault kind disk left out: mounting a tmpfs for a full disk needs root")
		on[kindDisk] = false
	}
	if _, err := exec.LookPath("python3"); on[kindREPL] && err != nil {
		t.Log("fault kind repl left out: python3 is not installed")
		on[kindREPL] = false
	}
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano()%999_999) + 1
	}
	duration := *durationFlag
	if *soakFlag > 0 {
		duration = *soakFlag
	} else if *roundsFlag > 0 && !given("chaos.duration") {
		duration = 24 * time.Hour // as many rounds as asked, each to its end
	}
	t.Logf("chaos: seed %d, kinds %s, %s, %s (replay a round: go test ./e2e/chaos -run TestChaos -chaos.seed=SEED -chaos.rounds=1 -chaos.kinds=%s)",
		seed, kindList(on), duration, harness.TmuxVersion(), kindList(on))
	start := time.Now()
	deadline := start.Add(duration)
	// A round's drain and checks take a minute or two after its last step:
	// stop early enough not to meet go test's -timeout.
	if d, ok := t.Deadline(); ok && d.Add(-3*time.Minute).Before(deadline) {
		deadline = d.Add(-3 * time.Minute)
		t.Logf("chaos: -timeout leaves room for %s of rounds", time.Until(deadline).Round(time.Second))
	}
	var failed []string
	rounds := 0
	for i := 0; ; i++ {
		if *roundsFlag > 0 && i >= *roundsFlag || i > 0 && time.Now().After(deadline) {
			break
		}
		rounds++
		if rules := runRound(t, seed+uint64(i), on, deadline); len(rules) > 0 {
			failed = append(failed, fmt.Sprintf("seed %d: %s", seed+uint64(i), strings.Join(rules, ", ")))
		}
	}
	t.Logf("chaos: %d rounds from seed %d in %s", rounds, seed, time.Since(start).Round(time.Second))
	if len(failed) > 0 {
		t.Errorf("chaos: %d of %d rounds broke a promise (kinds %s):\n  %s", len(failed), rounds, kindList(on), strings.Join(failed, "\n  "))
	}
}

// asked reports whether the chaos test is wanted: by the environment, or
// by any of its flags on the command line.
func asked() bool {
	yes := os.Getenv("AGENTMSG_E2E_CHAOS") == "1"
	flag.Visit(func(f *flag.Flag) {
		if strings.HasPrefix(f.Name, "chaos.") || f.Name == "soak" {
			yes = true
		}
	})
	return yes
}

// given reports whether the flag name was on the command line.
func given(name string) bool {
	yes := false
	flag.Visit(func(f *flag.Flag) { yes = yes || f.Name == name })
	return yes
}

// runRound runs one scenario and returns the rules it broke.
func runRound(t *testing.T, seed uint64, on map[string]bool, deadline time.Time) []string {
	t.Helper()
	rng := newRand(seed)
	spec := drawWorld(rng, on)
	steps := drawScenario(rng, on, spec, *stepsFlag)
	began := time.Now()
	w, err := newWorld(spec)
	if err != nil {
		t.Fatalf("seed %d: setting up: %v", seed, err)
	}
	r := newRound(seed, on, w, steps)
	defer r.cleanUp(t)
	setup := time.Since(began)
	ran, err := r.run(deadline)
	if err != nil {
		t.Fatalf("seed %d: %v\n%s", seed, err, r.report(nil, nil))
	}
	if err := r.drain(); err != nil {
		t.Fatalf("seed %d: draining: %v\n%s", seed, err, r.report(nil, nil))
	}
	progs, err := r.snapshot()
	if err != nil {
		t.Fatalf("seed %d: reading the outcome: %v", seed, err)
	}
	vs, notes := r.judge(progs)
	through := ""
	if spec.daemon {
		through = fmt.Sprintf(" through agentmsg serve (SIGKILLed in %d broadcasts),", r.kills)
	}
	t.Logf("round seed %d:%s %d of %d steps, %d messages (verdicts: %s), %d notes, %d violations; setup %s, total %s",
		seed, through, ran, len(steps), len(r.msgs), r.verdictCounts(), len(notes), len(vs), setup.Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
	if len(vs) > 0 || *traceFlag || time.Since(began) > time.Minute {
		t.Log(r.report(vs, notes))
	}
	var rules []string
	for _, v := range vs {
		if !slices.Contains(rules, v.Rule) {
			rules = append(rules, v.Rule)
		}
	}
	return rules
}

// cleanUp ends every process the round started and takes its world down,
// whatever state it stopped in.
func (r *round) cleanUp(t *testing.T) {
	for i, o := range r.stopped {
		r.kill(o, syscall.SIGCONT, "CONT")
		delete(r.stopped, i)
	}
	r.waitOps(30 * time.Second)
	if err := r.w.stopDaemon(); err != nil {
		t.Errorf("seed %d: %v", r.seed, err)
	}
	if pids := endAgentmsgs(r.w.bins.Agentmsg, 30*time.Second); len(pids) > 0 {
		t.Errorf("seed %d: had to kill agentmsg processes %v at the end", r.seed, pids)
	}
	if err := r.w.Close(); err != nil {
		t.Errorf("seed %d: cleaning up: %v", r.seed, err)
	}
	// A stand-in's hook may have started one as its server went down.
	endAgentmsgs(r.w.bins.Agentmsg, 30*time.Second)
}

// report is the round's world, trace and findings, for a person to read.
func (r *round) report(vs []Violation, notes []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "round seed %d (replay: go test ./e2e/chaos -run TestChaos -chaos.seed=%d -chaos.rounds=1 -chaos.kinds=%s -chaos.steps=%d)\n",
		r.seed, r.seed, kindList(r.on), len(r.steps))
	if r.w.spec.daemon {
		b.WriteString("through agentmsg serve (its log: " + r.w.daemonLog() + ")\n")
	}
	b.WriteString("agents:\n")
	for i, a := range r.w.agents {
		fmt.Fprintf(&b, "  agent#%d %s %s busy-after %s hooks %v spawned %v\n", i, a.label(), a.spec.prog, a.spec.busyAfter, a.spec.hooks, a.spec.spawned)
	}
	b.WriteString("trace:\n")
	r.mu.Lock()
	for _, line := range r.trace {
		b.WriteString("  " + line + "\n")
	}
	r.mu.Unlock()
	if len(vs) > 0 {
		byRule := map[string][]Violation{}
		var order []string
		for _, v := range vs {
			if byRule[v.Rule] == nil {
				order = append(order, v.Rule)
			}
			byRule[v.Rule] = append(byRule[v.Rule], v)
		}
		b.WriteString("violations:\n")
		for _, rule := range order {
			fmt.Fprintf(&b, "  %s: %d\n", rule, len(byRule[rule]))
			for i, v := range byRule[rule] {
				if i == 5 {
					fmt.Fprintf(&b, "    ... %d more\n", len(byRule[rule])-5)
					break
				}
				fmt.Fprintf(&b, "    %s\n", v)
			}
		}
	}
	if len(notes) > 0 {
		fmt.Fprintf(&b, "notes (%d):\n", len(notes))
		for i, n := range notes {
			if i == 20 {
				fmt.Fprintf(&b, "  ... %d more\n", len(notes)-20)
				break
			}
			b.WriteString("  " + n + "\n")
		}
	}
	return b.String()
}
