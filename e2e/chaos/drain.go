package chaos

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"time"
)

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
	// The rest runs on its own, as it would once the daemon is stopped:
	// deliver records what a broadcast the daemon died in left for it.
	r.daemonCrashed()
	if err := r.w.stopDaemon(); err != nil {
		r.problem("daemon-stop", "agentmsg serve", err.Error())
	}
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
		for _, pane := range append([]string{a.Pane()}, a.extraPanes()...) {
			if showsDialog(a, pane) {
				// The person's Enter would answer it: a stand-in restarted
				// by the round read its last cue again. Closed first.
				r.dialogs[a] = true // so that cue waits for it to close
				if err := r.cue(a, "ready"); err != nil || showsDialog(a, pane) {
					r.note("drain: %s still shows a dialog; no Enter", a.label())
					continue
				}
			}
			a.srv.Server.PressKeys(pane, "Enter") // an agent that exited has no pane to press in
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
					c.Records++
				}
			}
		}
	}
}

// judge runs the oracle on the snapshot. Its notes start with what the
// senders said went wrong, by kind: a refusal breaks no promise, but many
// of one kind may be a bug of their own (sends failing under load).
func (r *round) judge(progs []*Program) (vs []Violation, notes []string) {
	vs, notes = Check(r.msgs, progs)
	return append(r.problems, vs...), append(r.errorCounts(), notes...)
}

func (r *round) errorCounts() []string {
	counts := map[string]int{}
	for _, m := range r.msgs {
		for _, c := range m.Copies {
			if c.Error != "" {
				counts[c.Verdict+": "+digits.ReplaceAllString(firstRunes(c.Error, 100), "N")]++
			}
		}
	}
	var out []string
	for k, n := range counts {
		out = append(out, fmt.Sprintf("%d× %s", n, k))
	}
	sort.Strings(out)
	return out
}

// digits makes errors that differ only in numbers (pids, times) one kind.
var digits = regexp.MustCompile(`[0-9]+`)

func firstRunes(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
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
