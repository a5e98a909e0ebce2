package chaos

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentmsg/agentmsg/e2e/harness"
)

// round runs one scenario on one world and judges it.
type round struct {
	seed  uint64
	on    map[string]bool
	w     *world
	steps []step
	logf  func(format string, args ...any)

	mu       sync.Mutex
	msgs     []*Message
	ops      []*op
	stopped  map[int]*op // by the signal step that stopped it
	dialogs  map[*agent]bool
	problems []Violation // what the driver saw: crashes, hangs
	trace    []string
	start    time.Time
}

// op is one agentmsg run in flight.
type op struct {
	what    string
	cmd     *exec.Cmd
	done    chan struct{}
	stdout  bytes.Buffer
	stderr  bytes.Buffer
	code    int
	signals []string
	after   func(*op) // reads its report, under round.mu
}

func (o *op) running() bool {
	select {
	case <-o.done:
		return false
	default:
		return true
	}
}

func newRound(seed uint64, on map[string]bool, w *world, steps []step, logf func(string, ...any)) *round {
	return &round{seed: seed, on: on, w: w, steps: steps, logf: logf, stopped: map[int]*op{},
		dialogs: map[*agent]bool{}, start: time.Now()}
}

func (r *round) note(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.trace = append(r.trace, fmt.Sprintf("%7.3fs ", time.Since(r.start).Seconds())+fmt.Sprintf(format, args...))
}

func (r *round) problem(rule, where, detail string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.problems = append(r.problems, Violation{Rule: rule, Where: where, Detail: detail})
}

// run runs the steps until they end or the deadline passes, and returns
// how many ran.
func (r *round) run(deadline time.Time) (int, error) {
	for i, st := range r.steps {
		if time.Now().After(deadline) {
			return i, nil
		}
		r.note("step %d: %s", i, st)
		err := r.do(i, st)
		switch {
		case err != nil && st.kind == stepRestart:
			return i, fmt.Errorf("step %d (%s): %w", i, st, err)
		case err != nil:
			// A person's action on a pane that is gone (an agent that
			// exited) fails; the scenario goes on.
			r.note("  step %d failed: %v", i, err)
		}
	}
	return len(r.steps), nil
}

func (r *round) do(i int, st step) error {
	w := r.w
	var ops []*op
	switch st.kind {
	case stepSend, stepBurst:
		for _, m := range st.msgs {
			ops = append(ops, r.send(m))
		}
	case stepBroadcast:
		ops = append(ops, r.broadcast(w.servers[st.server], st.team, st.msgs[0]))
	case stepDeliver:
		ops = append(ops, r.deliver(w.servers[st.server], st.team))
	case stepPause:
		time.Sleep(st.delay)
	case stepCue:
		return r.cue(w.agents[st.agent], st.cue)
	case stepDraft:
		a := w.agents[st.agent]
		text := draftText(st.draft)
		a.prog.Drafts = append(a.prog.Drafts, text)
		return a.srv.Server.TypeLiteral(a.Pane(), text)
	case stepEnter:
		a := w.agents[st.agent]
		return a.srv.Server.PressKeys(a.Pane(), "Enter")
	case stepExtra:
		d, err := w.addExtra(w.agents[st.agent], st.prog, st.split, st.detach)
		if d != nil {
			r.note("  %s", d.prog.Label)
		}
		return err
	case stepSelect:
		return r.selectPane(w.agents[st.agent], st.pick)
	case stepRestart:
		return r.restart(st)
	case stepFill:
		if w.mailbox != "" {
			return w.fillDisk(st.leave)
		}
	case stepFree:
		if w.mailbox != "" {
			return w.freeDisk()
		}
	case stepSignal:
		return r.signal(i, st)
	case stepCont:
		if o := r.stopped[st.of]; o != nil {
			delete(r.stopped, st.of)
			r.kill(o, syscall.SIGCONT, "CONT")
		}
	}
	if st.wait {
		for _, o := range ops {
			<-o.done
		}
	}
	return nil
}

