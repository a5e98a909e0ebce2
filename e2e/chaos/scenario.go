package chaos

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) }

// The fault kinds a scenario mixes; -chaos.kinds picks some. Sends,
// broadcasts and deliver runs are always there.
const (
	kindWindows    = "windows"    // windows and split panes beside agents, left active; window switches
	kindRestart    = "restart"    // the server killed and started again at the same socket, agents in another order
	kindServer2    = "server2"    // a second server with the same team and agent names, one mailbox
	kindHooks      = "hooks"      // stand-ins run agentmsg's receipt and turn-end hooks
	kindBusy       = "busy"       // busy and ready flips; sends that queue into a busy agent
	kindDialog     = "dialog"     // permission dialogs opened and closed
	kindDraft      = "draft"      // a person's half-typed text in the box
	kindNoBP       = "nobp"       // a plain "> " program without bracketed paste
	kindREPL       = "repl"       // python3's >>> and a read -p loop, each with its own record
	kindDisk       = "disk"       // the mailbox's tmpfs full (root only)
	kindSignal     = "signal"     // kill -9, SIGINT, SIGTERM, SIGSTOP (and SIGCONT) of senders and deliver
	kindTexts      = "texts"      // multi-line, /exit, !cmd, escapes, NUL, invalid UTF-8, long, tall texts
	kindConcurrent = "concurrent" // operations overlap; bursts of senders at once
	kindAlias      = "alias"      // senders name the socket through a symlinked directory
	kindDaemon     = "daemon"     // in some rounds the senders go through agentmsg serve, SIGKILLed during broadcasts
)

var allKinds = []string{kindWindows, kindRestart, kindServer2, kindHooks, kindBusy, kindDialog, kindDraft,
	kindNoBP, kindREPL, kindDisk, kindSignal, kindTexts, kindConcurrent, kindAlias, kindDaemon}

// parseKinds reads -chaos.kinds: "all", a list, or "all,-disk" to leave some out.
func parseKinds(s string) (map[string]bool, error) {
	on := map[string]bool{}
	for _, k := range strings.Split(s, ",") {
		k = strings.TrimSpace(k)
		off := strings.HasPrefix(k, "-")
		k = strings.TrimPrefix(k, "-")
		switch {
		case k == "":
		case k == "all":
			for _, a := range allKinds {
				on[a] = !off
			}
		case slices.Contains(allKinds, k):
			on[k] = !off
		default:
			return nil, fmt.Errorf("unknown fault kind %q; the kinds: all, %s", k, strings.Join(allKinds, ", "))
		}
	}
	return on, nil
}

func kindList(on map[string]bool) string {
	var ks []string
	for _, k := range allKinds {
		if on[k] {
			ks = append(ks, k)
		}
	}
	if len(ks) == 0 {
		return "none"
	}
	return strings.Join(ks, ",")
}

// drawWorld draws the round's teams and agents: two teams on server A; with
// server2, a server B with team ta's names again.
func drawWorld(rng *rand.Rand, on map[string]bool) worldSpec {
	spec := worldSpec{servers: 1, hooks: on[kindHooks], disk: on[kindDisk], askerPrompt: "> "}
	if rng.IntN(2) == 0 {
		spec.askerPrompt = "ask> "
	}
	standin := func(server int, team, name string) agentSpec {
		a := agentSpec{server: server, team: team, name: name, prog: progStandin, hooks: spec.hooks && rng.IntN(4) > 0,
			spawned: on[kindWindows] && rng.IntN(2) == 0}
		if on[kindBusy] && rng.IntN(2) == 0 {
			a.busyAfter = time.Duration(50+rng.IntN(250)) * time.Millisecond
		}
		return a
	}
	// Names are drawn without repeats, so a name is one agent per server.
	names := []string{"ana", "bob", "cy", "dee", "eli", "fay", "gus", "hal"}
	rng.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	teams := map[string][]string{"ta": names[:2+rng.IntN(3)]}
	teams["tb"] = names[len(teams["ta"]) : len(teams["ta"])+1+rng.IntN(2)]
	for _, team := range []string{"ta", "tb"} {
		for _, name := range teams[team] {
			spec.agents = append(spec.agents, standin(0, team, name))
		}
	}
	team := func() string { return []string{"ta", "tb"}[rng.IntN(2)] }
	if on[kindNoBP] {
		spec.agents = append(spec.agents, agentSpec{team: team(), name: "pl", prog: progPlain})
	}
	if on[kindREPL] {
		spec.agents = append(spec.agents, agentSpec{team: team(), name: "py", prog: progPython},
			agentSpec{team: team(), name: "ask", prog: progAsker})
	}
	if on[kindServer2] {
		spec.servers = 2
		ta := teams["ta"]
		for _, name := range ta[:1+rng.IntN(len(ta))] {
			spec.agents = append(spec.agents, standin(1, "ta", name))
		}
	}
	// Half the rounds run as a user with the daemon does: every command
	// through it, the hooks' too.
	spec.daemon = on[kindDaemon] && rng.IntN(2) == 0
	return spec
}

