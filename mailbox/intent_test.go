package mailbox

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/message"
)

var crew = []string{"ana", "bob", "cy"}

func intentFor(t *testing.T, env Envelope, agents ...string) Intent {
	t.Helper()
	in := Intent{Env: env}
	for _, a := range agents {
		in.To = append(in.To, Inbox{Team: team, Agent: a})
	}
	return in
}

// copiesOf counts message id in each agent's inbox.
func copiesOf(t *testing.T, s *Store, id message.ID, agents ...string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, a := range agents {
		for _, e := range mustRead(t, s, a).Envelopes {
			if e.ID == id {
				out[a]++
			}
		}
	}
	return out
}

func wantEach(t *testing.T, got map[string]int, n int, agents ...string) {
	t.Helper()
	for _, a := range agents {
		if got[a] != n {
			t.Errorf("%s holds %d copies, want %d (all: %v)", a, got[a], n, got)
		}
	}
}

// A writer that records every copy leaves no intent; one that dies part
// way (Leave is what the kernel does for it) leaves one, and Complete
// records exactly the copies the inboxes lack, in the intent's state,
// with the writer's time, once.
func TestIntentCompletesWhatTheWriterLeft(t *testing.T) {
	s := newStore(t)
	env := newEnv(t, "lead", Broadcast, "all hands")
	env.Delivery = &Delivery{State: StatePending}
	env.Timestamp = time.Now().Add(-time.Minute).UTC() // the writer's, for every copy
	held, err := s.Intend(intentFor(t, env, crew...))
	if err != nil {
		t.Fatal(err)
	}
	if _, open, _ := s.Intent(env.ID); !open {
		t.Fatal("no intent while its writer holds it")
	}
	// The writer recorded ana's copy, in its own state, and died.
	mine := env
	mine.Delivery = &Delivery{State: StateTyping}
	if err := box(t, s, "ana").Append(mine); err != nil {
		t.Fatal(err)
	}
	if done, err := s.Complete(); err != nil || len(done) != 0 {
		t.Fatalf("while its writer lives: Complete = %v, %v; want nothing done", done, err)
	}
	wantEach(t, copiesOf(t, s, env.ID, "bob", "cy"), 0, "bob", "cy")
	held.Leave()

	done, err := s.Complete()
	if err != nil || len(done) != 1 || done[0].Env.ID != env.ID {
		t.Fatalf("Complete = %v, %v", done, err)
	}
	wantEach(t, copiesOf(t, s, env.ID, crew...), 1, crew...)
	for _, a := range crew {
		got := mustRead(t, s, a).Envelopes[0]
		want := StatePending
		if a == "ana" {
			want = StateTyping // the writer's own record stands
		}
		if got.Delivery.State != want || !got.Timestamp.Equal(env.Timestamp) {
			t.Errorf("%s: %+v, want %s", a, got, want)
		}
	}
	if _, open, _ := s.Intent(env.ID); open {
		t.Error("the intent is still there")
	}
	if done, err := s.Complete(); err != nil || len(done) != 0 {
		t.Errorf("again: %v, %v", done, err)
	}
	wantEach(t, copiesOf(t, s, env.ID, crew...), 1, crew...)
}

// Record is the whole step for a writer that records nothing itself; Done
// after its own records leaves nothing to complete; a second intent for
// an id whose first is there is refused.
func TestIntentRecordAndDone(t *testing.T) {
	s := newStore(t)
	env := newEnv(t, "lead", Broadcast, "one step")
	held, err := s.Intend(intentFor(t, env, crew...))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Intend(intentFor(t, env, crew...)); !errors.Is(err, ErrIntentExists) {
		t.Fatalf("a second intent: %v, want ErrIntentExists", err)
	}
	if err := held.Record(); err != nil {
		t.Fatal(err)
	}
	wantEach(t, copiesOf(t, s, env.ID, crew...), 1, crew...)
	ents, _ := os.ReadDir(s.intentDir())
	if len(ents) != 0 {
		t.Errorf("left in the intents: %v", ents)
	}
	if done, _ := s.Complete(); len(done) != 0 {
		t.Errorf("Complete after Record: %v", done)
	}
}

