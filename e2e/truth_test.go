package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/e2e/harness"
)

// Issue 17: agentmsg types into the agent's own pane on the server it was
// found on, or into nothing.

// writeConfig writes agentmsg's config file for the tests' agentmsg runs.
func writeConfig(t *testing.T, s *harness.TestServer, toml string) {
	t.Helper()
	dir := filepath.Join(s.Dir, "config", "agentmsg")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(toml), 0o600); err != nil {
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

// promptProgram is a program with a "> " prompt (what agentmsg's generic
// reader takes for an empty input box) that appends every line it reads
// to log: a second program a person left in the agent's session.
func promptProgram(log string) string {
	return fmt.Sprintf(`while IFS= read -r -p '> ' l; do printf '%%s\n' "$l" >> '%s'; done`, log)
}

// A person opened a second window in the agent's session (a program with
// a prompt) and left it current, and split a shell beside the agent:
// a send types into the agent's pane or, when it cannot tell which that
// is, into nothing (item 1). On main the text went into the current window
// and was reported submitted; the split shell made it "the agent has
// exited".
func TestSendTypesIntoTheAgentsPaneOnly(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	fay := s.StartAgent("agent-beta-fay")
	other := filepath.Join(s.Dir, "logs", "other.log")
	s.Tmux("split-window", "-d", "-t", fay.Pane, "sh")
	s.Tmux("new-window", "-t", "=agent-beta-fay:", "-n", "dev", "bash", "--norc", "-c", promptProgram(other))
	waitFor(t, "the dev window's prompt", 10*time.Second, func() bool { return strings.Contains(s.Capture("=agent-beta-fay:dev"), ">") })

	// Three panes, none running an agent CLI agentmsg knows: refused,
	// naming them and how to choose.
	res := s.Run("send", "beta", "fay", "not into the dev window")
	wantCode(t, res, 3)
	for _, want := range []string{"3 panes", "0.0", "1.0", "--pane", `[panes] "beta/fay"`} {
		if !strings.Contains(res.Stderr+res.Stdout, want) {
			t.Errorf("refusal does not say %q:\n%s", want, res)
		}
	}
	wantUntouched(t, fay)
	if got := readLines(t, other); got != nil {
		t.Fatalf("the dev window's program read %q", got)
	}

	// Chosen by flag, by the config file, or known by its profile: the
	// agent's pane, whichever window is current.
	rep, res := sendJSON(t, s, nil, "--pane", "0.0", "beta", "fay", "by flag")
	wantCode(t, res, 0)
	if rep.Pane != fay.Pane || rep.Verdict != "submitted" {
		t.Fatalf("sent to pane %s (%s), want %s:\n%s", rep.Pane, rep.Verdict, fay.Pane, res)
	}
	writeConfig(t, s, "[panes]\n\"beta/fay\" = \"0.0\"\n")
	wantCode(t, s.Run("send", "beta", "fay", "by config"), 0)
	writeConfig(t, s, "[profiles.standin]\nbase = \"generic\"\ncommands = [\"standin\"]\n")
	wantCode(t, s.Run("send", "beta", "fay", "known by its profile"), 0)
	res = s.Run("broadcast", "beta", "to the team")
	wantCode(t, res, 0)
	got := fay.Received()
	if len(got) != 4 || !strings.HasSuffix(got[0], ": by flag") || !strings.HasSuffix(got[3], ": to the team") {
		t.Fatalf("fay received %q", got)
	}
	if got := readLines(t, other); got != nil {
		t.Fatalf("the dev window's program read %q", got)
	}
	list := s.Run("list", "beta")
	if !strings.Contains(list.Stdout, fay.Pane) {
		t.Errorf("list does not show fay's pane %s:\n%s", fay.Pane, list)
	}
}

// A sender waiting for the pane's lock while the tmux server is replaced
// at the same socket (its panes numbered from %0 again, bob's first now)
// must not type the text meant for ana into bob (item 2). It keeps it,
// and deliver brings it to the new server's ana, once.
func TestServerReplacedWhileWaiting(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
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