// stepKind is what one step of a scenario does.
type stepKind string

const (
	stepSend      stepKind = "send"
	stepBurst     stepKind = "burst" // several sends at once
	stepBroadcast stepKind = "broadcast"
	stepDeliver   stepKind = "deliver"
	stepCue       stepKind = "cue"     // busy, ready or dialog
	stepDraft     stepKind = "draft"   // a person types into the box
	stepEnter     stepKind = "enter"   // the person submits their draft
	stepExtra     stepKind = "extra"   // a window or split beside an agent
	stepSelect    stepKind = "select"  // a person switches to another window or pane of the session
	stepRestart   stepKind = "restart" // with sends in flight
	stepFill      stepKind = "fill"
	stepFree      stepKind = "free"
	stepSignal    stepKind = "signal" // a send or deliver, signalled after a while
	stepCont      stepKind = "cont"   // SIGCONT to what a signal step stopped
	stepPause     stepKind = "pause"
	stepCrash     stepKind = "crash" // a broadcast through the daemon, the daemon SIGKILLed in it and started again
)

// step is one step, drawn whole from the seed: what it does never depends
// on how earlier steps turned out, so a seed replays the same scenario.
type step struct {
	kind   stepKind
	agent  int       // the agent it concerns (index into the world's agents)
	server int       // deliver, broadcast, restart
	team   string    // broadcast, deliver ("" for every team)
	msgs   []msgSpec // send, burst, broadcast, signal (a send), restart (sends in flight)
	wait   bool      // wait for its agentmsg runs to end before the next step
	cue    string
	draft  int           // draft: its number
	prog   progKind      // extra: the program
	split  bool          // extra: split the agent's pane, not a new window
	detach bool          // extra: leave the agent's pane active
	pick   int           // select: which pane of the session, modulo their number
	order  []int         // restart: the order agents start again (indexes into the server's agents)
	leave  int           // fill: bytes left free
	sig    string        // signal: KILL, INT, TERM, STOP
	delay  time.Duration // signal: after this; restart: sends in flight this long first; pause; crash: the kill after this
	of     int           // cont: the step whose process to continue
	api    bool          // crash: through the API with the app's own id, asked again after the restart
}

// msgSpec is one message of a step.
type msgSpec struct {
	n     int
	agent int // send: its recipient
	text  string
	shape textShape
	flags []string
	alias bool // name the socket through the symlink
}

// scenario draws the steps of a round.
type scenario struct {
	rng   *rand.Rand
	on    map[string]bool
	spec  worldSpec
	steps []step
	msgN  int
	draft int
	// The state the steps leave each agent in, as far as the steps decide
	// it (a person's view).
	cues    []string
	drafts  []bool
	stopped []int // signal steps whose process is stopped
}

func drawScenario(rng *rand.Rand, on map[string]bool, spec worldSpec, n int) []step {
	sc := &scenario{rng: rng, on: on, spec: spec, cues: make([]string, len(spec.agents)), drafts: make([]bool, len(spec.agents))}
	for range n {
		sc.steps = append(sc.steps, sc.draw())
	}
	return sc.steps
}

type weighted struct {
	w    int
	draw func() step
}

func (sc *scenario) draw() step {
	choices := []weighted{
		{30, sc.send},
		{8, sc.broadcast},
		{6, sc.deliver},
		{4, sc.pause},
	}
	add := func(kind string, w int, f func() step) {
		if sc.on[kind] {
			choices = append(choices, weighted{w, f})
		}
	}
	add(kindConcurrent, 8, sc.burst)
	add(kindBusy, 10, sc.busy)
	add(kindDialog, 5, sc.dialog)
	add(kindDraft, 5, sc.draftStep)
	add(kindWindows, 6, sc.window)
	add(kindRestart, 3, sc.restart)
	add(kindDisk, 3, sc.disk)
	add(kindSignal, 6, sc.signal)
	if sc.spec.daemon {
		choices = append(choices, weighted{6, sc.crash})
	}
	if len(sc.stopped) > 0 {
		choices = append(choices, weighted{8, sc.cont})
	}
	total := 0
	for _, c := range choices {
		total += c.w
	}
	r := sc.rng.IntN(total)
	for _, c := range choices {
		if r < c.w {
			return c.draw()
		}
		r -= c.w
	}
	panic("unreachable")
}

