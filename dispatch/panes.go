package dispatch

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/agentmsg/agentmsg/profile"
	"github.com/agentmsg/agentmsg/target"
	"github.com/agentmsg/agentmsg/tmux"
)

// ErrPaneChoice: the agent's session has several panes and none of them
// can be told to be the agent's, or the pane asked for is not there.
// Typing into whichever pane a person left active would type into a dev
// server or an editor, so nothing is typed; it counts as no such target.
var ErrPaneChoice = fmt.Errorf("%w: cannot tell which pane is the agent's", ErrTargetNotFound)

// PaneChoiceError is an ErrPaneChoice with what a person needs to choose.
type PaneChoiceError struct {
	Target target.Target
	Panes  []tmux.Pane // the session's panes (or those Asked named)
	Known  int         // how many of them run a known agent CLI
	Asked  string      // the pane asked for, "" none
}

func (e *PaneChoiceError) Error() string {
	switch {
	case e.Asked != "" && len(e.Panes) > 1:
		return fmt.Sprintf("%q names %d panes of %s (%s)", e.Asked, len(e.Panes), e.Target.Session, describePanes(e.Panes))
	case e.Asked != "":
		return fmt.Sprintf("%s has no pane %q (its panes: %s)", e.Target.Session, e.Asked, describePanes(e.Panes))
	}
	why := "none runs a known agent CLI"
	if e.Known > 1 {
		why = fmt.Sprintf("%d run a known agent CLI", e.Known)
	}
	return fmt.Sprintf("%s has %d panes and %s, so it cannot be told which is the agent's: %s", e.Target.Session, len(e.Panes), why, describePanes(e.Panes))
}

func (e *PaneChoiceError) Unwrap() error { return ErrPaneChoice }

// Example is a pane address to show in a hint: the first pane's.
func (e *PaneChoiceError) Example() string {
	if len(e.Panes) == 0 {
		return "0.0"
	}
	return PaneAddress(sortedPanes(e.Panes)[0])
}

// Registration is what spawn recorded of an agent's pane: its id and its
// first process, which together name it for its whole life (ids start
// again on a new server, and pids are not reused while it lives).
type Registration struct {
	Pane string
	PID  int
	// Kind is the agent CLI spawn was told the pane runs ("" not told),
	// and Profile that profile (nil when no profile has the name now).
	Kind    string
	Profile *profile.Profile
}

// registered is what spawn recorded of t, while pane is the pane it
// started (the same pane, running the same first process).
func (d *Dispatcher) registered(t target.Target, pane tmux.Pane) (Registration, bool) {
	if d.Registered == nil {
		return Registration{}, false
	}
	reg, ok := d.Registered(t)
	return reg, ok && reg.Pane == pane.ID && reg.PID == pane.PID
}

// choosePane picks t's pane among its session's panes: the one asked for
// (sel: --pane, or the config's [panes]); the only one; the one spawn
// registered, while it still runs the process spawn started; else the
// one pane whose program is a known agent CLI. Anything else is refused,
// naming the panes and how to choose one.
func (d *Dispatcher) choosePane(t target.Target, panes []tmux.Pane, sel string) (tmux.Pane, error) {
	if sel == "" && d.PaneFor != nil {
		sel = d.PaneFor(t)
	}
	if sel != "" {
		return selectPane(t, panes, sel)
	}
	if len(panes) == 1 {
		return panes[0], nil
	}
	if d.Registered != nil {
		if reg, ok := d.Registered(t); ok {
			for _, p := range panes {
				if p.ID == reg.Pane && p.PID == reg.PID {
					return p, nil
				}
			}
		}
	}
	var known []tmux.Pane
	if d.Known != nil {
		for _, p := range panes {
			if _, ok := d.Known(p); ok {
				known = append(known, p)
			}
		}
	}
	if len(known) == 1 {
		return known[0], nil
	}
	return tmux.Pane{}, &PaneChoiceError{Target: t, Panes: panes, Known: len(known)}
}

// selectPane is the pane sel names in t's session: "%N" (a pane id),
// "W.P" (window index or name, pane index), or "W" (a window of one pane).
func selectPane(t target.Target, panes []tmux.Pane, sel string) (tmux.Pane, error) {
	var hits []tmux.Pane
	for _, p := range panes {
		if paneMatches(p, sel) {
			hits = append(hits, p)
		}
	}
	switch len(hits) {
	case 1:
		return hits[0], nil
	case 0:
		return tmux.Pane{}, &PaneChoiceError{Target: t, Panes: panes, Asked: sel}
	}
	return tmux.Pane{}, &PaneChoiceError{Target: t, Panes: hits, Asked: sel}
}

func paneMatches(p tmux.Pane, sel string) bool {
	if strings.HasPrefix(sel, "%") {
		return p.ID == sel
	}
	win, pane, hasPane := strings.Cut(sel, ".")
	if !hasPane {
		// A window name may hold a dot; the whole selector is tried as
		// one too.
		win = sel
	}
	sameWindow := win == strconv.Itoa(p.WindowIndex) || win == p.WindowName
	if !hasPane {
		return sameWindow
	}
	return (sameWindow && pane == strconv.Itoa(p.Index)) || sel == p.WindowName
}

// PaneAddress names p within its session: window index and pane index
// ("1.0"), as a pane choice takes it.
func PaneAddress(p tmux.Pane) string { return fmt.Sprintf("%d.%d", p.WindowIndex, p.Index) }

// sortedPanes is panes in window, then pane order.
func sortedPanes(panes []tmux.Pane) []tmux.Pane {
	sorted := slices.Clone(panes)
	slices.SortFunc(sorted, func(a, b tmux.Pane) int {
		if a.WindowIndex != b.WindowIndex {
			return a.WindowIndex - b.WindowIndex
		}
		return a.Index - b.Index
	})
	return sorted
}

// describePanes lists panes for a person choosing one.
func describePanes(panes []tmux.Pane) string {
	sorted := sortedPanes(panes)
	parts := make([]string, len(sorted))
	for i, p := range sorted {
		parts[i] = fmt.Sprintf("%s %s %s (window %q)", PaneAddress(p), p.ID, p.Command, p.WindowName)
	}
	return strings.Join(parts, ", ")
}
