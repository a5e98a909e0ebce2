// Package procs reads the process table: a process's parent, group,
// session, terminal, state and start, its arguments and its executable.
// It is the one place that knows how each OS tells these (/proc on Linux,
// sysctl kern.proc and kern.procargs2 on Darwin); its callers (profile
// detection, kill, lock holders, a tmux server's binary) ask the question
// and never name an OS.
//
// The parsing is here, in pure functions that the tests run on any OS:
// a Linux stat line, a Darwin procargs2 buffer, the kinfo_proc fields.
//
// Built with the tag agentmsg_portable, Linux leaves out what Darwin has
// no counterpart for (the kernel's lists of a process's children), so
// that the code Darwin takes runs in Linux's tests too (scripts/test).
package procs

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Proc is one process as the kernel tells it.
type Proc struct {
	PID, PPID, PGID, SID int
	// TPGID is the foreground process group of the process's controlling
	// terminal; 0 when it has no terminal.
	TPGID int
	// State is a letter as Linux's ps shows it: R running, S sleeping, D
	// in uninterruptible sleep, T stopped, t traced, Z zombie (ended, not
	// reaped), X exiting; other letters for states no caller asks about.
	State byte
	// Start is when the process started, in a unit of the OS's own (clock
	// ticks since boot on Linux, microseconds since the epoch on Darwin):
	// compared only with itself, it tells a reused pid apart.
	Start uint64
	// Comm is the name of its program as the kernel keeps it (at most 15
	// bytes on Linux, 16 on Darwin).
	Comm string
}

// Ended reports whether the process has ended (a zombie waiting to be
// reaped, or one on its way out).
func (p Proc) Ended() bool { return p.State == 'Z' || p.State == 'X' }

// ErrNoProcess: no process has that pid (it ended, or never was).
var ErrNoProcess = errors.New("no such process")

// ErrUnsupported: this OS (or this build) cannot answer that question;
// the caller takes another way or says what it cannot tell.
var ErrUnsupported = errors.ErrUnsupported

// ParseStat parses a Linux /proc/PID/stat line. The command name is in
// parentheses and may hold spaces and parentheses itself, so the fields
// after it are counted from the last ')'.
func ParseStat(s string) (Proc, error) {
	open := strings.IndexByte(s, '(')
	end := strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return Proc{}, fmt.Errorf("bad stat line %q", s)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(s[:open]))
	if err != nil {
		return Proc{}, fmt.Errorf("bad pid in stat line %q", s)
	}
	f := strings.Fields(s[end+1:])
	// f[0] state, f[1] ppid, f[2] pgrp, f[3] session, f[4] tty_nr,
	// f[5] tpgid, ..., f[19] starttime.
	if len(f) < 20 || len(f[0]) != 1 {
		return Proc{}, fmt.Errorf("short stat line for pid %d", pid)
	}
	p := Proc{PID: pid, State: f[0][0], Comm: s[open+1 : end]}
	for i, dst := range []*int{&p.PPID, &p.PGID, &p.SID} {
		if *dst, err = strconv.Atoi(f[1+i]); err != nil {
			return Proc{}, fmt.Errorf("bad stat line for pid %d: %w", pid, err)
		}
	}
	if p.TPGID, err = strconv.Atoi(f[5]); err != nil {
		return Proc{}, fmt.Errorf("bad stat line for pid %d: %w", pid, err)
	}
	p.TPGID = max(p.TPGID, 0) // -1: no terminal
	if p.Start, err = strconv.ParseUint(f[19], 10, 64); err != nil {
		return Proc{}, fmt.Errorf("bad start time for pid %d: %w", pid, err)
	}
	return p, nil
}

// SplitCmdline splits a Linux /proc/PID/cmdline (arguments each ended by
// a NUL); nil when it is empty (a zombie, or a kernel thread).
func SplitCmdline(b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
}

