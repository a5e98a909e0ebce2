package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/e2e/harness"
	"github.com/agentmsg/agentmsg/tmux"
)

// Issue 17: agentmsg types into the agent's own pane on the server it was
// found on, or into nothing.

// writeConfig writes agentmsg's config file for the tests' agentmsg runs:
// the harness's base and toml.
func writeConfig(t *testing.T, s *harness.TestServer, toml string) {
	t.Helper()
	if err := os.WriteFile(s.ConfigPath(), []byte(harness.BaseConfig+toml), 0o600); err != nil {
		t.Fatal(err)
	}
}

// readLines is a file's lines; a missing file has none.
func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// promptProgram is the argv of a program with a "> " prompt (what
// agentmsg's generic reader takes for an empty input box) that appends
// every line it reads to log: a second program a person left in the
// agent's session. Not a shell, which agentmsg never types into.
func promptProgram(log string) []string {
	return []string{"perl", "-e", `$| = 1; while (1) { print "> "; my $l = <STDIN>; last unless defined $l; open(my $f, ">>", $ARGV[0]) or die; print $f $l; close $f }`, log}
}

// A person opened a second window in the agent's session (a program with
// a prompt) and left it current, and split a shell beside the agent: a
// send types into the agent's pane (item 1). On main the text went into
// the current window and was reported submitted; the split shell made it
// "the agent has exited".
func TestSendTypesIntoTheAgentsPaneOnly(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	fay := s.StartAgent("agent-beta-fay")
	dev := filepath.Join(s.Dir, "logs", "dev.log")
	s.Tmux("split-window", "-d", "-t", fay.Pane, "sh")
	s.Tmux(append([]string{"new-window", "-t", "=agent-beta-fay:", "-n", "dev"}, promptProgram(dev)...)...)
	waitFor(t, "the dev window's prompt", 10*time.Second, func() bool { return strings.Contains(s.Capture("=agent-beta-fay:dev"), ">") })

	// Three panes; the stand-in is a known agent CLI (the harness's
	// profile), the shell and the prompt program are not.
	rep, res := sendJSON(t, s, nil, "beta", "fay", "into the agent's pane")
	wantCode(t, res, 0)
	if rep.Pane != fay.Pane || rep.Verdict != "submitted" {
		t.Fatalf("sent to pane %s (%s), want %s:\n%s", rep.Pane, rep.Verdict, fay.Pane, res)
	}
	wantCode(t, s.Run("broadcast", "beta", "to the team"), 0)
	got := fay.Received()
	if len(got) != 2 || !strings.HasSuffix(got[0], ": into the agent's pane") || !strings.HasSuffix(got[1], ": to the team") {
		t.Fatalf("fay received %q", got)
	}
	if got := readLines(t, dev); got != nil {
		t.Fatalf("the dev window's program read %q", got)
	}
	if list := s.Run("list", "beta"); !strings.Contains(list.Stdout, fay.Pane) {
		t.Errorf("list does not show fay's pane %s:\n%s", fay.Pane, list)
	}
}

