package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/app"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
	"github.com/agentmsg/agentmsg/service"
	"github.com/agentmsg/agentmsg/tmux"
	"github.com/agentmsg/agentmsg/wire"
)

// mbHome is a mailbox in a temp dir that commands run against as team
// alpha, without tmux.
type mbHome struct {
	t     *testing.T
	home  string
	store *mailbox.Store
}

func newMBHome(t *testing.T) *mbHome {
	t.Helper()
	home := t.TempDir()
	return &mbHome{t: t, home: home, store: storeAt(home)}
}

type mbResult struct {
	code           int
	stdout, stderr string
}

func (r mbResult) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// run runs agentmsg args... as agent from of team alpha.
func (m *mbHome) run(from string, args ...string) mbResult {
	return m.runCtx(context.Background(), from, args...)
}

func (m *mbHome) runCtx(ctx context.Context, from string, args ...string) mbResult {
	f, out, errOut := testFactory(map[string]string{"AGENTMSG_HOME": m.home, "AGENTMSG_TEAM": "alpha", "AGENTMSG_FROM": from})
	code := Run(ctx, f, args)
	return mbResult{code, out.String(), errOut.String()}
}

// want fails the test unless r exited with code.
func (m *mbHome) want(r mbResult, code int) mbResult {
	m.t.Helper()
	if r.code != code {
		m.t.Fatalf("want exit %d, got %s", code, r)
	}
	return r
}

// send appends a message from one agent of alpha to another's inbox.
func (m *mbHome) send(from, to string, typ mailbox.Type, content string) mailbox.Envelope {
	m.t.Helper()
	sender, _ := message.Sender(from)
	id, err := message.NewID(sender, nil)
	if err != nil {
		m.t.Fatal(err)
	}
	env := mailbox.Envelope{ID: id, From: from, To: to, Type: typ, Content: content}
	b, err := m.store.Box("alpha", to)
	if err != nil {
		m.t.Fatal(err)
	}
	if err := b.Append(env); err != nil {
		m.t.Fatal(err)
	}
	return env
}

func decodeJSON[T any](t *testing.T, s string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("decoding %q: %v", s, err)
	}
	return v
}

func TestInboxAdvancesCursor(t *testing.T) {
	m := newMBHome(t)
	m.send("lead", "ana", mailbox.TypeText, "first")
	m.send("bob", "ana", mailbox.TypeStatus, "tests pass")

	r := m.want(m.run("ana", "inbox"), ExitOK)
	if !strings.Contains(r.stdout, "from lead (text): first") || !strings.Contains(r.stdout, "from bob (status): tests pass") {
		t.Fatalf("first read:\n%s", r)
	}
	r = m.want(m.run("ana", "inbox"), ExitOK)
	if r.stdout != "" || !strings.Contains(r.stderr, "no new messages") {
		t.Fatalf("second read should be empty:\n%s", r)
	}
	third := m.send("lead", "ana", mailbox.TypeText, "third\nwith a second line")
	r = m.want(m.run("ana", "--json", "inbox"), ExitOK)
	doc := decodeJSON[struct {
		Team, Agent, Reader string
		Messages            []mailbox.Envelope
	}](t, r.stdout)
	if doc.Team != "alpha" || doc.Agent != "ana" || doc.Reader != "ana" || len(doc.Messages) != 1 || doc.Messages[0].ID != third.ID {
		t.Fatalf("--json read: %+v", doc)
	}
	// --all shows everything and leaves the cursor alone.
	r = m.want(m.run("ana", "inbox", "--all"), ExitOK)
	if strings.Count(r.stdout, "[MSG_") != 3 {
		t.Fatalf("--all:\n%s", r)
	}
	m.send("lead", "ana", mailbox.TypeText, "fourth")
	m.want(m.run("ana", "inbox", "--all"), ExitOK)
	r = m.want(m.run("ana", "inbox"), ExitOK)
	if strings.Count(r.stdout, "[MSG_") != 1 || !strings.Contains(r.stdout, "fourth") {
		t.Fatalf("after --all, the cursor must not have moved:\n%s", r)
	}
	// Another reader of the same inbox has its own cursor.
	r = m.want(m.run("lead", "inbox", "alpha", "ana"), ExitOK)
	if strings.Count(r.stdout, "[MSG_") != 4 {
		t.Fatalf("lead reading ana's inbox:\n%s", r)
	}
}

