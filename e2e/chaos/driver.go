package chaos

import (
	"fmt"
	"strings"
	"sync"
	"syscall"
	"time"
)

// round runs one scenario on one world and judges it.
type round struct {
	seed  uint64
	on    map[string]bool
	w     *world
	steps []step

	mu       sync.Mutex
	msgs     []*Message
	ops      []*op
	stopped  map[int]*op // by the signal step that stopped it
	dialogs  map[*agent]bool
	problems []Violation // what the driver saw: crashes, hangs
	trace    []string
	start    time.Time
	lost     []*apiCall // an app's broadcasts whose answer never came, to ask again
	kills    int        // of the daemon, in broadcasts
}

func newRound(seed uint64, on map[string]bool, w *world, steps []step) *round {
	return &round{seed: seed, on: on, w: w, steps: steps, stopped: map[int]*op{},
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
		ops = append(ops, r.broadcast(w.servers[st.server], st.team, st.msgs[0], st.wait))
	case stepCrash:
		return r.crash(st)
	case stepDeliver:
		ops = append(ops, r.deliver(w.servers[st.server], st.team))
	case stepPause:
		time.Sleep(st.delay)
	case stepCue:
		return r.cue(w.agents[st.agent], st.cue)
	case stepDraft:
		a := w.agents[st.agent]
		text := draftText(st.draft)
		if showsDialog(a, a.Pane()) {
			// A person types a draft into a box, not into a dialog: keys
			// there are counted against agentmsg.
			r.note("  draft skipped: %s shows a dialog", a.label())
			return nil
		}
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
		if strings.Contains(screen, dialogCue) == (state == "dialog") {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: the %s cue did not show in 5s:\n%s", a.label(), state, screen)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// dialogCue is what a stand-in's dialog shows.
const dialogCue = "Do you want to proceed?"

// showsDialog reports whether pane (a's or one beside it) shows a
// stand-in's dialog now.
func showsDialog(a *agent, pane string) bool {
	screen, err := a.srv.Server.Capture(pane)
	return err == nil && strings.Contains(screen, dialogCue)
}

func (r *round) selectPane(a *agent, pick int) error {
	panes := append([]string{a.Pane()}, a.extraPanes()...)
	p := panes[pick%len(panes)]
	if _, err := a.srv.Server.Tmux("select-window", "-t", p); err != nil {
		return err
	}
	_, err := a.srv.Server.Tmux("select-pane", "-t", p)
	return err
}

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
	// A person restarting agents makes room first: spawn registers the
	// agents it starts again in the mailbox.
	if r.w.mailbox != "" {
		if err := r.w.freeDisk(); err != nil {
			return err
		}
	}
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
