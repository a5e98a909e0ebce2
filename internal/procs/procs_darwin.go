package procs

import (
	"errors"

	"golang.org/x/sys/unix"
)

// Darwin: sysctl kern.proc (struct kinfo_proc) and kern.procargs2, through
// golang.org/x/sys/unix, no cgo and no ps process.

// Get reads process pid (sysctl kern.proc.pid.PID).
func Get(pid int) (Proc, error) {
	ks, err := unix.SysctlKinfoProcSlice("kern.proc.pid", pid)
	if err != nil {
		return Proc{}, err
	}
	if len(ks) == 0 {
		return Proc{}, ErrNoProcess // the kernel answers nothing for no such pid
	}
	return fromUnix(&ks[0]), nil
}

// All reads every process (sysctl kern.proc.all: one call).
func All() ([]Proc, error) {
	ks, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		return nil, err
	}
	out := make([]Proc, 0, len(ks))
	for i := range ks {
		out = append(out, fromUnix(&ks[i]))
	}
	return out, nil
}

func fromUnix(k *unix.KinfoProc) Proc {
	sid, err := unix.Getsid(int(k.Proc.P_pid))
	if err != nil {
		sid = 0 // ended meanwhile: no session to be in
	}
	return FromKinfo(Kinfo{
		PID: k.Proc.P_pid, PPID: k.Eproc.Ppid, PGID: k.Eproc.Pgid, TPGID: k.Eproc.Tpgid,
		Stat: k.Proc.P_stat, Flag: k.Proc.P_flag,
		StartSec: int64(k.Proc.P_starttime.Sec), StartUsec: int64(k.Proc.P_starttime.Usec),
		Comm: k.Proc.P_comm[:],
	}, sid)
}

// procargs reads kern.procargs2 of pid. The kernel gives it only for this
// user's processes (EINVAL for others', and for a zombie).
func procargs(pid int) (exe string, argv []string, err error) {
	b, err := unix.SysctlRaw("kern.procargs2", pid)
	if err != nil {
		if errors.Is(err, unix.ESRCH) {
			return "", nil, ErrNoProcess
		}
		if errors.Is(err, unix.EINVAL) {
			if _, gerr := Get(pid); errors.Is(gerr, ErrNoProcess) {
				return "", nil, ErrNoProcess
			}
		}
		return "", nil, err
	}
	return ParseProcargs2(b)
}

// Argv reads a process's arguments (kern.procargs2); nil with no error
// for a zombie, which has none.
func Argv(pid int) ([]string, error) {
	_, argv, err := procargs(pid)
	if err != nil {
		if p, gerr := Get(pid); gerr == nil && p.Ended() {
			return nil, nil
		}
		return nil, err
	}
	return argv, nil
}

// Exe is the path of the executable a process runs, as it was exec'd
// (kern.procargs2): a tmux server is a fork of the client that started it,
// so this is that client's path.
func Exe(pid int) (string, error) {
	exe, _, err := procargs(pid)
	return exe, err
}