func TestInboxFilterNeverSkipsUnshown(t *testing.T) {
	m := newMBHome(t)
	m.send("lead", "ana", mailbox.TypeText, "one")
	m.send("bob", "ana", mailbox.TypeStatus, "two")
	m.send("bob", "ana", mailbox.TypeText, "three")

	r := m.want(m.run("ana", "inbox", "--sender", "bob"), ExitOK)
	if strings.Count(r.stdout, "[MSG_") != 2 || strings.Contains(r.stdout, "one") {
		t.Fatalf("--sender bob:\n%s", r)
	}
	// lead's message was not shown: the cursor is still before it.
	r = m.want(m.run("ana", "inbox", "--type", "text"), ExitOK)
	if strings.Count(r.stdout, "[MSG_") != 2 || !strings.Contains(r.stdout, "one") || !strings.Contains(r.stdout, "three") {
		t.Fatalf("--type text:\n%s", r)
	}
	// Everything before "two" was shown now, and "two" itself earlier: the
	// cursor passed "one" only, so the rest is shown again once.
	r = m.want(m.run("ana", "inbox"), ExitOK)
	if strings.Contains(r.stdout, "one") || !strings.Contains(r.stdout, "two") {
		t.Fatalf("unfiltered:\n%s", r)
	}
	r = m.want(m.run("ana", "inbox"), ExitOK)
	if r.stdout != "" {
		t.Fatalf("all read:\n%s", r)
	}
}

func TestInboxPromptFormat(t *testing.T) {
	m := newMBHome(t)
	r := m.want(m.run("ana", "inbox", "--format", "prompt"), ExitOK)
	if r.stdout != "" {
		t.Fatalf("nothing new must print nothing in prompt format:\n%s", r)
	}
	a := m.send("lead", "ana", mailbox.TypeStatus, "build is green")
	b := m.send("bob", "ana", mailbox.TypeText, "can you\nreview?")
	r = m.want(m.run("ana", "inbox", "--format", "prompt"), ExitOK)
	want := "You have 2 new messages:\n" +
		"[" + string(a.ID) + "] from lead (status): build is green\n" +
		"[" + string(b.ID) + "] from bob (text): can you\n  review?\n"
	if !strings.HasPrefix(r.stdout, want) {
		t.Fatalf("prompt format:\n%s\nwant it to start with:\n%s", r.stdout, want)
	}
	m.want(m.run("ana", "inbox", "--format", "yaml"), ExitUsage)
}

func TestInboxFollow(t *testing.T) {
	m := newMBHome(t)
	m.send("lead", "ana", mailbox.TypeText, "before")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f, out, errOut := testFactory(map[string]string{"AGENTMSG_HOME": m.home, "AGENTMSG_TEAM": "alpha", "AGENTMSG_FROM": "ana"})
	sw := &syncWriter{w: out}
	f.IO.Out = sw
	done := make(chan int)
	go func() { done <- Run(ctx, f, []string{"--json", "inbox", "--follow", "--type", "text"}) }()
	m.send("bob", "ana", mailbox.TypeStatus, "not shown")
	after := m.send("bob", "ana", mailbox.TypeText, "after")
	waitFor(t, func() bool { return strings.Contains(sw.String(), string(after.ID)) })
	cancel()
	if code := <-done; code != ExitOK {
		t.Fatalf("--follow ended with %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(sw.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("want 2 JSON lines, got:\n%s", sw.String())
	}
	for i, want := range []string{"before", "after"} {
		if e := decodeJSON[mailbox.Envelope](t, lines[i]); e.Content != want {
			t.Errorf("line %d: %+v, want %q", i, e, want)
		}
	}
	// The status message was never shown, so it is still unread.
	r := m.want(m.run("ana", "inbox"), ExitOK)
	if !strings.Contains(r.stdout, "not shown") {
		t.Fatalf("the filtered-out message must still be unread:\n%s", r)
	}
}

// syncWriter lets a test read what a running command printed so far.
type syncWriter struct {
	mu sync.Mutex
	w  interface {
		Write([]byte) (int, error)
		String() string
	}
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}

func (s *syncWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.String()
}

// waitFor polls cond until it holds, for up to 10 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestInboxNeedsTeam(t *testing.T) {
	m := newMBHome(t)
	f, _, errOut := testFactory(map[string]string{"AGENTMSG_HOME": m.home, "AGENTMSG_FROM": "ana"})
	if code := Run(context.Background(), f, []string{"inbox"}); code != ExitUsage || !strings.Contains(errOut.String(), "--team") {
		t.Fatalf("exit %d, stderr %q: want a usage error naming --team", code, errOut)
	}
	for _, args := range [][]string{{"inbox", "Alpha", "ana"}, {"inbox", "alpha", "Ana;x"}, {"inbox", "alpha"}} {
		if r := m.run("ana", args...); r.code != ExitUsage {
			t.Errorf("%v: %s", args, r)
		}
	}
}

