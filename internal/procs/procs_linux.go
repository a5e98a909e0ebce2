package procs

import (
	"errors"
	"io/fs"
	"os"
	"strconv"
	"syscall"
)

// Linux: the /proc file system.

func procPath(pid int, file string) string { return "/proc/" + strconv.Itoa(pid) + "/" + file }

// Get reads process pid (/proc/PID/stat).
func Get(pid int) (Proc, error) {
	b, err := os.ReadFile(procPath(pid, "stat"))
	if err != nil {
		return Proc{}, missing(err)
	}
	return ParseStat(string(b))
}

// missing words a failed read of a process's file: ErrNoProcess when /proc
// works and the process is not in it, ErrUnsupported when there is no
// /proc at all.
func missing(err error) error {
	if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	if _, serr := os.Stat("/proc/self/stat"); serr != nil {
		return ErrUnsupported
	}
	return ErrNoProcess
}

// All reads every process (every /proc/PID/stat).
func All() ([]Proc, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, missing(err)
	}
	out := make([]Proc, 0, len(ents))
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, err := Get(pid); err == nil {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return nil, ErrUnsupported
	}
	return out, nil
}

// Argv reads a process's arguments (/proc/PID/cmdline): nil with no error
// for a zombie or a kernel thread, which have none.
func Argv(pid int) ([]string, error) {
	b, err := os.ReadFile(procPath(pid, "cmdline"))
	if err != nil {
		return nil, missing(err)
	}
	return SplitCmdline(b), nil
}

// Exe is the path of the executable a process runs (/proc/PID/exe).
func Exe(pid int) (string, error) {
	exe, err := os.Readlink(procPath(pid, "exe"))
	if err != nil {
		return "", missing(err)
	}
	return exe, nil
}
