package tmux

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The process runner is tried with /bin/sh standing in for tmux: what
// matters is how the child is started, fed and waited for.

func TestProcOwnProcessGroup(t *testing.T) {
	res := runProc(context.Background(), "/bin/sh", []string{"-c", "ps -o pgid= -p $$"}, nil, false, 5*time.Second, false)
	if res.err != nil || res.exitCode != 0 {
		t.Fatalf("run: %+v", res)
	}
	child, _ := strconv.Atoi(strings.TrimSpace(string(res.stdout)))
	if ours := syscall.Getpgrp(); child == 0 || child == ours {
		t.Fatalf("child's process group %d, ours %d: a Ctrl-C to us would reach tmux", child, ours)
	}
}

func TestProcPayloadsAsFiles(t *testing.T) {
	res := runProc(context.Background(), "/bin/sh", []string{"-c", "cat /dev/fd/3; echo; cat /dev/fd/4"},
		[]string{"first\x00text;\n", strings.Repeat("y", 1<<20)}, false, 5*time.Second, false)
	if res.err != nil {
		t.Fatal(res.err)
	}
	want := "first\x00text;\n\n" + strings.Repeat("y", 1<<20)
	if string(res.stdout) != want {
		t.Fatalf("child read %d bytes, want %d", len(res.stdout), len(want))
	}
}

// A caller that gives up never ends the tmux client: the child finishes
// its work on its own.
func TestProcNeverKilled(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cancel   bool
		timeout  time.Duration
		wantErr  error
		waitOut  bool
		finishes bool
	}{
		{name: "context ends", cancel: true, timeout: 5 * time.Second, wantErr: context.Canceled},
		{name: "timeout", timeout: 50 * time.Millisecond, wantErr: errAbandoned},
		{name: "write outlives its context", cancel: true, timeout: 5 * time.Second, waitOut: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mark := filepath.Join(t.TempDir(), "finished")
			ctx, cancel := context.WithCancel(context.Background())
			if tc.cancel {
				time.AfterFunc(50*time.Millisecond, cancel)
			}
			defer cancel()
			res := runProc(ctx, "/bin/sh", []string{"-c", "sleep 0.4; echo done > " + mark}, nil, false, tc.timeout, tc.waitOut)
			if !errors.Is(res.err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", res.err, tc.wantErr)
			}
			deadline := time.Now().Add(5 * time.Second)
			for {
				if b, err := os.ReadFile(mark); err == nil && string(b) == "done\n" {
					return
				}
				if time.Now().After(deadline) {
					t.Fatal("the child was ended before it finished")
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}

func TestProcLeavesNoFiles(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	res := runProc(context.Background(), "/bin/sh", []string{"-c", "cat /dev/fd/3 >/dev/null"}, []string{"secret message"}, false, 5*time.Second, false)
	if res.err != nil {
		t.Fatal(res.err)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Fatalf("files left in TMPDIR: %v", left)
	}
}

// Before tmux 3.2 the server may open a file a command names, so the one
// payload goes on the client's stdin instead of /dev/fd/3.
func TestProcPayloadOnStdin(t *testing.T) {
	res := runProc(context.Background(), "/bin/sh", []string{"-c", "cat -; test -e /dev/fd/3 && echo fd3"}, []string{"on stdin"}, true, 5*time.Second, false)
	if res.err != nil || string(res.stdout) != "on stdin" {
		t.Fatalf("child read %q, %v; want the payload on stdin and no fd 3", res.stdout, res.err)
	}
}