func TestWaitMatch(t *testing.T) {
	m := newMBHome(t)
	early := m.send("bob", "ana", mailbox.TypeText, "unrelated")
	go func() {
		time.Sleep(50 * time.Millisecond)
		m.send("lead", "ana", mailbox.TypeText, "the answer")
	}()
	r := m.want(m.run("ana", "--json", "wait", "--sender", "lead", "--timeout", "10s"), ExitOK)
	if e := decodeJSON[mailbox.Envelope](t, r.stdout); e.Content != "the answer" || e.From != "lead" {
		t.Fatalf("wait printed %+v", e)
	}
	if !strings.Contains(r.stderr, "from lead") || !strings.Contains(r.stderr, "1 other unread") {
		t.Errorf("stderr should say what it waits for and what is left:\n%s", r.stderr)
	}
	// The earlier message did not match, so it is still unread.
	r = m.want(m.run("ana", "inbox"), ExitOK)
	if !strings.Contains(r.stdout, string(early.ID)) {
		t.Fatalf("the unmatched message was skipped:\n%s", r)
	}

	// An unread message that matches counts at once, and the cursor
	// moves past it.
	reply := m.send("lead", "ana", mailbox.TypeText, "a reply")
	reply2 := m.send("lead", "ana", mailbox.TypeText, "another")
	r = m.want(m.run("ana", "wait", "--timeout", "1s"), ExitOK)
	if !strings.Contains(r.stdout, string(reply.ID)) {
		t.Fatalf("wait for any message:\n%s", r)
	}
	r = m.want(m.run("ana", "inbox"), ExitOK)
	if strings.Contains(r.stdout, string(reply.ID)) || !strings.Contains(r.stdout, string(reply2.ID)) {
		t.Fatalf("the cursor should have moved past exactly the message waited for:\n%s", r)
	}
}

func TestWaitReplyTo(t *testing.T) {
	m := newMBHome(t)
	question := m.send("ana", "lead", mailbox.TypeText, "ready?")
	m.send("lead", "ana", mailbox.TypeText, "not this one")
	sender, _ := message.Sender("lead")
	id, _ := message.NewID(sender, nil)
	b, _ := m.store.Box("alpha", "ana")
	if err := b.Append(mailbox.Envelope{ID: id, From: "lead", To: "ana", Type: mailbox.TypeText, Content: "yes", ReplyTo: question.ID}); err != nil {
		t.Fatal(err)
	}
	r := m.want(m.run("ana", "wait", "--reply-to", string(question.ID), "--timeout", "1s"), ExitOK)
	if !strings.Contains(r.stdout, "yes") || strings.Contains(r.stdout, "not this one") {
		t.Fatalf("--reply-to:\n%s", r)
	}
	m.want(m.run("ana", "wait", "--reply-to", "nope"), ExitUsage)
	m.want(m.run("ana", "wait", "--timeout", "-1s"), ExitUsage)
}

