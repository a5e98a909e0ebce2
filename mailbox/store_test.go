package mailbox

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestDefaultRoot(t *testing.T) {
	tests := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"AGENTMSG_HOME": "/a", "XDG_STATE_HOME": "/x", "HOME": "/h"}, "/a"},
		{map[string]string{"XDG_STATE_HOME": "/x", "HOME": "/h"}, "/x/agentmsg"},
		{map[string]string{"AGENTMSG_HOME": "", "HOME": "/h"}, "/h/.local/state/agentmsg"},
	}
	for _, tt := range tests {
		got := DefaultRoot(func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok })
		if got != tt.want {
			t.Errorf("DefaultRoot(%v) = %q, want %q", tt.env, got, tt.want)
		}
	}
}

func TestNames(t *testing.T) {
	s := newStore(t)
	for _, ok := range []string{"ana", "ana-2", "ralph-7", "a_b", "x1-y2"} {
		if _, err := s.Box(team, ok); err != nil {
			t.Errorf("Box(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", "Ana", "../x", "a/b", "a.b", "a-2-3", "-a", "1a", "a-", "ana-"} {
		if _, err := s.Box(team, bad); !errors.Is(err, ErrBadName) {
			t.Errorf("Box(%q) = %v, want ErrBadName", bad, err)
		}
		if _, err := s.Box(bad, "ana"); !errors.Is(err, ErrBadName) {
			t.Errorf("Box(team %q) = %v, want ErrBadName", bad, err)
		}
	}
}

func TestLayoutAndCleanTeam(t *testing.T) {
	s := newStore(t)
	appendN(t, box(t, s, "ana-2"), 1)
	if _, err := os.Stat(filepath.Join(s.Root, "teams", team, "mailbox", "ana-2.jsonl")); err != nil {
		t.Fatal(err)
	}
	if err := s.CleanTeam(team); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(s.Root, "teams", team)); !os.IsNotExist(err) {
		t.Fatalf("team dir still there: %v", err)
	}
	if got := mustRead(t, s, "ana-2"); len(got.Envelopes) != 0 {
		t.Fatalf("read %d after clean", len(got.Envelopes))
	}
}