func (sc *scenario) pick(n int) int { return sc.rng.IntN(n) }

func (sc *scenario) anyAgent() int { return sc.pick(len(sc.spec.agents)) }

// standin is a Claude-style stand-in, or -1 when there is none.
func (sc *scenario) standin() int {
	var is []int
	for i, a := range sc.spec.agents {
		if a.prog == progStandin || a.prog == progPlain {
			is = append(is, i)
		}
	}
	if len(is) == 0 {
		return -1
	}
	return is[sc.pick(len(is))]
}

// wait: without overlapping operations, each step's runs end before the next.
func (sc *scenario) wait() bool { return !sc.on[kindConcurrent] || sc.pick(3) == 0 }

func (sc *scenario) message(agent int) msgSpec {
	sc.msgN++
	shape := pickShape(sc.rng, sc.on[kindTexts])
	m := msgSpec{n: sc.msgN, agent: agent, shape: shape, text: messageText(sc.rng, sc.msgN, shape),
		alias: sc.on[kindAlias] && sc.pick(2) == 0}
	m.flags = []string{"--ready-timeout", []string{"200ms", "1s", "2s"}[sc.pick(3)]}
	if agent >= 0 && sc.spec.agents[agent].prog == progStandin && sc.on[kindBusy] && sc.pick(4) == 0 {
		m.flags = append(m.flags, "--while-busy", "--agent", "claude")
	}
	if sc.pick(10) == 0 {
		m.flags = append(m.flags, "--no-queue")
	}
	return m
}

func (sc *scenario) send() step {
	a := sc.anyAgent()
	return step{kind: stepSend, agent: a, msgs: []msgSpec{sc.message(a)}, wait: sc.wait()}
}

func (sc *scenario) burst() step {
	st := step{kind: stepBurst, wait: sc.pick(2) == 0}
	one := sc.anyAgent()
	for range 2 + sc.pick(5) {
		a := one
		if sc.pick(3) == 0 {
			a = sc.anyAgent()
		}
		st.msgs = append(st.msgs, sc.message(a))
	}
	return st
}

func (sc *scenario) broadcast() step {
	a := sc.spec.agents[sc.anyAgent()]
	return step{kind: stepBroadcast, server: a.server, team: a.team, msgs: []msgSpec{sc.message(-1)}, wait: sc.wait()}
}

// crash is a broadcast the daemon runs when it is SIGKILLed: by the CLI
// (forwarded to it), or by an app through the API with its own id, which
// asks again with that id once the daemon is back.
func (sc *scenario) crash() step {
	st := sc.broadcast()
	st.kind, st.wait = stepCrash, true
	st.delay = time.Duration(sc.pick(800)) * time.Millisecond
	st.api = sc.pick(2) == 0
	return st
}

func (sc *scenario) deliver() step {
	// A deliver for one team goes to a server that has it.
	a := sc.spec.agents[sc.anyAgent()]
	st := step{kind: stepDeliver, server: a.server, wait: sc.wait()}
	if sc.pick(2) == 0 {
		st.team = a.team
	}
	return st
}

func (sc *scenario) pause() step {
	return step{kind: stepPause, delay: time.Duration(50+sc.pick(700)) * time.Millisecond}
}

func (sc *scenario) busy() step {
	a := sc.standin()
	if a < 0 || sc.cues[a] == "dialog" {
		return sc.send()
	}
	cue := "busy"
	if sc.cues[a] == "busy" {
		cue = "ready"
	}
	sc.cues[a] = cue
	return step{kind: stepCue, agent: a, cue: cue}
}

func (sc *scenario) dialog() step {
	a := sc.standin()
	if a < 0 || sc.spec.agents[a].prog != progStandin {
		return sc.send()
	}
	cue := "dialog"
	if sc.cues[a] == "dialog" {
		cue = "ready"
	}
	sc.cues[a] = cue
	return step{kind: stepCue, agent: a, cue: cue}
}

func (sc *scenario) draftStep() step {
	a := sc.standin()
	if a < 0 || sc.cues[a] == "dialog" {
		return sc.send()
	}
	if sc.drafts[a] {
		sc.drafts[a] = false
		return step{kind: stepEnter, agent: a}
	}
	sc.drafts[a] = true
	sc.draft++
	return step{kind: stepDraft, agent: a, draft: sc.draft}
}