func TestWaitTimeout(t *testing.T) {
	m := newMBHome(t)
	m.send("bob", "ana", mailbox.TypeText, "not from lead")
	start := time.Now()
	r := m.want(m.run("ana", "wait", "--sender", "lead", "--timeout", "100ms"), ExitTimeout)
	if took := time.Since(start); took < 100*time.Millisecond {
		t.Errorf("gave up after %s, before the timeout", took)
	}
	if r.stdout != "" || !strings.Contains(r.stderr, "within 100ms") {
		t.Fatalf("timeout report:\n%s", r)
	}
	r = m.want(m.run("ana", "--json", "wait", "--timeout", "50ms", "--type", "claim"), ExitTimeout)
	if doc := decodeJSON[struct {
		ExitCode int `json:"exit_code"`
	}](t, r.stdout); doc.ExitCode != ExitTimeout {
		t.Fatalf("--json timeout: %s", r)
	}
	// Interrupted: not a timeout.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if r := m.runCtx(ctx, "ana", "wait", "--timeout", "0", "--sender", "lead"); r.code != ExitError {
		t.Fatalf("interrupted wait: %s", r)
	}
}

func TestRequestAndClaim(t *testing.T) {
	m := newMBHome(t)
	for _, a := range []string{"ana", "bob", "cy"} {
		m.send("lead", a, mailbox.TypeText, "hello")
	}
	r := m.want(m.run("lead", "--json", "request", "alpha", "review", "PR", "12", "--timeout", "1h"), ExitOK)
	doc := decodeJSON[struct {
		RequestID string   `json:"request_id"`
		Notified  []string `json:"notified"`
	}](t, r.stdout)
	if !strings.HasPrefix(doc.RequestID, "REQ_") || len(doc.RequestID) != 12 || strings.Join(doc.Notified, ",") != "ana,bob,cy" {
		t.Fatalf("request: %+v\n%s", doc, r)
	}
	// Every agent sees it in its inbox.
	for _, a := range []string{"ana", "bob", "cy"} {
		r := m.want(m.run(a, "--json", "inbox", "--type", "request"), ExitOK)
		in := decodeJSON[struct{ Messages []mailbox.Envelope }](t, r.stdout)
		if len(in.Messages) != 1 || in.Messages[0].RequestID != doc.RequestID || in.Messages[0].To != "*" ||
			in.Messages[0].Content != "review PR 12" {
			t.Fatalf("%s's inbox: %+v", a, in.Messages)
		}
	}

	r = m.want(m.run("bob", "claim", doc.RequestID), ExitOK)
	if !strings.Contains(r.stdout, "claimed "+doc.RequestID) {
		t.Fatalf("winner:\n%s", r)
	}
	r = m.want(m.run("cy", "claim", "alpha", doc.RequestID), ExitClaimed)
	if !strings.Contains(r.stderr, "already claimed by bob at") {
		t.Fatalf("loser:\n%s", r)
	}
	r = m.want(m.run("ana", "--json", "claim", doc.RequestID), ExitClaimed)
	if cj := decodeJSON[wire.Claim](t, r.stdout); cj.Claimed || cj.ClaimedBy != "bob" || cj.ExitCode != ExitClaimed {
		t.Fatalf("loser --json: %+v", cj)
	}
	// The requester is told who claimed it.
	r = m.want(m.run("lead", "--json", "wait", "--type", "claim", "--timeout", "1s"), ExitOK)
	if e := decodeJSON[mailbox.Envelope](t, r.stdout); e.From != "bob" || e.To != "lead" || e.RequestID != doc.RequestID ||
		!strings.Contains(e.Content, "claimed by bob") {
		t.Fatalf("claim message: %+v", e)
	}

	r = m.want(m.run("ana", "requests"), ExitOK)
	if !strings.Contains(r.stdout, doc.RequestID) || !strings.Contains(r.stdout, "claimed") || !strings.Contains(r.stdout, "bob") {
		t.Fatalf("requests:\n%s", r)
	}
	m.want(m.run("ana", "claim", "REQ_00000000"), ExitNotFound)
	m.want(m.run("ana", "claim", "../etc"), ExitUsage)
	m.want(m.run("ana", "request", "alpha"), ExitUsage)
	m.want(m.run("ana", "request", "Alpha", "x"), ExitUsage)
}