// cue switches a stand-in's state. A person who opens or closes a dialog
// waits to see it: their next keys must not land in it.
func (r *round) cue(a *agent, state string) error {
	if a.sa == nil {
		return nil
	}
	if err := a.sa.SetState(state); err != nil {
		return err
	}
	wasDialog := r.dialogs[a]
	r.dialogs[a] = state == "dialog"
	if state != "dialog" && !wasDialog {
		return nil
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		screen, err := a.sa.Capture()
		if err != nil {
			return err
		}
		if strings.Contains(screen, "Do you want to proceed?") == (state == "dialog") {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: the %s cue did not show in 5s:\n%s", a.label(), state, screen)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (r *round) selectPane(a *agent, pick int) error {
	panes := []string{a.Pane()}
	for _, d := range a.extras {
		panes = append(panes, d.pane)
	}
	p := panes[pick%len(panes)]
	if _, err := a.srv.Server.Tmux("select-window", "-t", p); err != nil {
		return err
	}
	_, err := a.srv.Server.Tmux("select-pane", "-t", p)
	return err
}

// socket is srv's socket as a sender names it.
func socket(srv *server, alias bool) string {
	if alias {
		return srv.alias
	}
	return srv.Socket
}

func (r *round) newMessage(m msgSpec, how string) *Message {
	msg := &Message{N: m.n, Text: m.text, Op: how}
	r.mu.Lock()
	r.msgs = append(r.msgs, msg)
	r.mu.Unlock()
	return msg
}

// send starts one send; its report fills in the message's id and verdict.
func (r *round) send(m msgSpec) *op {
	a := r.w.agents[m.agent]
	msg := r.newMessage(m, fmt.Sprintf("send to %s, %s, %s", a.label(), m.shape, strings.Join(m.flags, " ")))
	c := &Copy{To: a.prog}
	msg.Copies = []*Copy{c}
	args := append([]string{"-S", socket(a.srv, m.alias), "--json", "send", a.spec.team, a.spec.name}, m.flags...)
	return r.launch(fmt.Sprintf("send msg %d to %s", m.n, a.label()), m.text, args, func(o *op) {
		rep, err := harness.Decode[harness.SendReport](o.stdout.String())
		if err != nil {
			return
		}
		msg.ID = rep.ID
		c.Verdict, c.Error, c.VerdictAt = rep.Verdict, rep.Error, time.Now()
	})
}

func (r *round) broadcast(srv *server, team string, m msgSpec) *op {
	msg := r.newMessage(m, fmt.Sprintf("broadcast to %s/%s, %s, %s", srv.name, team, m.shape, strings.Join(m.flags, " ")))
	copies := map[string]*Copy{}
	for _, a := range r.w.agents {
		if a.srv == srv && a.spec.team == team {
			c := &Copy{To: a.prog}
			copies[a.spec.name] = c
			msg.Copies = append(msg.Copies, c)
		}
	}
	args := append([]string{"-S", socket(srv, m.alias), "--json", "broadcast", team}, m.flags...)
	return r.launch(fmt.Sprintf("broadcast msg %d to %s/%s", m.n, srv.name, team), m.text, args, func(o *op) {
		rep, err := harness.Decode[harness.BroadcastReport](o.stdout.String())
		if err != nil {
			return
		}
		msg.ID = rep.ID
		for _, res := range rep.Results {
			c := copies[res.Agent]
			if c == nil || res.Team != team {
				r.problems = append(r.problems, Violation{Rule: "broadcast-target", Where: srv.name + "/" + res.Team + "/" + res.Agent,
					Msg: msg, Detail: "a broadcast to " + team + " reported a target not in the team"})
				continue
			}
			c.Verdict, c.Error, c.VerdictAt = res.Verdict, res.Error, time.Now()
		}
	})
}

func (r *round) deliver(srv *server, team string) *op {
	args := []string{"-S", srv.Socket, "--json", "deliver"}
	if team != "" {
		args = append(args, team)
	}
	return r.launch("deliver on "+srv.name+" "+team, "", args, func(o *op) {
		var rep struct {
			Results []struct {
				ID      string `json:"id"`
				Team    string `json:"team"`
				Agent   string `json:"agent"`
				Verdict string `json:"verdict"`
			} `json:"results"`
		}
		if json.Unmarshal(o.stdout.Bytes(), &rep) != nil {
			return
		}
		for _, res := range rep.Results {
			r.deliverVerdict(res.ID, res.Team, res.Agent, res.Verdict)
		}
	})
}

// deliverVerdict adds what deliver said to the copy it was about.
func (r *round) deliverVerdict(id, team, name, verdict string) {
	for _, m := range r.msgs {
		if m.ID != id {
			continue
		}
		for _, c := range m.Copies {
			if a := r.agentOf(c.To); a != nil && a.spec.team == team && a.spec.name == name {
				c.Delivers = append(c.Delivers, verdict)
			}
		}
	}
}

func (r *round) agentOf(p *Program) *agent {
	for _, a := range r.w.agents {
		if a.prog == p {
			return a
		}
	}
	return nil
}

// launch starts agentmsg with args and stdin; after reads its report when
// it ends.
func (r *round) launch(what, stdin string, args []string, after func(*op)) *op {
	o := &op{what: what, done: make(chan struct{}), after: after}
	o.cmd = exec.Command(r.w.bins.Agentmsg, args...)
	o.cmd.Env = r.w.env
	o.cmd.Stdin = strings.NewReader(stdin)
	o.cmd.Stdout, o.cmd.Stderr = &o.stdout, &o.stderr
	// A tmux it started may hold the pipes after it was killed.
	o.cmd.WaitDelay = 2 * time.Second
	r.mu.Lock()
	r.ops = append(r.ops, o)
	r.mu.Unlock()
	if err := o.cmd.Start(); err != nil {
		o.code = -1
		o.stderr.WriteString(err.Error())
		close(o.done)
		return o
	}
	go func() {
		err := o.cmd.Wait()
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			o.code = exitErr.ExitCode()
		}
		r.mu.Lock()
		o.after(o)
		r.checkRun(o)
		done := fmt.Sprintf("  done: %s: exit %d %s%s", o.what, o.code, verdictsOf(o), signalled(o))
		r.mu.Unlock()
		r.note("%s", done)
		close(o.done)
	}()
	return o
}

func verdictsOf(o *op) string {
	var vs []string
	for _, line := range strings.Split(o.stdout.String(), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, `"verdict"`) || strings.HasPrefix(line, `"id"`) || strings.HasPrefix(line, `"agent"`) {
			vs = append(vs, strings.TrimSuffix(strings.TrimSpace(strings.SplitN(line, ":", 2)[1]), ","))
		}
	}
	return strings.Join(vs, " ")
}