// A session of two programs agentmsg knows nothing of: nothing is typed
// until a person says which pane is the agent's, by flag or config.
func TestSendRefusesAPaneItCannotTell(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	first, second := filepath.Join(s.Dir, "logs", "first.log"), filepath.Join(s.Dir, "logs", "second.log")
	s.Tmux(append([]string{"new-session", "-d", "-s", "agent-beta-gus", "-n", "main"}, promptProgram(first)...)...)
	s.Tmux(append([]string{"new-window", "-t", "=agent-beta-gus:", "-n", "dev"}, promptProgram(second)...)...)
	waitFor(t, "both prompts", 10*time.Second, func() bool {
		return strings.Contains(s.Capture("=agent-beta-gus:main"), ">") && strings.Contains(s.Capture("=agent-beta-gus:dev"), ">")
	})
	res := s.Run("send", "beta", "gus", "into no pane")
	wantCode(t, res, 3)
	for _, want := range []string{"2 panes", "0.0", "1.0", "--pane", `[panes] "beta/gus"`} {
		if !strings.Contains(res.Stderr+res.Stdout, want) {
			t.Errorf("the refusal does not say %q:\n%s", want, res)
		}
	}
	if readLines(t, first) != nil || readLines(t, second) != nil {
		t.Fatalf("typed into a pane: %q, %q", readLines(t, first), readLines(t, second))
	}
	if res := s.Run("broadcast", "beta", "to nobody"); res.Code == 0 || !strings.Contains(res.Stdout+res.Stderr, "cannot be told") {
		t.Errorf("a broadcast to the team should report gus's pane as not told apart:\n%s", res)
	}
	wantCode(t, s.Run("send", "--pane", "0.0", "beta", "gus", "by flag"), 0)
	writeConfig(t, s, "[panes]\n\"beta/gus\" = \"dev\"\n")
	wantCode(t, s.Run("send", "beta", "gus", "by config"), 0)
	if got := readLines(t, first); len(got) != 1 || !strings.HasSuffix(got[0], ": by flag") {
		t.Errorf("the first program read %q", got)
	}
	if got := readLines(t, second); len(got) != 1 || !strings.HasSuffix(got[0], ": by config") {
		t.Errorf("the second program read %q", got)
	}
}

// A sender waiting for the pane's lock while the tmux server is replaced
// at the same socket (its panes numbered from %0 again, bob's first now)
// must not type the text meant for ana into bob (item 2). It keeps it,
// and deliver brings it to the new server's ana, once.
func TestServerReplacedWhileWaiting(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	s.RunsDirect() // a process of its own: see harness.RunsDirect
	ana := s.StartAgent("agent-t-ana", harness.InitialState("dialog"))
	first := startAgentmsg(t, s, nil, nil, "send", "--ready-timeout", "3s", "t", "ana", "first")
	waitForPaneLock(t, s, first.cmd.Process.Pid) // it holds the pane: the dialog
	second := startAgentmsg(t, s, nil, nil, "--json", "send", "--ready-timeout", "20s", "t", "ana", "the secret is 42")
	// The second has found ana's pane and waits for the lock once its
	// message is recorded as being typed.
	waitFor(t, "the second sender to wait for the pane", 10*time.Second, func() bool {
		return strings.Count(s.Run("log", "t").Stdout, " typing ") == 2
	})
	s.Tmux("kill-server")
	waitFor(t, "a new server at the same socket", 10*time.Second, func() bool {
		_, err := s.Server.Tmux("-f", "/dev/null", "new-session", "-d", "-s", "_keep", "sleep", "3600")
		return err == nil
	})
	bob := s.StartAgent("agent-t-bob")
	ana2 := s.StartAgent("agent-t-ana")
	holder, waiter := first.finish(t), second.finish(t)
	t.Logf("holder: %s\nwaiter: %s", holder, waiter)
	if len(bob.Received()) != 0 {
		t.Fatalf("bob got ana's text: %q", bob.Received())
	}
	if len(ana.Received()) != 0 || len(ana2.Received()) != 0 {
		t.Fatalf("ana got %q, the new ana %q before deliver", ana.Received(), ana2.Received())
	}
	rep, err := harness.Decode[harness.SendReport](waiter.Stdout)
	if err != nil || rep.Verdict != "deferred" {
		t.Fatalf("the waiting sender: %v; want deferred:\n%s", err, waiter)
	}
	wantCode(t, s.Run("deliver"), 0)
	// Both were kept (nothing of either was typed), and both go to the
	// agent named ana now, oldest first.
	got := ana2.Received()
	if len(got) != 2 || !strings.HasSuffix(got[0], ": first") || !strings.HasSuffix(got[1], ": the secret is 42") {
		t.Fatalf("the new ana received %q, want the first message, then the secret, once each", got)
	}
	if len(bob.Received()) != 0 {
		t.Fatalf("bob got %q", bob.Received())
	}
}

