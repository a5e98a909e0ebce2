package mailbox

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestClaimExactlyOne(t *testing.T) {
	s := newStore(t)
	if err := s.Post(team, Request{ID: "REQ_1", From: "lead", Description: "fix the build"}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			_, errs[i] = s.Claim(team, "REQ_1", fmt.Sprintf("worker-%d", i))
		})
	}
	wg.Wait()
	winner := -1
	for i, err := range errs {
		if err == nil {
			if winner >= 0 {
				t.Fatalf("two winners: %d and %d", winner, i)
			}
			winner = i
		}
	}
	if winner < 0 {
		t.Fatalf("no winner: %v", errs)
	}
	for i, err := range errs {
		var ce *ClaimedError
		if i != winner && (!errors.Is(err, ErrAlreadyClaimed) || !errors.As(err, &ce) || ce.By != fmt.Sprintf("worker-%d", winner)) {
			t.Fatalf("loser %d: %v", i, err)
		}
	}
	reqs, err := s.Requests(team)
	if err != nil || len(reqs) != 1 || reqs[0].State != RequestClaimed || reqs[0].ClaimedBy != fmt.Sprintf("worker-%d", winner) {
		t.Fatalf("Requests = %+v, %v", reqs, err)
	}
}

func TestRequestStates(t *testing.T) {
	s := newStore(t)
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	s.Now = func() time.Time { return now }
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.Post(team, Request{ID: "a", From: "lead", Description: "open", Timeout: time.Hour}))
	must(s.Post(team, Request{ID: "b", From: "lead", Description: "soon expired", Timeout: time.Minute}))
	must(s.Post(team, Request{ID: "c", From: "lead", Description: "claimed"}))
	if err := s.Post(team, Request{ID: "a", From: "lead"}); !errors.Is(err, ErrRequestExists) {
		t.Fatalf("double post: %v", err)
	}
	if err := s.Post(team, Request{ID: "../x", From: "lead"}); !errors.Is(err, ErrBadName) {
		t.Fatalf("bad id: %v", err)
	}
	if _, err := s.Claim(team, "c", "ana"); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Minute)
	if _, err := s.Claim(team, "b", "ana"); !errors.Is(err, ErrExpired) {
		t.Fatalf("claim expired: %v", err)
	}
	if _, err := s.Claim(team, "zz", "ana"); !errors.Is(err, ErrNoRequest) {
		t.Fatalf("claim missing: %v", err)
	}
	reqs, err := s.Requests(team)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]RequestState{}
	for _, r := range reqs {
		got[r.ID] = r.State
	}
	want := map[string]RequestState{"a": RequestOpen, "b": RequestExpired, "c": RequestClaimed}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("states = %v, want %v", got, want)
	}
	if reqs[0].ID != "a" || reqs[0].Timeout != time.Hour {
		t.Fatalf("first = %+v", reqs[0])
	}
}

// A request id is a token of at most 128 characters that cannot leave its
// directory.
func TestValidRequestID(t *testing.T) {
	for id, want := range map[string]bool{
		"MSG_LEAD_0badcafe":      true,
		"a":                      true,
		strings.Repeat("a", 128): true,
		strings.Repeat("a", 129): false,
		"":                       false,
		"-lead":                  false,
		"../x":                   false,
		"a.b":                    false,
		"a/b":                    false,
		"é":                      false,
		"MSG_x\n":                false,
	} {
		if got := ValidRequestID(id); got != want {
			t.Errorf("ValidRequestID(%.20q) = %v, want %v", id, got, want)
		}
	}
}
