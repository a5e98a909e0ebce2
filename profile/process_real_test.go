package profile

import (
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"
)

// startTree starts a real tree of four processes (a shell, its two
// children, a sleep and a shell, and that shell's sleep) in a session of
// its own, with no terminal, so that every descendant counts as
// foreground; and waits until Foreground sees all of it.
func startTree(tb testing.TB) int {
	tb.Helper()
	cmd := exec.Command("sh", "-c", "sleep 600 & sh -c 'sleep 601; :' & wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		tb.Skip(err)
	}
	tb.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	pid := cmd.Process.Pid
	deadline := time.Now().Add(5 * time.Second)
	// Four processes, and the last has exec'd its sleep: a moment after
	// its fork it is still a copy of its shell (seen in CI: two "sh -c
	// sleep 601; :" and no "sleep 601").
	for got := (Procs{}).Foreground(pid); len(got) < 4 || !slices.ContainsFunc(got, func(a []string) bool { return slices.Equal(a, []string{"sleep", "601"}) }); got = (Procs{}).Foreground(pid) {
		if time.Now().After(deadline) {
			tb.Fatalf("the tree did not start: %q", (Procs{}).Foreground(pid))
		}
		time.Sleep(10 * time.Millisecond)
	}
	return pid
}

// The system's process table (Linux's lists of children; the whole table
// on Darwin and with agentmsg_portable), on a real tree.
func TestForegroundOfARealTree(t *testing.T) {
	t.Parallel()
	got := (Procs{}).Foreground(startTree(t))
	for _, want := range [][]string{{"sleep", "600"}, {"sleep", "601"}, {"sh", "-c", "sleep 601; :"}} {
		if !slices.ContainsFunc(got, func(a []string) bool { return slices.Equal(a, want) }) {
			t.Errorf("Foreground = %q, want %q among them", got, want)
		}
	}
	if got[0][0] != "sh" || len(got) != 4 {
		t.Errorf("Foreground = %q, want the shell first and 4 in all", got)
	}
}

// BenchmarkForeground times one look at a pane's foreground processes (the
// part of profile detection that reads the process table), on a real tree
// of four processes (startTree). Without a terminal every descendant
// counts as foreground, so this is the most a look reads.
func BenchmarkForeground(b *testing.B) {
	pid := startTree(b)
	b.ResetTimer()
	for b.Loop() {
		if len((Procs{}).Foreground(pid)) < 4 {
			b.Fatal("lost the tree")
		}
	}
}

// BenchmarkDetectByProcess times a pane look's profile detection when the
// pane's command is a launcher ("node"), so the foreground processes are
// read: the path every look at a Node-launched agent takes.
func BenchmarkDetectByProcess(b *testing.B) {
	pid := startTree(b)
	profiles := Builtin()
	b.ResetTimer()
	for b.Loop() {
		procs := func() [][]string { return Procs{}.Foreground(pid) }
		DetectPane(profiles, Pane{Command: "node", Procs: procs}, nil)
	}
}
