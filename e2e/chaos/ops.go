package chaos

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/agentmsg/agentmsg/e2e/harness"
)

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

// broadcast starts one broadcast; its report fills in the id and each
// copy's verdict. alone: no other step runs until it ends, so no server
// restarts under it, and each agent with one pane must get it if any does.
func (r *round) broadcast(srv *server, team string, m msgSpec, alone bool) *op {
	msg, copies := r.broadcastMessage(srv, team, m, "broadcast", alone)
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

// broadcastMessage is a broadcast's message to the agents of team on srv,
// one copy each (by name); with alone, a copy to an agent whose pane a
// broadcast can tell now is Tellable.
func (r *round) broadcastMessage(srv *server, team string, m msgSpec, how string, alone bool) (*Message, map[string]*Copy) {
	msg := r.newMessage(m, fmt.Sprintf("%s to %s/%s, %s, %s", how, srv.name, team, m.shape, strings.Join(m.flags, " ")))
	copies := map[string]*Copy{}
	for _, a := range r.w.agents {
		if a.srv == srv && a.spec.team == team {
			c := &Copy{To: a.prog, Tellable: alone && tellable(a)}
			copies[a.spec.name] = c
			msg.Copies = append(msg.Copies, c)
		}
	}
	return msg, copies
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
