//go:build !linux || agentmsg_portable

package procs

// Children: Darwin keeps no list of a process's children that a program
// can read without cgo (libproc), and the agentmsg_portable build leaves
// Linux's out, so callers build the tree from All.
func Children(int) ([]int, error) { return nil, ErrUnsupported }