// ParseProcargs2 parses what Darwin's sysctl kern.procargs2 gives for a
// process: argc (a 32-bit int in the machine's order), the executable's
// path as it was exec'd, NULs that pad it, then argc arguments each ended
// by a NUL, then the environment (not read here).
func ParseProcargs2(b []byte) (exe string, argv []string, err error) {
	if len(b) < 4 {
		return "", nil, errors.New("kern.procargs2: too short for argc")
	}
	argc := int(int32(binary.NativeEndian.Uint32(b)))
	rest := b[4:]
	i := bytes.IndexByte(rest, 0)
	if i < 0 {
		return "", nil, errors.New("kern.procargs2: the executable's path has no end")
	}
	exe, rest = string(rest[:i]), rest[i:]
	for len(rest) > 0 && rest[0] == 0 {
		rest = rest[1:]
	}
	if argc < 0 || argc > len(rest) {
		return "", nil, fmt.Errorf("kern.procargs2: argc %d for %d bytes of arguments", argc, len(rest))
	}
	argv = make([]string, 0, argc)
	for range argc {
		i := bytes.IndexByte(rest, 0)
		if i < 0 {
			return "", nil, fmt.Errorf("kern.procargs2: argument %d of %d has no end", len(argv)+1, argc)
		}
		argv = append(argv, string(rest[:i]))
		rest = rest[i+1:]
	}
	return exe, argv, nil
}

// Kinfo holds the fields of a Darwin struct kinfo_proc that Proc is made
// of (the Darwin file copies them out of unix.KinfoProc).
type Kinfo struct {
	PID, PPID, PGID, TPGID int32
	Stat                   int8  // p_stat: SIDL 1, SRUN 2, SSLEEP 3, SSTOP 4, SZOMB 5
	Flag                   int32 // p_flag
	StartSec, StartUsec    int64 // p_starttime
	Comm                   []byte
}

// Darwin's p_flag bits and p_stat values (sys/proc.h).
const (
	darwinControlT = 0x2    // P_CONTROLT: has a controlling terminal
	darwinExiting  = 0x2000 // P_WEXIT: working on exiting
	darwinSIDL     = 1
	darwinSRUN     = 2
	darwinSSLEEP   = 3
	darwinSSTOP    = 4
	darwinSZOMB    = 5
)

// FromKinfo makes a Proc of Darwin's fields; sid comes from getsid(2),
// kinfo_proc having none.
func FromKinfo(k Kinfo, sid int) Proc {
	p := Proc{PID: int(k.PID), PPID: int(k.PPID), PGID: int(k.PGID), SID: sid,
		Start: uint64(k.StartSec)*1_000_000 + uint64(k.StartUsec)}
	if k.Flag&darwinControlT != 0 && k.TPGID > 0 {
		p.TPGID = int(k.TPGID)
	}
	if i := bytes.IndexByte(k.Comm, 0); i >= 0 {
		p.Comm = string(k.Comm[:i])
	} else {
		p.Comm = string(k.Comm)
	}
	switch {
	case k.Stat == darwinSZOMB:
		p.State = 'Z'
	case k.Flag&darwinExiting != 0:
		p.State = 'X'
	case k.Stat == darwinSSTOP:
		p.State = 'T'
	case k.Stat == darwinSRUN, k.Stat == darwinSIDL:
		p.State = 'R'
	case k.Stat == darwinSSLEEP:
		p.State = 'S'
	default:
		p.State = '?'
	}
	return p
}

// System is the machine's process table as a value, for callers that take
// a table (their tests give one of their own).
type System struct{}

func (System) Get(pid int) (Proc, error)       { return Get(pid) }
func (System) All() ([]Proc, error)            { return All() }
func (System) Children(pid int) ([]int, error) { return Children(pid) }
func (System) Argv(pid int) ([]string, error)  { return Argv(pid) }
func (System) Exe(pid int) (string, error)     { return Exe(pid) }