// A --timeout beyond a year is clamped to a year, as MCP's request_task
// clamps timeout_seconds (issue 10, item 15).
func TestRequestTimeoutIsClamped(t *testing.T) {
	m := newMBHome(t)
	m.send("lead", "ana", mailbox.TypeText, "welcome") // team alpha exists
	r := m.want(m.run("lead", "--json", "request", "alpha", "forever", "--timeout", "2562047h"), ExitOK)
	doc := decodeJSON[struct {
		RequestID string    `json:"request_id"`
		Posted    time.Time `json:"posted"`
		Expires   time.Time `json:"expires"`
	}](t, r.stdout)
	if want := doc.Posted.Add(mailbox.MaxRequestTimeout); !doc.Expires.Equal(want) {
		t.Fatalf("expires %s, want %s (a year after it was posted)", doc.Expires, want)
	}
	list, err := m.store.Requests("alpha")
	if err != nil || len(list) != 1 || list[0].Timeout != mailbox.MaxRequestTimeout {
		t.Fatalf("stored: %+v %v", list, err)
	}
}

func TestClaimConcurrentExactlyOneWins(t *testing.T) {
	m := newMBHome(t)
	m.send("lead", "worker_0", mailbox.TypeText, "welcome") // team alpha exists
	r := m.want(m.run("lead", "--json", "request", "alpha", "one job"), ExitOK)
	id := decodeJSON[struct {
		RequestID string `json:"request_id"`
	}](t, r.stdout).RequestID
	results := make([]mbResult, 8)
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() { results[i] = m.run(fmt.Sprintf("worker_%d", i), "claim", id) })
	}
	wg.Wait()
	winners := 0
	for i, r := range results {
		switch r.code {
		case ExitOK:
			winners++
		case ExitClaimed:
		default:
			t.Errorf("claimant %d: %s", i, r)
		}
	}
	if winners != 1 {
		t.Fatalf("%d winners, want exactly 1", winners)
	}
}