// Two tmux servers of one user, each with an agent-tw-ana: a message kept
// for one server's ana is never typed into the other's by a deliver run
// against it, nor listed there (item 3). On main, deliver against the
// second server typed it.
func TestInboxesBelongToTheirServer(t *testing.T) {
	t.Parallel()
	one, two := harness.NewTestServer(t), harness.NewTestServer(t)
	ana1 := one.StartAgent("agent-tw-ana", harness.InitialState("dialog"))
	ana2 := two.StartAgent("agent-tw-ana")
	// Both servers' agentmsg runs share the first one's mailbox, as one
	// user's do.
	shared := []string{"XDG_STATE_HOME=" + filepath.Join(one.Dir, "state"), "XDG_RUNTIME_DIR=" + filepath.Join(one.Dir, "runtime")}
	// With AGENTMSG_E2E_DAEMON=1 that is the first server's daemon, which
	// then keeps a control client on the second server too: it stops
	// before the second server's directory is removed (cleanups run last
	// first), not after.
	t.Cleanup(func() {
		if err := one.StopDaemon(); err != nil {
			t.Error(err)
		}
	})
	onTwo := func(args ...string) harness.Result {
		t.Helper()
		res, err := two.Server.RunEnv(shared, args...)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	rep, res := sendJSON(t, one, nil, "--ready-timeout", "300ms", "tw", "ana", "for the first server's ana")
	wantCode(t, res, 0)
	if rep.Verdict != "deferred" {
		t.Fatalf("want deferred, got %s", res)
	}
	res = onTwo("--json", "deliver")
	wantCode(t, res, 0)
	if got := ana2.Received(); len(got) != 0 {
		t.Fatalf("the second server's ana got %q", got)
	}
	if out := onTwo("log").Stdout; strings.Contains(out, rep.ID) {
		t.Errorf("the second server's log lists the first one's message:\n%s", out)
	}
	if out := onTwo("inbox", "--team", "tw", "--from", "ana").Stdout; strings.Contains(out, "first server") {
		t.Errorf("the second server's ana reads the first one's message:\n%s", out)
	}
	ana1.SetState("ready")
	wantCode(t, one.Run("deliver"), 0)
	wantReceived(t, ana1, harness.Submitted(rep.ID, "for the first server's ana"))
	if got := ana2.Received(); len(got) != 0 {
		t.Fatalf("the second server's ana got %q", got)
	}
}

// A broadcast gives every copy one id. ana's prompt-submit hook records
// it as she takes her copy; bob, busy, gets his later from deliver, which
// must type it: ana's receipt proves ana's copy only (item 4). On main,
// deliver reported bob's copy submitted and typed nothing.
func TestReceiptProvesOnlyItsOwnCopy(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	ana := s.StartAgent("agent-t-ana")
	bob := s.StartAgent("agent-t-bob", harness.InitialState("busy"))
	res := s.Run("--json", "broadcast", "--ready-timeout", "300ms", "t", "stand-up now")
	wantCode(t, res, 0)
	got := ana.WaitReceived(1, 10*time.Second)
	recordReceipt(t, s, ana, got[0])
	if len(bob.Received()) != 0 {
		t.Fatalf("busy bob got %q", bob.Received())
	}
	bob.SetState("ready")
	res = s.Run("--json", "deliver")
	wantCode(t, res, 0)
	rep, err := harness.Decode[deliverReport](res.Stdout)
	if err != nil || len(rep.Results) != 1 || rep.Results[0].Verdict != "submitted" || rep.Results[0].Typings != 1 {
		t.Fatalf("deliver: %v; want bob's copy typed once and submitted:\n%s", err, res)
	}
	wantReceived(t, bob, got[0])
	wantReceived(t, ana, got[0])
}

// A multi-line message to a program without bracketed paste would be
// submitted line by line, so a sender could make it run a bare "/exit" or
// "!command" (item 6): it goes as one line, a pointer to the whole text.
// On tmux 3.7 and newer the pane's own flag decides, even against a
// profile that says the program takes bracketed paste.
func TestMultiLineNeverSubmittedLineByLine(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	log := filepath.Join(s.Dir, "logs", "repl.log")
	s.Tmux(append([]string{"new-session", "-d", "-s", "agent-t-repl"}, promptProgram(log)...)...)
	waitFor(t, "the prompt", 10*time.Second, func() bool { return strings.Contains(s.Capture("=agent-t-repl:"), ">") })
	text := "please look\n/exit\n!touch pwned"
	check := func(args ...string) {
		t.Helper()
		before := len(readLines(t, log))
		rep, res := sendJSON(t, s, &text, append(args, "t", "repl", "-")...)
		wantCode(t, res, 0)
		got := readLines(t, log)[before:]
		if len(got) != 1 || !rep.Pointer || !strings.HasPrefix(got[0], rep.ID+": please look") || !strings.Contains(got[0], "agentmsg read "+rep.ID) {
			t.Fatalf("%v: the program read %q (pointer %v); want one line pointing at %s:\n%s", args, got, rep.Pointer, rep.ID, res)
		}
		full := s.Run("read", rep.ID)
		wantCode(t, full, 0)
		if !strings.Contains(full.Stdout, "/exit\n!touch pwned") {
			t.Errorf("agentmsg read %s:\n%s", rep.ID, full)
		}
	}
	check()
	if tmux.Version(strings.TrimPrefix(harness.TmuxVersion(), "tmux ")).AtLeast(3, 7) {
		check("--agent", "nofold") // the profile says bracketed paste; the pane says no
	}
}

// A line longer than the terminal keeps for a program that reads a line
// at a time (4,095 bytes) goes as a pointer: the program got the first
// 4,095 bytes and the rest was dropped (found by e2e/chaos, seed 204).
func TestALongLineIsNeverCutByTheTerminal(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	log := filepath.Join(s.Dir, "logs", "repl.log")
	s.Tmux(append([]string{"new-session", "-d", "-s", "agent-t-repl"}, promptProgram(log)...)...)
	waitFor(t, "the prompt", 10*time.Second, func() bool { return strings.Contains(s.Capture("=agent-t-repl:"), ">") })
	text := "start " + strings.Repeat("0123456789", 600) + " end"
	rep, res := sendJSON(t, s, &text, "t", "repl", "-")
	wantCode(t, res, 0)
	got := readLines(t, log)
	if len(got) != 1 || !rep.Pointer || !strings.HasPrefix(got[0], rep.ID+": start") || !strings.Contains(got[0], "agentmsg read "+rep.ID) {
		t.Fatalf("the program read %d lines, the first %d bytes (pointer %v); want one line pointing at %s:\n%s", len(got), len(strings.Join(got, "")), rep.Pointer, rep.ID, res)
	}
}

// Senders that name one server by two paths (-S through a symbolic link,
// and the real one) share one pane lock (item 8): no prompt ever holds two
// messages. On main, 1 prompt of 30 held two.
func TestTwoSpellingsOfOneSocketShareALock(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	ana := s.StartAgent("agent-alpha-ana")
	alias := filepath.Join(s.Dir, "alias")
	if err := os.Symlink(s.Dir, alias); err != nil {
		t.Fatal(err)
	}
	spellings := []string{s.Socket, filepath.Join(alias, filepath.Base(s.Socket))}
	const senders, each = 6, 5
	want := map[string]bool{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range senders {
		wg.Go(func() {
			for j := range each {
				text := fmt.Sprintf("sender %d message %d", i, j)
				res, err := s.Server.Exec(context.Background(), nil, "-S", spellings[i%2], "--json", "send", "alpha", "ana", text)
				if err != nil || res.Code != 0 {
					t.Errorf("%s: %v %s", text, err, res)
					continue
				}
				rep, err := harness.Decode[harness.SendReport](res.Stdout)
				if err != nil {
					t.Error(err)
					continue
				}
				mu.Lock()
				want[harness.Submitted(rep.ID, text)] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	got := ana.Received()
	for _, p := range got {
		if !want[p] {
			t.Errorf("a prompt that is not one message: %q", p)
		}
	}
	if len(got) != senders*each {
		t.Errorf("received %d prompts, want %d", len(got), senders*each)
	}
}
