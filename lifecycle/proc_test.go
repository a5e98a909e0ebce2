package lifecycle

import (
	"slices"
	"testing"
)

func TestParseStat(t *testing.T) {
	tests := []struct {
		line string
		want proc
		bad  bool
	}{
		{line: "42 (sleep) S 7 42 40 0 -1 4194560 105 0 0 0 0 0 0 0 20 0 1 0 123456 0 0",
			want: proc{PID: 42, PPID: 7, PGID: 42, SID: 40, State: 'S', Start: 123456}},
		// A command name may hold spaces and parentheses.
		{line: "9 (a (b) c) R 1 9 9 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 77 0 0",
			want: proc{PID: 9, PPID: 1, PGID: 9, SID: 9, State: 'R', Start: 77}},
		{line: "5 (z) Z 1 5 5 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 8 0 0",
			want: proc{PID: 5, PPID: 1, PGID: 5, SID: 5, State: 'Z', Start: 8}},
		{line: "5 (short) S 1 5", bad: true},
		{line: "garbage", bad: true},
	}
	for _, tt := range tests {
		got, err := parseStat(tt.line)
		if tt.bad {
			if err == nil {
				t.Errorf("parseStat(%q) = %+v, want an error", tt.line, got)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("parseStat(%q) = %+v, %v; want %+v", tt.line, got, err, tt.want)
		}
	}
}

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