func TestClaimExpiredAndNudge(t *testing.T) {
	m := newMBHome(t)
	m.send("lead", "ana", mailbox.TypeText, "hi")
	m.send("lead", "bob", mailbox.TypeText, "hi")
	if err := m.store.Post("alpha", mailbox.Request{ID: "REQ_0000aaaa", From: "lead", Description: "old job",
		Timeout: time.Minute, Posted: time.Now().Add(-time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if err := m.store.Post("alpha", mailbox.Request{ID: "REQ_0000bbbb", From: "lead", Description: "fresh job",
		Timeout: time.Hour}); err != nil {
		t.Fatal(err)
	}
	r := m.want(m.run("ana", "claim", "REQ_0000aaaa"), ExitClaimed)
	if !strings.Contains(r.stderr, "expired") {
		t.Fatalf("expired claim:\n%s", r)
	}
	m.want(m.run("ana", "inbox"), ExitOK)
	m.want(m.run("bob", "inbox"), ExitOK)

	r = m.want(m.run("lead", "--json", "requests", "--nudge"), ExitOK)
	doc := decodeJSON[struct {
		Requests []wire.RequestInfo
		Nudged   []string
	}](t, r.stdout)
	if strings.Join(doc.Nudged, ",") != "REQ_0000aaaa" || len(doc.Requests) != 2 || !doc.Requests[0].Nudged ||
		doc.Requests[0].State != "expired" || doc.Requests[1].State != "open" {
		t.Fatalf("requests --nudge: %+v", doc)
	}
	for _, a := range []string{"ana", "bob"} {
		r := m.want(m.run(a, "inbox"), ExitOK)
		if strings.Count(r.stdout, "[MSG_") != 1 || !strings.Contains(r.stdout, "REQ_0000aaaa") || !strings.Contains(r.stdout, "expired unclaimed") {
			t.Fatalf("%s's nudge:\n%s", a, r)
		}
	}
	// Once only.
	r = m.want(m.run("lead", "--json", "requests", "--nudge"), ExitOK)
	if doc := decodeJSON[struct{ Nudged []string }](t, r.stdout); len(doc.Nudged) != 0 {
		t.Fatalf("nudged twice: %+v", doc)
	}
	if r := m.want(m.run("ana", "inbox"), ExitOK); r.stdout != "" {
		t.Fatalf("a second nudge arrived:\n%s", r)
	}
	r = m.want(m.run("ana", "requests"), ExitOK)
	if !strings.Contains(r.stdout, "expired (nudged)") {
		t.Fatalf("requests table:\n%s", r)
	}
}

func TestStatusAndBoard(t *testing.T) {
	m := newMBHome(t)
	r := m.want(m.run("ana", "board"), ExitOK)
	if !strings.Contains(r.stderr, "nobody") {
		t.Fatalf("empty board:\n%s", r)
	}
	m.want(m.run("ana", "status", "set", "--mission", "ship it", "--state", "working", "--working-on", "cursor",
		"--next", "wait", "--next", "board"), ExitOK)
	m.want(m.run("ana", "status", "set", "--state", "blocked", "--done", "cursor"), ExitOK)
	m.want(m.run("bob", "status", "set", "--state", "idle"), ExitOK)
	m.want(m.run("bob", "status", "set", "--state", "sleeping"), ExitUsage)
	m.want(m.run("bob", "status", "set"), ExitUsage)

	r = m.want(m.run("lead", "--json", "board", "alpha"), ExitOK)
	doc := decodeJSON[wire.Board](t, r.stdout)
	if len(doc.Agents) != 2 {
		t.Fatalf("board: %+v", doc)
	}
	ana := doc.Agents[0]
	if ana.Agent != "ana" || ana.State != "blocked" || ana.Mission != "ship it" || ana.WorkingOn != "cursor" ||
		strings.Join(ana.Next, ",") != "wait,board" || strings.Join(ana.Done, ",") != "cursor" {
		t.Fatalf("ana's entry kept what was not given? %+v", ana)
	}
	r = m.want(m.run("lead", "board", "alpha"), ExitOK)
	if !strings.Contains(r.stdout, "AGENT") || !strings.Contains(r.stdout, "blocked") || !strings.Contains(r.stdout, "wait (+1)") {
		t.Fatalf("board table:\n%s", r)
	}
}

func TestBoardWatch(t *testing.T) {
	m := newMBHome(t)
	m.want(m.run("ana", "status", "set", "--state", "working"), ExitOK)
	sw := &syncWriter{w: new(bytes.Buffer)}
	opts := &BoardOptions{
		teamDeps: teamDeps{
			IO: &IOStreams{Out: sw, ErrOut: new(bytes.Buffer)},
			Service: func(context.Context) (*service.Service, error) {
				return &service.Service{Team: "alpha", Name: "lead", Sender: "LEAD", Store: m.store}, nil
			},
			Identity: func(context.Context) (Identity, error) { return Identity{Team: "alpha", Name: "lead"}, nil },
			JSON:     func() bool { return true },
			Now:      time.Now,
		},
		Watch:    true,
		Interval: 5 * time.Millisecond,
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error)
	go func() { done <- boardRun(ctx, opts) }()
	waitFor(t, func() bool { return strings.Contains(sw.String(), "working") })
	m.want(m.run("ana", "status", "set", "--state", "complete"), ExitOK)
	waitFor(t, func() bool { return strings.Contains(sw.String(), "complete") })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(sw.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("--json --watch should print one line per change, got:\n%s", sw.String())
	}
	for _, l := range lines {
		if doc := decodeJSON[wire.Board](t, l); doc.Team != "alpha" || len(doc.Agents) != 1 {
			t.Errorf("line %s", l)
		}
	}
}

func TestTeamClean(t *testing.T) {
	m := newMBHome(t)
	r := m.want(m.run("ana", "team", "clean", "alpha"), ExitOK)
	if !strings.Contains(r.stderr, "nothing is stored") {
		t.Fatalf("empty team:\n%s", r)
	}
	m.send("lead", "ana", mailbox.TypeText, "hi")
	m.send("lead", "bob", mailbox.TypeText, "hi")
	m.want(m.run("ana", "status", "set", "--state", "idle"), ExitOK)
	r = m.want(m.run("ana", "team", "clean", "alpha"), ExitUsage)
	if !strings.Contains(r.stderr, "2 inbox(es) (ana, bob)") || !strings.Contains(r.stderr, "--yes") {
		t.Fatalf("without --yes:\n%s", r)
	}
	if _, err := os.Stat(m.store.TeamDir("alpha")); err != nil {
		t.Fatalf("removed without --yes: %v", err)
	}
	m.want(m.run("ana", "team", "clean", "alpha", "--yes"), ExitOK)
	if _, err := os.Stat(m.store.TeamDir("alpha")); !os.IsNotExist(err) {
		t.Fatalf("still there after --yes: %v", err)
	}
	m.want(m.run("ana", "team", "clean", "Alpha", "--yes"), ExitUsage)
	m.want(m.run("ana", "team", "clean"), ExitUsage)
}

func TestLog(t *testing.T) {
	m := newMBHome(t)
	a := m.send("lead", "ana", mailbox.TypeText, "to ana")
	b := m.send("lead", "bob", mailbox.TypeTask, "to bob")
	box, _ := m.store.Box("alpha", "ana")
	steps := []mailbox.Delivery{
		{State: mailbox.StateDeferred, Attempts: 1, LastVerdict: "busy"},
		{State: mailbox.StateTyped, Attempts: 2},
		{State: mailbox.StateSubmitted, Attempts: 2, LastVerdict: "submitted"},
	}
	for _, d := range steps {
		if err := box.SetDelivery(a.ID, d); err != nil {
			t.Fatal(err)
		}
	}
	other, _ := storeAt(m.home).Box("beta", "cy")
	if err := other.Append(mailbox.Envelope{ID: "MSG_DANA_0000cccc", From: "dana", To: "cy", Type: mailbox.TypeText}); err != nil {
		t.Fatal(err)
	}

	r := m.want(m.run("ana", "log"), ExitOK)
	for _, want := range []string{string(a.ID), string(b.ID), "MSG_DANA_0000cccc", "alpha/ana", "submitted", "beta/cy"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("log lacks %q:\n%s", want, r.stdout)
		}
	}
	r = m.want(m.run("ana", "--json", "log", "alpha", "ana"), ExitOK)
	doc := decodeJSON[struct{ Messages []service.LogEntry }](t, r.stdout)
	if len(doc.Messages) != 1 || doc.Messages[0].ID != a.ID || doc.Messages[0].Delivery.State != mailbox.StateSubmitted ||
		doc.Messages[0].Delivery.Attempts != 2 {
		t.Fatalf("log alpha ana: %+v", doc)
	}

	// --id without a team searches every team.
	r = m.want(m.run("ana", "log", "--id", string(a.ID)), ExitOK)
	iDeferred, iTyped, iSubmitted := strings.Index(r.stdout, "deferred"), strings.Index(r.stdout, "typed"), strings.Index(r.stdout, "submitted")
	if !strings.Contains(r.stdout, "recorded") || iDeferred < 0 || iTyped < iDeferred || iSubmitted < iTyped || !strings.Contains(r.stdout, "busy") {
		t.Fatalf("log --id:\n%s", r)
	}
	r = m.want(m.run("ana", "--json", "log", "--id", string(a.ID)), ExitOK)
	h := decodeJSON[struct {
		Copies []service.HistoryCopy
	}](t, r.stdout)
	if len(h.Copies) != 1 || len(h.Copies[0].Delivery) != 3 || h.Copies[0].Delivery[0].State != mailbox.StateDeferred {
		t.Fatalf("log --id --json: %+v", h)
	}
	m.want(m.run("ana", "log", "--id", "MSG_X_00000000"), ExitNotFound)
	m.want(m.run("ana", "log", "--id", "nope"), ExitUsage)
	m.want(m.run("ana", "log", "Alpha"), ExitUsage)
}

func TestMailboxHelp(t *testing.T) {
	for _, args := range [][]string{{"inbox"}, {"wait"}, {"request"}, {"claim"}, {"requests"}, {"status", "set"},
		{"board"}, {"team", "clean"}, {"log"}} {
		f, out, _ := testFactory(nil)
		if code := Run(context.Background(), f, append(args, "--help")); code != ExitOK {
			t.Fatalf("%v --help: exit %d", args, code)
		}
		if !strings.Contains(out.String(), "Examples:") {
			t.Errorf("%v --help has no examples:\n%s", args, out)
		}
	}
}

func TestMailboxExitCodes(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want int
	}{
		{fmt.Errorf("x: %w", mailbox.ErrBadName), ExitUsage},
		{fmt.Errorf("x: %w", mailbox.ErrNoRequest), ExitNotFound},
		{fmt.Errorf("x: %w", mailbox.ErrNoMessage), ExitNotFound},
		{&mailbox.ClaimedError{RequestID: "REQ_1", By: "bob"}, ExitClaimed},
		{fmt.Errorf("x: %w", mailbox.ErrExpired), ExitClaimed},
		{fmt.Errorf("%w: no message", errTimedOut), ExitTimeout},
	} {
		if got := exitCode(tt.err); got != tt.want {
			t.Errorf("exitCode(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
}

// Recording a message in an inbox needs no tmux: send --mailbox-only works
// where tmux is not installed (the test factory fails any use of tmux).
func TestMailboxOnlySendNeedsNoTmux(t *testing.T) {
	m := newMBHome(t)
	r := m.want(m.run("lead", "--json", "send", "--mailbox-only", "--create", "alpha", "ana", "read me later"), ExitOK)
	if !strings.Contains(r.stdout, `"verdict": "recorded"`) {
		t.Fatalf("send --mailbox-only:\n%s", r)
	}
	r = m.want(m.run("ana", "inbox"), ExitOK)
	if !strings.Contains(r.stdout, "read me later") {
		t.Errorf("ana's inbox:\n%s", r)
	}
}

// storeAt is the mailbox under home as a command run without server flags
// or $TMUX opens it: in the place of tmux's default server.
func storeAt(home string) *mailbox.Store {
	s := mailbox.New(home)
	server, _ := tmux.ResolveServer("", "", func(string) (string, bool) { return "", false })
	s.Place = mailbox.Place{Host: app.HostName(), Socket: server.Socket}
	return s
}

func TestInboxShowsEachMessagesDeliveryState(t *testing.T) {
	m := newMBHome(t)
	mark := func(env mailbox.Envelope, st mailbox.DeliveryState) {
		b, err := m.store.Box("alpha", env.To)
		if err != nil {
			m.t.Fatal(err)
		}
		if err := b.SetDelivery(env.ID, mailbox.Delivery{State: st}); err != nil {
			m.t.Fatal(err)
		}
	}
	waits := m.send("lead", "ana", mailbox.TypeText, "waits for deliver")
	mark(waits, mailbox.StateDeferred)
	toRead := m.send("bob", "ana", mailbox.TypeStatus, "only to read")
	mark(toRead, mailbox.StateInbox)
	typed := m.send("lead", "ana", mailbox.TypeText, "typed into her pane")
	mark(typed, mailbox.StateSubmitted)

	r := m.want(m.run("ana", "inbox"), ExitOK)
	if !strings.Contains(r.stdout, "from lead (text; waiting to be typed): waits for deliver") ||
		!strings.Contains(r.stdout, "from bob (status; to read): only to read") || strings.Contains(r.stdout, "typed into her pane") {
		t.Fatalf("ana's inbox must show each message's state and leave out what her pane shows:\n%s", r)
	}
	r = m.want(m.run("ana", "inbox", "--all"), ExitOK)
	if !strings.Contains(r.stdout, "from lead (text; submitted): typed into her pane") {
		t.Fatalf("--all:\n%s", r)
	}
}
