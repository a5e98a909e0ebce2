package chaos

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// agentmsgPids is every live process running bin: this test's own build of
// agentmsg, so each was started by this test, directly or through a hook
// it installed.
func agentmsgPids(bin string) []int {
	var pids []int
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		exe, err := os.Readlink(filepath.Join(d, "exe"))
		if err != nil || exe != bin {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(d)); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// endAgentmsgs waits up to timeout for every agentmsg of bin to end, then
// kills what is left (an agentmsg, never a tmux client: they run other
// binaries) and returns the pids it had to kill.
func endAgentmsgs(bin string, timeout time.Duration) []int {
	deadline := time.Now().Add(timeout)
	for {
		pids := agentmsgPids(bin)
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			for _, pid := range pids {
				syscall.Kill(pid, syscall.SIGCONT)
				syscall.Kill(pid, syscall.SIGKILL)
			}
			return pids
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// describePids says what each process is, for a report.
func describePids(pids []int) string {
	s := ""
	for _, pid := range pids {
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		for i, c := range cmdline {
			if c == 0 {
				cmdline[i] = ' '
			}
		}
		s += fmt.Sprintf("\n  %d: %s", pid, cmdline)
	}
	return s
}
