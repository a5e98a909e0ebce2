package mailbox

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A file system that folds case (macOS's, by default) opens task1.json
// for Task1.json. Inbox, team and reader names are lower case, so none
// can differ from another only by case; request ids may hold capitals,
// and one that differs from a posted request's only by case must be
// neither posted over it nor read, claimed or answered as it. The folding
// is played here by a second name linked to the same file.
func TestIDsThatDifferOnlyByCase(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	for _, name := range []string{"Ana", "ANA", "aNa"} {
		if _, err := s.Box(team, name); !errors.Is(err, ErrBadName) {
			t.Errorf("Box(%q): %v, want ErrBadName (names are lower case)", name, err)
		}
	}
	if err := s.Post(team, Request{ID: "task1", From: "lead", Description: "review"}); err != nil {
		t.Fatal(err)
	}
	dir, path, claim, err := s.requestPaths(team, "task1")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Link(path, filepath.Join(dir, "Task1.json")); err != nil {
		t.Fatal(err)
	}
	err = s.Post(team, Request{ID: "Task1", From: "lead", Description: "another"})
	if !errors.Is(err, ErrRequestExists) || !strings.Contains(err.Error(), "differs from it only by case") {
		t.Errorf("Post(Task1): %v, want ErrRequestExists saying why", err)
	}
	if _, err := s.Claim(team, "Task1", "bob"); !errors.Is(err, ErrNoRequest) {
		t.Errorf("Claim(Task1): %v, want ErrNoRequest", err)
	}
	if _, err := os.Stat(claim); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("claiming Task1 claimed task1: %v", err)
	}
	if _, err := s.RequestStatus(team, "Task1"); !errors.Is(err, ErrNoRequest) {
		t.Errorf("RequestStatus(Task1): %v, want ErrNoRequest", err)
	}
	if r, err := s.Claim(team, "task1", "bob"); err != nil || r.ID != "task1" {
		t.Errorf("Claim(task1) = %+v, %v", r, err)
	}
}
