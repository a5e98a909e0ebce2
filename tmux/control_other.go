//go:build !linux

package tmux

import "syscall"

// controlProcAttr: elsewhere the client ends when its stdin closes.
func controlProcAttr() *syscall.SysProcAttr { return nil }
