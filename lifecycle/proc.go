package lifecycle

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// proc is one process as /proc/PID/stat shows it.
type proc struct {
	PID, PPID, PGID, SID int
	State                byte   // R, S, D, Z, X, ...
	Start                uint64 // start time in clock ticks since boot: tells a reused pid apart
}

// gone reports whether the process has ended: no longer there, replaced
// by another with its pid, or a zombie waiting to be reaped.
func (p proc) gone(now proc, ok bool) bool {
	return !ok || now.Start != p.Start || now.State == 'Z' || now.State == 'X'
}

// procRoot is where the process table is read; a test may point it
// elsewhere.
var procRoot = "/proc"

// readProc reads one process; ok is false when it does not exist.
func readProc(pid int) (proc, bool) {
	data, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "stat"))
	if err != nil {
		return proc{}, false
	}
	p, err := parseStat(string(data))
	return p, err == nil
}

// parseStat parses a /proc/PID/stat line. The command name is in
// parentheses and may hold spaces and parentheses itself, so the fields
// are counted from the last ')'.
func parseStat(s string) (proc, error) {
	open := strings.IndexByte(s, '(')
	end := strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return proc{}, fmt.Errorf("bad stat line %q", s)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(s[:open]))
	if err != nil {
		return proc{}, fmt.Errorf("bad pid in stat line %q", s)
	}
	f := strings.Fields(s[end+1:])
	// f[0] state, f[1] ppid, f[2] pgrp, f[3] session, ..., f[19] starttime.
	if len(f) < 20 || len(f[0]) != 1 {
		return proc{}, fmt.Errorf("short stat line for pid %d", pid)
	}
	p := proc{PID: pid, State: f[0][0]}
	nums := []*int{&p.PPID, &p.PGID, &p.SID}
	for i, dst := range nums {
		if *dst, err = strconv.Atoi(f[1+i]); err != nil {
			return proc{}, fmt.Errorf("bad stat line for pid %d: %w", pid, err)
		}
	}
	if p.Start, err = strconv.ParseUint(f[19], 10, 64); err != nil {
		return proc{}, fmt.Errorf("bad start time for pid %d: %w", pid, err)
	}
	return p, nil
}

// scanProcs reads the whole process table.
func scanProcs() (map[int]proc, error) {
	ents, err := os.ReadDir(procRoot)
	if err != nil {
		return nil, fmt.Errorf("reading the process table: %w", err)
	}
	out := make(map[int]proc, len(ents))
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := readProc(pid); ok {
			out[pid] = p
		}
	}
	if len(out) == 0 {
		return nil, errors.New("reading the process table: no processes under " + procRoot)
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
		if p := all[pid]; p.State != 'Z' && p.State != 'X' {
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
		now, ok := readProc(p.PID)
		if !p.gone(now, ok) {
			out = append(out, p)
		}
	}
	return out
}

// pidAlive reports whether pid runs (a zombie does not).
func pidAlive(pid int) bool {
	p, ok := readProc(pid)
	return ok && p.State != 'Z' && p.State != 'X'
}

func pids(procs []proc) []int {
	out := make([]int, len(procs))
	for i, p := range procs {
		out[i] = p.PID
	}
	return out
}