func signalled(o *op) string {
	if len(o.signals) == 0 {
		return ""
	}
	return " (signalled " + strings.Join(o.signals, ",") + ")"
}

// checkRun reports what no run may do, whatever happened around it: crash,
// or print anything but one JSON document with --json (README) without
// being killed.
func (r *round) checkRun(o *op) {
	out := o.stderr.String()
	switch {
	case strings.Contains(out, "panic:") || strings.Contains(out, "goroutine "):
		r.problems = append(r.problems, Violation{Rule: "crashed", Where: o.what, Detail: clipText(out)})
	case o.code == 2:
		r.problems = append(r.problems, Violation{Rule: "usage", Where: o.what, Detail: clipText(out)})
	case len(o.signals) == 0 && !json.Valid(o.stdout.Bytes()):
		r.problems = append(r.problems, Violation{Rule: "not-one-json", Where: o.what,
			Detail: fmt.Sprintf("exit %d, stdout %s, stderr %s", o.code, clipText(o.stdout.String()), clipText(out))})
	}
}

// kill signals one agentmsg this round started, by its pid.
func (r *round) kill(o *op, sig syscall.Signal, name string) {
	if o.cmd.Process == nil || !o.running() {
		return
	}
	r.mu.Lock()
	o.signals = append(o.signals, name)
	r.mu.Unlock()
	o.cmd.Process.Signal(sig)
	r.note("  %s to %s (pid %d)", name, o.what, o.cmd.Process.Pid)
}

var signals = map[string]syscall.Signal{"KILL": syscall.SIGKILL, "INT": syscall.SIGINT, "TERM": syscall.SIGTERM, "STOP": syscall.SIGSTOP}

func (r *round) signal(i int, st step) error {
	var o *op
	if st.msgs != nil {
		o = r.send(st.msgs[0])
	} else {
		o = r.deliver(r.w.servers[st.server], "")
	}
	select {
	case <-o.done:
		return nil
	case <-time.After(st.delay):
	}
	r.kill(o, signals[st.sig], st.sig)
	if st.sig == "STOP" {
		r.stopped[i] = o
	}
	return nil
}

func (r *round) restart(st step) error {
	srv := r.w.servers[st.server]
	for _, m := range st.msgs {
		r.send(m)
	}
	time.Sleep(st.delay)
	var mine []*agent
	for _, a := range r.w.agents {
		if a.srv == srv {
			mine = append(mine, a)
			delete(r.dialogs, a)
		}
	}
	order := make([]*agent, len(mine))
	for i, j := range st.order {
		order[i] = mine[j]
	}
	return r.w.restart(srv, order)
}

// drain ends the round as a person would: everything stopped goes on, the
// disk has room, every agent is ready, whatever was left in a box (their
// draft, a message agentmsg typed and did not submit) is submitted, and
// deliver runs until nothing more happens.
func (r *round) drain() error {
	for i, o := range r.stopped {
		r.kill(o, syscall.SIGCONT, "CONT")
		delete(r.stopped, i)
	}
	r.waitOps(90 * time.Second)
	if r.w.mailbox != "" {
		if err := r.w.freeDisk(); err != nil {
			return err
		}
	}
	r.quiesce()
	for _, a := range r.w.agents {
		if a.sa == nil {
			continue
		}
		if err := r.cue(a, "ready"); err != nil {
			r.problem("drain", a.label(), err.Error())
		}
	}
	r.quiesce()
	r.note("drain: Enter in every pane")
	for _, a := range r.w.agents {
		a.srv.Server.PressKeys(a.Pane(), "Enter") // an agent that exited has no pane to press in
		for _, d := range a.extras {
			a.srv.Server.PressKeys(d.pane, "Enter")
		}
	}
	for range 2 {
		r.quiesce()
		for _, srv := range r.w.servers {
			<-r.deliver(srv, "").done
		}
	}
	return nil
}