func (sc *scenario) window() step {
	a := sc.anyAgent()
	if sc.pick(3) == 0 {
		return step{kind: stepSelect, agent: a, pick: sc.pick(8)}
	}
	progs := []progKind{progShell, progStandin, progAsker, progPython}
	return step{kind: stepExtra, agent: a, prog: progs[sc.pick(len(progs))], split: sc.pick(2) == 0, detach: sc.pick(4) == 0}
}

func (sc *scenario) restart() step {
	server := sc.pick(sc.spec.servers)
	st := step{kind: stepRestart, server: server, delay: time.Duration(sc.pick(100)) * time.Millisecond}
	var mine []int
	for i, a := range sc.spec.agents {
		if a.server == server {
			mine = append(mine, i)
			// A restarted agent starts afresh: ready, no draft.
			sc.cues[i], sc.drafts[i] = "", false
		}
	}
	st.order = sc.rng.Perm(len(mine))
	// Senders in flight to one agent: while one types, the others wait
	// for its pane, and the pane they wait for is gone when they get it
	// (or is another agent's by then).
	to := mine[sc.pick(len(mine))]
	for range sc.pick(5) + 2 {
		st.msgs = append(st.msgs, sc.message(to))
	}
	return st
}

func (sc *scenario) disk() step {
	if sc.pick(2) == 0 {
		return step{kind: stepFree}
	}
	return step{kind: stepFill, leave: []int{0, 0, 100, 3000, 5000}[sc.pick(5)]}
}

func (sc *scenario) signal() step {
	st := step{kind: stepSignal, sig: []string{"KILL", "INT", "TERM", "STOP"}[sc.pick(4)],
		delay: time.Duration(sc.pick(400)) * time.Millisecond}
	if sc.pick(3) == 0 {
		st.server = sc.pick(sc.spec.servers)
	} else {
		a := sc.anyAgent()
		st.agent, st.msgs = a, []msgSpec{sc.message(a)}
	}
	if st.sig == "STOP" {
		sc.stopped = append(sc.stopped, len(sc.steps))
	}
	return st
}

func (sc *scenario) cont() step {
	i := sc.pick(len(sc.stopped))
	of := sc.stopped[i]
	sc.stopped = slices.Delete(sc.stopped, i, i+1)
	return step{kind: stepCont, of: of}
}

// String is the step as the trace shows it.
func (st step) String() string {
	s := string(st.kind)
	switch st.kind {
	case stepSend, stepSignal, stepEnter, stepDraft, stepCue, stepExtra, stepSelect:
		if st.kind != stepSignal || st.msgs != nil {
			s += fmt.Sprintf(" agent#%d", st.agent)
		}
	}
	switch st.kind {
	case stepCue:
		s += " " + st.cue
	case stepDraft:
		s += fmt.Sprintf(" zd%dx", st.draft)
	case stepExtra:
		s += fmt.Sprintf(" %s split=%v detach=%v", st.prog, st.split, st.detach)
	case stepSelect:
		s += fmt.Sprintf(" pane %d", st.pick)
	case stepBroadcast:
		s += fmt.Sprintf(" server#%d %s", st.server, st.team)
	case stepCrash:
		s += fmt.Sprintf(" server#%d %s, the daemon killed after %s, api=%v", st.server, st.team, st.delay, st.api)
	case stepDeliver:
		s += fmt.Sprintf(" server#%d %s", st.server, st.team)
	case stepRestart:
		s += fmt.Sprintf(" server#%d order %v after %s", st.server, st.order, st.delay)
	case stepFill:
		s += fmt.Sprintf(" leave %d", st.leave)
	case stepSignal:
		s += " " + st.sig + " after " + st.delay.String()
		if st.msgs == nil {
			s += fmt.Sprintf(" (deliver on server#%d)", st.server)
		}
	case stepCont:
		s += fmt.Sprintf(" step %d", st.of)
	case stepPause:
		s += " " + st.delay.String()
	}
	for _, m := range st.msgs {
		to := ""
		if m.agent >= 0 && st.kind != stepSend {
			to = fmt.Sprintf(" to agent#%d", m.agent)
		}
		s += fmt.Sprintf(" [msg %d%s %s %v alias=%v]", m.n, to, m.shape, m.flags, m.alias)
	}
	if st.wait {
		s += " (wait)"
	}
	return s
}
