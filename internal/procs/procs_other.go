//go:build !linux && !darwin

package procs

// An OS agentmsg does not know how to ask: every question is unanswered,
// and the callers say what they cannot tell.

func Get(int) (Proc, error)      { return Proc{}, ErrUnsupported }
func All() ([]Proc, error)       { return nil, ErrUnsupported }
func Argv(int) ([]string, error) { return nil, ErrUnsupported }
func Exe(int) (string, error)    { return "", ErrUnsupported }
