package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/e2e/harness"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
)

// mailboxOf is the store the server's agentmsg runs use.
func mailboxOf(s *harness.TestServer) *mailbox.Store {
	return s.Mailbox()
}

// as runs agentmsg as agent name of team alpha.
func as(name string, args ...string) []string {
	return append([]string{"--team", "alpha", "--from", name}, args...)
}

func postRequest(t *testing.T, s *harness.TestServer, from, description string) string {
	t.Helper()
	// A request goes to a team that exists: here, by its poster's status.
	wantCode(t, s.Run(as(from, "status", "set", "--state", "working")...), 0)
	res := s.Run(as(from, "--json", "request", "alpha", description)...)
	wantCode(t, res, 0)
	var doc struct {
		RequestID string `json:"request_id"`
	}
	if err := json.Unmarshal([]byte(res.Stdout), &doc); err != nil || !strings.HasPrefix(doc.RequestID, "REQ_") {
		t.Fatalf("request: %v\n%s", err, res)
	}
	return doc.RequestID
}

// Eight processes claim one request at once: exactly one gets it, every
// other is told who did and exits 8, and the requester hears of the winner.
func TestClaimRaceExactlyOneWinner(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	id := postRequest(t, s, "lead", "take the flaky test")

	const claimants = 8
	results := make([]harness.Result, claimants)
	errs := make([]error, claimants)
	var wg sync.WaitGroup
	for i := range claimants {
		wg.Go(func() { results[i], errs[i] = s.Server.Run(as(fmt.Sprintf("worker%d", i), "claim", id)...) })
	}
	wg.Wait()
	winner := ""
	for i, res := range results {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		switch res.Code {
		case 0:
			if winner != "" {
				t.Fatalf("two winners: %s and worker%d", winner, i)
			}
			winner = fmt.Sprintf("worker%d", i)
		case 8:
			if !strings.Contains(res.Stderr, "already claimed by worker") {
				t.Errorf("loser %d does not say who won:\n%s", i, res)
			}
		default:
			t.Errorf("claimant %d: %s", i, res)
		}
	}
	if winner == "" {
		t.Fatal("nobody won the claim")
	}
	for i, res := range results {
		if res.Code == 8 && !strings.Contains(res.Stderr, "already claimed by "+winner+" ") {
			t.Errorf("loser %d names another winner than %s:\n%s", i, winner, res)
		}
	}
	res := s.Run(as("lead", "--json", "wait", "--type", "claim", "--timeout", "5s")...)
	wantCode(t, res, 0)
	var env mailbox.Envelope
	if err := json.Unmarshal([]byte(res.Stdout), &env); err != nil || env.From != winner || env.RequestID != id {
		t.Fatalf("the requester's claim message: %+v, %v\n%s", env, err, res)
	}
}

// A wait in one process is woken by a message another process appends.
func TestWaitWokenByAnotherProcess(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), harness.RunTimeout)
	defer cancel()
	waiter := exec.CommandContext(ctx, s.Bins.Agentmsg, append([]string{"-S", s.Socket}, as("ana", "--json", "wait", "--sender", "lead", "--timeout", "20s")...)...)
	waiter.Env = s.Env()
	stderr, stderrW := io.Pipe()
	defer stderr.Close()
	var stdout strings.Builder
	waiter.Stdout, waiter.Stderr = &stdout, stderrW
	if err := waiter.Start(); err != nil {
		t.Fatal(err)
	}
	// The waiter says what it waits for before it looks at the inbox.
	lines := bufio.NewScanner(stderr)
	if !lines.Scan() || !strings.Contains(lines.Text(), "waiting up to 20s for a message from lead") {
		t.Fatalf("waiter's first line: %q", lines.Text())
	}
	go io.Copy(io.Discard, stderr) // the rest, so that the waiter never blocks writing it

	// Another writer: first a message that does not match, then one that
	// does, through the mailbox package as agentmsg send would store them.
	b, err := mailboxOf(s).Box("alpha", "ana")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []struct{ from, text string }{{"bob", "not this"}, {"lead", "wake up"}} {
		sender, _ := message.Sender(m.from)
		id, err := message.NewID(sender, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Append(mailbox.Envelope{ID: id, From: m.from, To: "ana", Type: mailbox.TypeText, Content: m.text}); err != nil {
			t.Fatal(err)
		}
	}
	sent := time.Now()
	err = waiter.Wait()
	stderrW.Close()
	if err != nil {
		t.Fatalf("wait: %v\nstdout: %s", err, stdout.String())
	}
	t.Logf("woken %s after the append", time.Since(sent).Round(time.Millisecond))
	var env mailbox.Envelope
	if err := json.Unmarshal([]byte(stdout.String()), &env); err != nil || env.Content != "wake up" || env.From != "lead" {
		t.Fatalf("wait printed %+v (%v): %s", env, err, stdout.String())
	}

	// bob's message came first and did not match: it is still unread.
	res := s.Run(as("ana", "inbox")...)
	wantCode(t, res, 0)
	if !strings.Contains(res.Stdout, "not this") {
		t.Fatalf("the unmatched message was skipped:\n%s", res)
	}
}

