package lifecycle

import (
	"errors"
	"fmt"
	"slices"

	"github.com/agentmsg/agentmsg/internal/procs"
)

// proc is one process as the kernel tells it (package procs: /proc on
// Linux, sysctl on Darwin).
type proc = procs.Proc

// gone reports whether p has ended: no longer there, replaced by another
// with its pid, or a zombie waiting to be reaped.
func gone(p, now proc, ok bool) bool {
	return !ok || now.Start != p.Start || now.Ended()
}

// goneNow reports whether p has ended by now.
func goneNow(p proc) bool {
	now, ok := readProc(p.PID)
	return gone(p, now, ok)
}

// readProc reads one process; ok is false when it does not exist.
func readProc(pid int) (proc, bool) {
	p, err := procs.Get(pid)
	return p, err == nil
}

// scanProcs reads the whole process table.
func scanProcs() (map[int]proc, error) {
	all, err := procs.All()
	if err != nil {
		return nil, fmt.Errorf("reading the process table: %w", err)
	}
	out := make(map[int]proc, len(all))
	for _, p := range all {
		out[p.PID] = p
	}
	if len(out) == 0 {
		return nil, errors.New("reading the process table: it lists no process")
	}
	return out, nil
}

// family is every live process that belongs to the pane whose first
// process is root: root and all its descendants; every process still in
// root's session (tmux makes the pane's first process a session leader,
// so a double-forked daemon that left the tree but kept the session is
// found too); and every member of a process group led by one of those.
// Zombies are left out: they have ended already. Sorted by pid.
func family(all map[int]proc, root int) []proc {
	r, ok := all[root]
	if !ok {
		return nil
	}
	in := map[int]bool{root: true}
	children := map[int][]int{}
	for _, p := range all {
		children[p.PPID] = append(children[p.PPID], p.PID)
	}
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range children[pid] {
			if !in[c] {
				in[c] = true
				queue = append(queue, c)
			}
		}
	}
	for _, p := range all {
		if r.SID == root && p.SID == root {
			in[p.PID] = true
		}
	}
	leaders := map[int]bool{}
	for pid := range in {
		leaders[all[pid].PGID] = true
	}
	for _, p := range all {
		if leaders[p.PGID] && in[p.PGID] {
			in[p.PID] = true
		}
	}
	var out []proc
	for pid := range in {
		if p := all[pid]; !p.Ended() {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b proc) int { return a.PID - b.PID })
	return out
}

// alive is the subset of procs that have not ended.
func alive(procs []proc) []proc {
	var out []proc
	for _, p := range procs {
		if !goneNow(p) {
			out = append(out, p)
		}
	}
	return out
}

// pidAlive reports whether pid runs (a zombie does not).
func pidAlive(pid int) bool {
	p, ok := readProc(pid)
	return ok && !p.Ended()
}

func pids(procs []proc) []int {
	out := make([]int, len(procs))
	for i, p := range procs {
		out[i] = p.PID
	}
	return out
}