// An operation that did not take place (its commit file missing, or
// another nudger's) is dropped whole: no copy.
func TestIntentWithoutItsCommitIsDropped(t *testing.T) {
	s := newStore(t)
	mark := filepath.Join(s.home(), "teams", team, "requests", "REQ_1.nudged")
	rel, err := s.commitFile(mark)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		content string // "": no file
		took    bool
	}{{"no mark", "", false}, {"another's mark", "MSG_OTHER_00000000", false}, {"its own mark", "itself", true}} {
		t.Run(tc.name, func(t *testing.T) {
			env := newEnv(t, "lead", Broadcast, tc.name)
			in := intentFor(t, env, crew...)
			in.Commit = &Commit{File: rel, Holds: string(env.ID)}
			held, err := s.Intend(in)
			if err != nil {
				t.Fatal(err)
			}
			os.Remove(mark)
			if tc.content != "" {
				content := tc.content
				if content == "itself" {
					content = string(env.ID)
				}
				if err := os.MkdirAll(filepath.Dir(mark), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(mark, []byte(content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			held.Leave()
			if _, err := s.Complete(); err != nil {
				t.Fatal(err)
			}
			n := 0
			if tc.took {
				n = 1
			}
			wantEach(t, copiesOf(t, s, env.ID, crew...), n, crew...)
			if _, open, _ := s.Intent(env.ID); open {
				t.Error("the intent is still there")
			}
		})
	}
}

// A retry waits for the writer at work (CompleteID), and then finds every
// copy recorded: none twice.
func TestCompleteIDWaitsForTheWriter(t *testing.T) {
	s := newStore(t)
	env := newEnv(t, "lead", Broadcast, "wait for me")
	held, err := s.Intend(intentFor(t, env, crew...))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, _, err := s.CompleteID(context.Background(), env.ID)
		done <- err
	}()
	time.Sleep(30 * time.Millisecond) // the retry waits meanwhile
	if err := held.Record(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	wantEach(t, copiesOf(t, s, env.ID, crew...), 1, crew...)

	// One whose writer never lets go is waited for only as long as asked.
	env = newEnv(t, "lead", Broadcast, "stuck")
	held, err = s.Intend(intentFor(t, env, crew...))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Leave()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, _, err := s.CompleteID(ctx, env.ID); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a held intent: %v, want the deadline", err)
	}
}

// AppendMany in a process SIGKILLed at random moments: every message it
// began is, after Complete, in every inbox exactly once, or in none; every
// one it acknowledged is in all.
func TestAppendManyKilledCompletes(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	s := newStore(t)
	agents := []string{"a0", "a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8", "a9", "a10", "a11"}
	ctx := testCtx(t)
	var acked []string
	partial := 0
	for round := range 20 {
		h := startHelper(t, ctx, "fanout", "MB_ROOT="+s.Root, "MB_FROM=w"+strconv.Itoa(round), "MB_AGENTS="+strings.Join(agents, ","))
		lines := make(chan string)
		go func() {
			sc := bufio.NewScanner(h.out)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		<-lines // started
		time.Sleep(time.Duration(rand.IntN(20_000)) * time.Microsecond)
		_ = h.cmd.Process.Signal(syscall.SIGKILL) // our own child, by its pid
		for l := range lines {
			acked = append(acked, l)
		}
		_ = h.cmd.Wait()
		// What the kill left, before Complete: some inboxes only?
		seen := map[message.ID]int{}
		for _, a := range agents {
			for _, e := range mustRead(t, s, a).Envelopes {
				seen[e.ID]++
			}
		}
		for _, n := range seen {
			if n != len(agents) {
				partial++
			}
		}
		if _, err := s.Complete(); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[message.ID]int{}
	for _, a := range agents {
		for _, e := range mustRead(t, s, a).Envelopes {
			seen[e.ID]++
		}
	}
	for id, n := range seen {
		if n != len(agents) {
			t.Errorf("%s: in %d of %d inboxes", id, n, len(agents))
		}
	}
	for _, id := range acked {
		if seen[message.ID(id)] != len(agents) {
			t.Errorf("acknowledged %s: in %d inboxes", id, seen[message.ID(id)])
		}
	}
	t.Logf("%d messages, %d acknowledged; %d left in some inboxes only by a kill, then completed", len(seen), len(acked), partial)
}

// TestHelperFanout is the process TestAppendManyKilledCompletes kills: it
// prints "started", then each message's id once AppendMany returned.
func TestHelperFanout(t *testing.T) {
	if os.Getenv(helperEnv) != "fanout" {
		t.Skip("helper process")
	}
	s := New(os.Getenv("MB_ROOT"))
	from := os.Getenv("MB_FROM")
	sender, _ := message.Sender(from)
	agents := strings.Split(os.Getenv("MB_AGENTS"), ",")
	fmt.Println("started")
	for i := 0; ; i++ {
		id, err := message.NewID(sender, nil)
		if err == nil {
			err = s.AppendMany(team, agents, Envelope{ID: id, From: from, To: Broadcast, Type: TypeText, Content: strconv.Itoa(i)})
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Println(id)
	}
}

// A request posted and told in a process SIGKILLed at random moments:
// after Complete, each request posted is in every inbox once, and no inbox
// tells of a request that was never posted.
func TestPostTellingKilledCompletes(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	s := newStore(t)
	agents := []string{"a0", "a1", "a2", "a3", "a4", "a5", "a6", "a7"}
	ctx := testCtx(t)
	partial := 0
	for round := range 20 {
		h := startHelper(t, ctx, "poster", "MB_ROOT="+s.Root, "MB_FROM=p"+strconv.Itoa(round), "MB_AGENTS="+strings.Join(agents, ","))
		sc := bufio.NewScanner(h.out)
		sc.Scan() // started
		// A post is five fsyncs: killed within its first few.
		time.Sleep(time.Duration(rand.IntN(100_000)) * time.Microsecond)
		_ = h.cmd.Process.Signal(syscall.SIGKILL) // our own child, by its pid
		for sc.Scan() {
		}
		_ = h.cmd.Wait()
		if told := requestsTold(t, s, agents); len(told) > 0 {
			for _, n := range told {
				if n != len(agents) {
					partial++
				}
			}
		}
		if _, err := s.Complete(); err != nil {
			t.Fatal(err)
		}
	}
	reqs, err := s.Requests(team)
	if err != nil {
		t.Fatal(err)
	}
	told := requestsTold(t, s, agents)
	for _, r := range reqs {
		if told[r.ID] != len(agents) {
			t.Errorf("%s posted, told in %d of %d inboxes", r.ID, told[r.ID], len(agents))
		}
		delete(told, r.ID)
	}
	for id, n := range told {
		t.Errorf("%s never posted, yet told in %d inboxes", id, n)
	}
	t.Logf("%d requests posted; %d were told in some inboxes only when a kill came, then completed", len(reqs), partial)
}

// requestsTold counts, by request id, the inboxes holding its message.
func requestsTold(t *testing.T, s *Store, agents []string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, a := range agents {
		for _, e := range mustRead(t, s, a).Envelopes {
			out[e.RequestID]++
		}
	}
	return out
}

// TestHelperPoster is the process TestPostTellingKilledCompletes kills: it
// prints "started", then posts requests, each told to every agent.
func TestHelperPoster(t *testing.T) {
	if os.Getenv(helperEnv) != "poster" {
		t.Skip("helper process")
	}
	s := New(os.Getenv("MB_ROOT"))
	from := os.Getenv("MB_FROM")
	sender, _ := message.Sender(from)
	agents := strings.Split(os.Getenv("MB_AGENTS"), ",")
	fmt.Println("started")
	for i := 0; ; i++ {
		id, err := message.NewID(sender, nil)
		if err != nil {
			os.Exit(2)
		}
		r := Request{ID: fmt.Sprintf("REQ_%s_%d", strings.ToLower(from), i), From: from, Description: "d"}
		env := Envelope{ID: id, From: from, To: Broadcast, Type: TypeRequest, RequestID: r.ID, Content: "d",
			Delivery: &Delivery{State: StatePending}}
		if err := s.PostTelling(team, r, env, agents); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
}

// The reminder of an expired request: its nudger's mark and the reminder
// in every inbox are one step. A nudger that died after its mark is
// completed; one that lost to another nudger records nothing.
func TestNudgeIsOneStep(t *testing.T) {
	s := newStore(t)
	past := time.Now().Add(-time.Hour)
	if err := s.Post(team, Request{ID: "REQ_1", From: "lead", Description: "x", Posted: past, Timeout: time.Minute}); err != nil {
		t.Fatal(err)
	}
	for _, a := range crew {
		appendN(t, box(t, s, a), 1) // the team's inboxes
	}
	notices := 0
	notice := func(r RequestInfo) (Envelope, error) {
		notices++
		env := newEnv(t, "lead", Broadcast, "reminder "+strconv.Itoa(notices))
		env.RequestID, env.Delivery = r.ID, &Delivery{State: StatePending}
		return env, nil
	}
	// A nudger that loses: its intent is made, another marks first, and it
	// dies before it drops its intent.
	loser, _ := notice(RequestInfo{Request: Request{ID: "REQ_1"}})
	dir, _, _, _ := s.requestPaths(team, "REQ_1")
	rel, _ := s.commitFile(s.nudgedPath(dir, "REQ_1"))
	in := intentFor(t, loser, crew...)
	in.Commit = &Commit{File: rel, Holds: string(loser.ID)}
	held, err := s.Intend(in)
	if err != nil {
		t.Fatal(err)
	}
	done, err := s.NudgeExpired(team, notice)
	if err != nil || len(done) != 1 {
		t.Fatalf("NudgeExpired = %v, %v", done, err)
	}
	held.Leave()
	if again, err := s.NudgeExpired(team, notice); err != nil || len(again) != 0 {
		t.Fatalf("a second NudgeExpired = %v, %v", again, err)
	}
	if _, err := s.Complete(); err != nil {
		t.Fatal(err)
	}
	for _, a := range crew {
		n := 0
		for _, e := range mustRead(t, s, a).Envelopes {
			if e.RequestID == "REQ_1" {
				n++
				if e.ID == loser.ID {
					t.Errorf("%s holds the losing nudger's reminder", a)
				}
			}
		}
		if n != 1 {
			t.Errorf("%s holds %d reminders, want 1", a, n)
		}
	}
}

// Claims, each telling its requester, in a process SIGKILLed at random
// moments: after Complete, every request claimed has told its requester
// once, and no requester is told of a claim that was never made.
func TestClaimTellingKilledCompletes(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	s := newStore(t)
	ctx := testCtx(t)
	untold := 0 // claims a kill left with their requester not told yet
	for round := range 20 {
		h := startHelper(t, ctx, "claimteller", "MB_ROOT="+s.Root, "MB_FROM=c"+strconv.Itoa(round))
		sc := bufio.NewScanner(h.out)
		sc.Scan() // started
		// A post and a claim are about ten fsyncs: killed within them.
		time.Sleep(time.Duration(rand.IntN(100_000)) * time.Microsecond)
		_ = h.cmd.Process.Signal(syscall.SIGKILL) // our own child, by its pid
		for sc.Scan() {
		}
		_ = h.cmd.Wait()
		untold += len(claimedUntold(t, s))
		if _, err := s.Complete(); err != nil {
			t.Fatal(err)
		}
	}
	reqs, err := s.Requests(team)
	if err != nil {
		t.Fatal(err)
	}
	told := map[string]int{}
	for _, e := range mustRead(t, s, "lead").Envelopes {
		told[e.RequestID]++
	}
	claimed := 0
	for _, r := range reqs {
		want := 0
		if r.State == RequestClaimed {
			want = 1
			claimed++
		}
		if told[r.ID] != want {
			t.Errorf("%s (%s): the requester was told %d times, want %d", r.ID, r.State, told[r.ID], want)
		}
	}
	t.Logf("%d requests posted, %d claimed; %d claims caught before their requester was told, then told", len(reqs), claimed, untold)
}

// claimedUntold are the claimed requests whose requester (lead) holds no
// claim message.
func claimedUntold(t *testing.T, s *Store) []string {
	t.Helper()
	reqs, _ := s.Requests(team)
	told := map[string]bool{}
	for _, e := range mustRead(t, s, "lead").Envelopes {
		told[e.RequestID] = true
	}
	var out []string
	for _, r := range reqs {
		if r.State == RequestClaimed && !told[r.ID] {
			out = append(out, r.ID)
		}
	}
	return out
}

// TestHelperClaimTeller is the process TestClaimTellingKilledCompletes
// kills: it prints "started", then posts requests from lead and claims
// each, telling lead.
func TestHelperClaimTeller(t *testing.T) {
	if os.Getenv(helperEnv) != "claimteller" {
		t.Skip("helper process")
	}
	s := New(os.Getenv("MB_ROOT"))
	from := os.Getenv("MB_FROM")
	sender, _ := message.Sender(from)
	fmt.Println("started")
	for i := 0; ; i++ {
		r := Request{ID: fmt.Sprintf("REQ_%s_%d", from, i), From: "lead", Description: "d"}
		if err := s.Post(team, r); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		_, err := s.ClaimTelling(team, r.ID, from, func(r Request) (Envelope, error) {
			id, err := message.NewID(sender, nil)
			return Envelope{ID: id, From: from, To: r.From, Type: TypeClaim, RequestID: r.ID, Content: "claimed",
				Delivery: &Delivery{State: StatePending}}, err
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
}
