package tmux

import "syscall"

// controlProcAttr ties the control client's life to ours (Linux only).
func controlProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