// waitOps waits for this round's runs to end, and kills those that do not.
func (r *round) waitOps(timeout time.Duration) {
	deadline := time.After(timeout)
	r.mu.Lock()
	ops := slices.Clone(r.ops)
	r.mu.Unlock()
	for _, o := range ops {
		select {
		case <-o.done:
		case <-deadline:
			if o.running() {
				r.problem("hung", o.what, fmt.Sprintf("still running after %s; signals %v; killed", timeout, o.signals))
				r.kill(o, syscall.SIGKILL, "KILL")
				<-o.done
			}
		}
	}
}

// quietFor is how long nothing may happen for the round to count as over:
// no agentmsg running (a hook's deliver included), no record growing. It
// is well above how long a stand-in stays busy after a prompt (300 ms at
// most), after which its turn-end hook would start a deliver.
const quietFor = 3 * time.Second

// quiesce waits until nothing has happened for quietFor.
func (r *round) quiesce() {
	deadline := time.Now().Add(2 * time.Minute)
	since, sizes := time.Now(), r.w.logSizes()
	for time.Since(since) < quietFor {
		if time.Now().After(deadline) {
			pids := agentmsgPids(r.w.bins.Agentmsg)
			r.problem("never-quiet", "the round", fmt.Sprintf("still busy after 2 minutes: %s", describePids(pids)))
			endAgentmsgs(r.w.bins.Agentmsg, 0)
			return
		}
		time.Sleep(50 * time.Millisecond)
		if now := r.w.logSizes(); now != sizes || len(agentmsgPids(r.w.bins.Agentmsg)) > 0 {
			since, sizes = time.Now(), now
		}
	}
}

// logEntry is one message of `log --json`.
type logEntry struct {
	Team     string `json:"team"`
	Inbox    string `json:"inbox"`
	ID       string `json:"id"`
	Content  string `json:"content"`
	Delivery struct {
		State       string `json:"state"`
		LastVerdict string `json:"last_verdict"`
	} `json:"delivery"`
}

// snapshot reads every program's record and every inbox at a moment when
// nothing happens, and fills in the copies' inbox states.
func (r *round) snapshot() ([]*Program, error) {
	for {
		r.quiesce()
		before := r.w.logSizes()
		var entries []logEntry
		for _, srv := range r.w.servers {
			res, err := r.w.run(nil, "-S", srv.Socket, "--json", "log")
			if err != nil {
				return nil, err
			}
			var doc struct{ Messages []logEntry }
			if err := json.Unmarshal([]byte(res.Stdout), &doc); err != nil {
				return nil, fmt.Errorf("log --json on %s: %v\n%s", srv.name, err, res)
			}
			entries = append(entries, doc.Messages...)
		}
		progs, err := r.w.programs()
		if err != nil {
			return nil, err
		}
		if r.w.logSizes() != before || len(agentmsgPids(r.w.bins.Agentmsg)) > 0 {
			continue // something happened while we read: read again
		}
		r.applyLog(entries)
		return progs, nil
	}
}

// applyLog gives each copy what its inbox says. A message whose sender
// never said its id is found by its tag.
func (r *round) applyLog(entries []logEntry) {
	for _, m := range r.msgs {
		for _, c := range m.Copies {
			a := r.agentOf(c.To)
			for _, e := range entries {
				if e.Team != a.spec.team || e.Inbox != a.spec.name {
					continue
				}
				if m.ID == "" && strings.Contains(e.Content, messageTag(m.N)+"L0") {
					m.ID = e.ID
				}
				if e.ID == m.ID {
					c.State, c.Content = e.Delivery.State, e.Content
					c.LastVerdict, _, _ = strings.Cut(e.Delivery.LastVerdict, ":")
				}
			}
		}
	}
}

// judge runs the oracle on the snapshot.
func (r *round) judge(progs []*Program) (vs []Violation, notes []string) {
	vs, notes = Check(r.msgs, progs)
	return append(r.problems, vs...), notes
}

// verdictCounts counts the senders' verdicts, for the report.
func (r *round) verdictCounts() string {
	counts := map[string]int{}
	for _, m := range r.msgs {
		for _, c := range m.Copies {
			counts[orDash(c.Verdict)]++
		}
	}
	var ks []string
	for k, n := range counts {
		ks = append(ks, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(ks)
	return strings.Join(ks, ", ")
}
