package lifecycle

import (
	"slices"
	"testing"
)

func TestFamily(t *testing.T) {
	// 100 is the pane's first process (a session leader, as tmux makes it).
	all := map[int]proc{}
	for _, p := range []proc{
		{PID: 1, PPID: 0, PGID: 1, SID: 1},
		{PID: 100, PPID: 50, PGID: 100, SID: 100},
		{PID: 101, PPID: 100, PGID: 100, SID: 100},             // child
		{PID: 102, PPID: 101, PGID: 102, SID: 100},             // grandchild in a group of its own
		{PID: 103, PPID: 1, PGID: 100, SID: 100},               // double-forked: left the tree, kept the session
		{PID: 104, PPID: 102, PGID: 104, SID: 104},             // setsid'ed grandchild: still a descendant
		{PID: 105, PPID: 1, PGID: 104, SID: 104},               // its orphaned group member
		{PID: 106, PPID: 100, PGID: 100, SID: 100, State: 'Z'}, // already ended
		{PID: 200, PPID: 1, PGID: 200, SID: 200},               // unrelated
		{PID: 201, PPID: 200, PGID: 200, SID: 200},             // unrelated
		{PID: 50, PPID: 1, PGID: 50, SID: 50},                  // the tmux server
	} {
		if p.State == 0 {
			p.State = 'S'
		}
		all[p.PID] = p
	}
	got := pids(family(all, 100))
	want := []int{100, 101, 102, 103, 104, 105}
	if !slices.Equal(got, want) {
		t.Errorf("family = %v, want %v", got, want)
	}
	if f := family(all, 999); f != nil {
		t.Errorf("family of a missing process = %v, want none", f)
	}
}
