package procs

import (
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestParseStat(t *testing.T) {
	t.Parallel()
	tests := []struct {
		line string
		want Proc
		bad  bool
	}{
		{line: "42 (sleep) S 7 42 40 34816 42 4194560 105 0 0 0 0 0 0 0 20 0 1 0 123456 0 0",
			want: Proc{PID: 42, PPID: 7, PGID: 42, SID: 40, TPGID: 42, State: 'S', Start: 123456, Comm: "sleep"}},
		// A command name may hold spaces and parentheses; -1: no terminal.
		{line: "9 (a (b) c) R 1 9 9 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 77 0 0",
			want: Proc{PID: 9, PPID: 1, PGID: 9, SID: 9, State: 'R', Start: 77, Comm: "a (b) c"}},
		{line: "5 (z) Z 1 5 5 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 8 0 0",
			want: Proc{PID: 5, PPID: 1, PGID: 5, SID: 5, State: 'Z', Start: 8, Comm: "z"}},
		{line: "5 (short) S 1 5", bad: true},
		{line: "x (y) S 1 5 5 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 8 0 0", bad: true},
		{line: "garbage", bad: true},
	}
	for _, tt := range tests {
		got, err := ParseStat(tt.line)
		if tt.bad {
			if err == nil {
				t.Errorf("ParseStat(%q) = %+v, want an error", tt.line, got)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseStat(%q) = %+v, %v; want %+v", tt.line, got, err, tt.want)
		}
	}
}

func TestSplitCmdline(t *testing.T) {
	t.Parallel()
	if got := SplitCmdline([]byte("node\x00/g/bin/gemini\x00--yolo\x00")); !slices.Equal(got, []string{"node", "/g/bin/gemini", "--yolo"}) {
		t.Errorf("SplitCmdline = %q", got)
	}
	if got := SplitCmdline(nil); got != nil {
		t.Errorf("SplitCmdline(empty) = %q, want nil", got)
	}
}

// procargs2 builds a buffer as Darwin's kern.procargs2 lays it out.
func procargs2(argc int32, exe string, pad int, args ...string) []byte {
	b := binary.NativeEndian.AppendUint32(nil, uint32(argc))
	b = append(b, exe...)
	b = append(b, make([]byte, 1+pad)...)
	for _, a := range args {
		b = append(append(b, a...), 0)
	}
	return append(b, "HOME=/Users/ana\x00PATH=/usr/bin\x00"...)
}

func TestParseProcargs2(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		buf  []byte
		exe  string
		argv []string
		bad  bool
	}{
		{name: "node launcher", buf: procargs2(3, "/opt/homebrew/bin/node", 9, "node", "/opt/homebrew/lib/node_modules/@openai/codex/bin/codex.js", "--no-daemon"),
			exe: "/opt/homebrew/bin/node", argv: []string{"node", "/opt/homebrew/lib/node_modules/@openai/codex/bin/codex.js", "--no-daemon"}},
		{name: "no padding", buf: procargs2(1, "/bin/zsh", 0, "-zsh"), exe: "/bin/zsh", argv: []string{"-zsh"}},
		{name: "an empty argument kept", buf: procargs2(3, "/usr/bin/env", 3, "env", "", "x"), exe: "/usr/bin/env", argv: []string{"env", "", "x"}},
		{name: "no arguments", buf: procargs2(0, "/sbin/launchd", 2), exe: "/sbin/launchd", argv: []string{}},
		{name: "short", buf: []byte{1, 0}, bad: true},
		{name: "path without end", buf: append(binary.NativeEndian.AppendUint32(nil, 1), "/bin/sh"...), bad: true},
		// The environment's strings follow the arguments: argc says where
		// the arguments end, and one more than there are strings is wrong.
		{name: "argc one past the strings", buf: procargs2(4, "/bin/sh", 1, "sh"), bad: true},
		{name: "argc below the strings", buf: procargs2(1, "/bin/sh", 1, "sh", "-c"), exe: "/bin/sh", argv: []string{"sh"}},
		{name: "argc past the end", buf: procargs2(99, "/bin/sh", 1, "sh"), bad: true},
		{name: "negative argc", buf: procargs2(-1, "/bin/sh", 1, "sh"), bad: true},
	} {
		exe, argv, err := ParseProcargs2(tt.buf)
		if tt.bad {
			if err == nil {
				t.Errorf("%s: ParseProcargs2 = %q %q, want an error", tt.name, exe, argv)
			}
			continue
		}
		if err != nil || exe != tt.exe || !slices.Equal(argv, tt.argv) {
			t.Errorf("%s: ParseProcargs2 = %q %q %v, want %q %q", tt.name, exe, argv, err, tt.exe, tt.argv)
		}
	}
}

func TestFromKinfo(t *testing.T) {
	t.Parallel()
	comm := make([]byte, 17)
	copy(comm, "zsh")
	base := Kinfo{PID: 700, PPID: 650, PGID: 700, TPGID: 712, Stat: darwinSSLEEP, Flag: darwinControlT,
		StartSec: 1_700_000_000, StartUsec: 250, Comm: comm}
	got := FromKinfo(base, 700)
	want := Proc{PID: 700, PPID: 650, PGID: 700, SID: 700, TPGID: 712, State: 'S', Start: 1_700_000_000_000_250, Comm: "zsh"}
	if got != want {
		t.Errorf("FromKinfo = %+v, want %+v", got, want)
	}
	for _, tt := range []struct {
		name   string
		change func(*Kinfo)
		state  byte
		tpgid  int
	}{
		{"running", func(k *Kinfo) { k.Stat = darwinSRUN }, 'R', 712},
		{"being made", func(k *Kinfo) { k.Stat = darwinSIDL }, 'R', 712},
		{"stopped", func(k *Kinfo) { k.Stat = darwinSSTOP }, 'T', 712},
		{"zombie", func(k *Kinfo) { k.Stat = darwinSZOMB; k.Flag |= darwinExiting }, 'Z', 712},
		{"exiting", func(k *Kinfo) { k.Flag |= darwinExiting }, 'X', 712},
		{"unknown state", func(k *Kinfo) { k.Stat = 9 }, '?', 712},
		// Without a controlling terminal e_tpgid means nothing.
		{"no terminal", func(k *Kinfo) { k.Flag = 0 }, 'S', 0},
		{"terminal, no group", func(k *Kinfo) { k.TPGID = 0 }, 'S', 0},
	} {
		k := base
		tt.change(&k)
		if p := FromKinfo(k, 700); p.State != tt.state || p.TPGID != tt.tpgid {
			t.Errorf("%s: state %q tpgid %d, want %q %d", tt.name, p.State, p.TPGID, tt.state, tt.tpgid)
		}
	}
	// A name of the full 16 bytes has no NUL to end it.
	full := FromKinfo(Kinfo{Comm: []byte("0123456789abcdef")}, 0)
	if full.Comm != "0123456789abcdef" {
		t.Errorf("Comm = %q", full.Comm)
	}
}

// The system's table, on whatever OS the test runs: this process, a
// child, one that is not there.
func TestSystem(t *testing.T) {
	me, err := Get(os.Getpid())
	if err != nil {
		t.Fatalf("Get(self): %v", err)
	}
	if me.PID != os.Getpid() || me.PPID != os.Getppid() || me.State == 0 || me.Start == 0 {
		t.Errorf("Get(self) = %+v", me)
	}
	if pg := unix.Getpgrp(); me.PGID != pg {
		t.Errorf("PGID = %d, want %d", me.PGID, pg)
	}
	if sid, err := unix.Getsid(0); err == nil && me.SID != sid {
		t.Errorf("SID = %d, want %d", me.SID, sid)
	}
	argv, err := Argv(os.Getpid())
	if err != nil || !slices.Equal(argv, os.Args) {
		t.Errorf("Argv(self) = %q, %v; want %q", argv, err, os.Args)
	}
	exe, err := Exe(os.Getpid())
	want, _ := os.Executable()
	if err != nil || !sameFile(exe, want) {
		t.Errorf("Exe(self) = %q, %v; want %q", exe, err, want)
	}

	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	child := cmd.Process.Pid
	deadline := time.Now().Add(5 * time.Second)
	for {
		a, _ := Argv(child)
		if slices.Equal(a, []string{"sleep", "30"}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Argv(child) = %q, want sleep 30", a)
		}
		time.Sleep(5 * time.Millisecond)
	}
	all, err := All()
	if err != nil {
		t.Fatalf("All: %v", err)
	}
	i := slices.IndexFunc(all, func(p Proc) bool { return p.PID == child })
	if i < 0 || all[i].PPID != os.Getpid() || all[i].Comm != "sleep" {
		t.Errorf("All has the child as %+v (found: %v)", all[max(i, 0)], i >= 0)
	}
	switch kids, err := Children(os.Getpid()); {
	case errors.Is(err, ErrUnsupported):
	case err != nil || !slices.Contains(kids, child):
		t.Errorf("Children(self) = %v, %v; want %d among them", kids, err, child)
	}

	// The child ends: a zombie until reaped, then gone.
	_ = cmd.Process.Kill()
	for {
		p, err := Get(child)
		if err == nil && p.Ended() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the killed child reads %+v, %v; want a zombie", p, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	_ = cmd.Wait()
	if p, err := Get(child); !errors.Is(err, ErrNoProcess) {
		t.Errorf("Get(reaped child) = %+v, %v; want ErrNoProcess", p, err)
	}
	if _, err := Argv(child); !errors.Is(err, ErrNoProcess) {
		t.Errorf("Argv(reaped child): %v, want ErrNoProcess", err)
	}
}

func sameFile(a, b string) bool {
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	return err1 == nil && err2 == nil && ra == rb
}
