//go:build linux && !agentmsg_portable

package procs

import (
	"errors"
	"io/fs"
	"os"
	"strconv"
	"strings"
)

// Children lists a process's children from the kernel's own lists
// (/proc/PID/task/TID/children, one per thread: a Node process forks from
// any of them): a few small reads, where All reads the whole table.
// ErrUnsupported on a kernel built without those lists.
func Children(pid int) ([]int, error) {
	tasks, err := os.ReadDir(procPath(pid, "task"))
	if err != nil {
		return nil, missing(err)
	}
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile(procPath(pid, "task/"+t.Name()+"/children"))
		if err != nil {
			if t.Name() == strconv.Itoa(pid) && errors.Is(err, fs.ErrNotExist) {
				if _, serr := os.Stat(procPath(pid, "task/"+t.Name())); serr == nil {
					return nil, ErrUnsupported // the thread is there, its list is not
				}
			}
			continue // a thread that has ended
		}
		for _, f := range strings.Fields(string(b)) {
			if child, err := strconv.Atoi(f); err == nil && !contains(out, child) {
				out = append(out, child)
			}
		}
	}
	return out, nil
}

func contains(s []int, x int) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}
