package mailbox

import (
	"strings"
	"testing"
)

func TestBoard(t *testing.T) {
	s := newStore(t)
	if board, err := s.Board(team); err != nil || len(board) != 0 {
		t.Fatalf("empty board = %v, %v", board, err)
	}
	if err := s.SetStatus(team, "bob", Status{Mission: "tests", State: "working"}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetStatus(team, "ana", Status{WorkingOn: "mailbox", Done: []string{"store"}, Next: []string{"wait"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetStatus(team, "ana", Status{WorkingOn: "compaction", State: "working"}); err != nil {
		t.Fatal(err)
	}
	board, err := s.Board(team)
	if err != nil {
		t.Fatal(err)
	}
	if len(board) != 2 || board[0].Agent != "ana" || board[0].WorkingOn != "compaction" || board[0].Done != nil ||
		board[1].Agent != "bob" || board[1].Mission != "tests" || board[1].Updated.IsZero() {
		t.Fatalf("board = %+v", board)
	}
	if err := s.SetStatus(team, "A/B", Status{}); err == nil {
		t.Fatal("bad agent accepted")
	}
}

func TestMetaPairsAreSorted(t *testing.T) {
	e := Envelope{Metadata: map[string]string{"step": "build", "accept": "true", "state": "complete"}}
	if got := strings.Join(e.MetaPairs(), " "); got != "accept=true state=complete step=build" {
		t.Errorf("MetaPairs = %q", got)
	}
	if got := (Envelope{}).MetaPairs(); len(got) != 0 {
		t.Errorf("no metadata: %q", got)
	}
}