// A request posted by one process reaches a wait in another.
func TestWaitForRequestFromAnotherProcess(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	// ana has an inbox, so that the request is put into it.
	wantCode(t, s.Run(as("ana", "status", "set", "--state", "idle")...), 0)
	b, _ := mailboxOf(s).Box("alpha", "ana")
	if err := b.Append(mailbox.Envelope{ID: "MSG_LEAD_0000aaaa", From: "lead", To: "ana", Type: mailbox.TypeText, Content: "hi"}); err != nil {
		t.Fatal(err)
	}
	wantCode(t, s.Run(as("ana", "inbox")...), 0)

	done := make(chan harness.Result, 1)
	go func() {
		res, err := s.Server.Run(as("ana", "--json", "wait", "--type", "request", "--timeout", "20s")...)
		if err != nil {
			res.Stderr += err.Error()
		}
		done <- res
	}()
	id := postRequest(t, s, "lead", "review PR 12")
	res := <-done
	wantCode(t, res, 0)
	var env mailbox.Envelope
	if err := json.Unmarshal([]byte(res.Stdout), &env); err != nil || env.RequestID != id || env.Content != "review PR 12" {
		t.Fatalf("wait printed %+v (%v)\n%s", env, err, res)
	}
}

// wait returned a message already typed into the agent's own pane as
// news (issue 21): it passes over it, as inbox does, and exits 7; a
// --mailbox-only message, never typed, is news.
func TestWaitPassesOverWhatWasTypedIntoThePane(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	ana := s.StartAgent("agent-alpha-ana")
	rep, res := sendJSON(t, s, nil, "alpha", "ana", "typed into her pane")
	wantCode(t, res, 0)
	wantReceived(t, ana, harness.Submitted(rep.ID, "typed into her pane"))
	res = s.Run(as("ana", "wait", "--timeout", "300ms")...)
	wantCode(t, res, 7)

	wantCode(t, s.Run(as("lead", "send", "--mailbox-only", "alpha", "ana", "only for her inbox")...), 0)
	res = s.Run(as("ana", "wait", "--timeout", "5s")...)
	wantCode(t, res, 0)
	if !strings.Contains(res.Stdout, "from lead") || !strings.Contains(res.Stdout, "only for her inbox") || strings.Contains(res.Stdout, "typed into her pane") {
		t.Fatalf("wait printed:\n%s", res)
	}
	wantReceived(t, ana, harness.Submitted(rep.ID, "typed into her pane"))
}

// A wait that sees no matching message exits 7 once its timeout passes.
func TestWaitTimeoutExits7(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	res := s.Run(as("ana", "wait", "--sender", "lead", "--timeout", "300ms")...)
	wantCode(t, res, 7)
	if res.Elapsed < 300*time.Millisecond || !strings.Contains(res.Stderr, "no message from lead arrived within 300ms") {
		t.Fatalf("timeout after %s:\n%s", res.Elapsed, res)
	}
}

// deliver --json prints one document however it ends: a pass that could
// not start (no such team) printed its results and then an error document
// (found by e2e/chaos, seed 41).
func TestDeliverJSONIsOneDocument(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	s.StartAgent("agent-t-ana")
	res := s.Run("--json", "deliver", "nosuch")
	var doc struct {
		Error    string `json:"error"`
		ExitCode int    `json:"exit_code"`
	}
	if err := json.Unmarshal([]byte(res.Stdout), &doc); err != nil {
		t.Fatalf("stdout is not one JSON document: %v\n%s", err, res)
	}
	if res.Code == 0 || doc.ExitCode != res.Code || doc.Error == "" {
		t.Errorf("exit %d, document says exit_code %d and error %q\n%s", res.Code, doc.ExitCode, doc.Error, res)
	}
}
