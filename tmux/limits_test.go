package tmux

import (
	"context"
	"fmt"
	"testing"
)

// Many calls at once make long command lists; each must stay within what
// every tmux accepts (3.7c refused lists that 3.3a took: "command too long").
func TestManyCallsAtOnceStayWithinTmuxLimits(t *testing.T) {
	e, raw := testServer(t)
	ctx := context.Background()
	const n = 120
	var panes []string
	for i := range n {
		name := fmt.Sprintf("agent-many-a%03d", i)
		raw("new-session", "-d", "-s", name, "-x", "40", "-y", "5", "cat")
		p, err := sessionPane(ctx, e, name)
		if err != nil {
			t.Fatal(err)
		}
		panes = append(panes, p.ID)
	}
	errs := make(chan error, n)
	for _, p := range panes {
		go func() { _, err := e.LeaveModeCapture(ctx, p); errs <- err }()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
