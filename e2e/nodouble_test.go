package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/e2e/harness"
	"github.com/agentmsg/agentmsg/mailbox"
)

// Nothing is ever typed twice, and a person's keystrokes are never
// submitted with a message (issue 10, items 3, 4, 5 and 12). The stand-in's
// log counts what arrived.

// deliverReport is `deliver --json`.
type deliverReport struct {
	Delivered int               `json:"delivered"`
	Results   []harness.Outcome `json:"results"`
}

// start runs agentmsg -S SOCKET args... in the background; the test ends it.
// Its stdout is returned; stderr goes to the test log.
func start(t *testing.T, s *harness.TestServer, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(s.Bins.Agentmsg, append([]string{"-S", s.Socket}, args...)...)
	cmd.Env = s.Env()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, tlog{t}
	cmd.WaitDelay = 2 * time.Second // a tmux child left holding the pipes
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd, &out
}

// tlog writes to the test's log.
type tlog struct{ t *testing.T }

func (w tlog) Write(b []byte) (int, error) {
	w.t.Logf("%s", b)
	return len(b), nil
}

// recordReceipt runs the prompt-submit hook as the agent in a's pane would
// on submitting prompt: in that pane's environment ($TMUX, $TMUX_PANE).
func recordReceipt(t *testing.T, s *harness.TestServer, a *harness.TestAgent, prompt string) {
	t.Helper()
	pid := strings.TrimSpace(s.Tmux("display-message", "-p", "#{pid}"))
	in, _ := json.Marshal(map[string]string{"prompt": prompt, "hook_event_name": "UserPromptSubmit"})
	path := filepath.Join(s.Dir, "state", "agentmsg", "receipts.log")
	res, err := s.Server.ExecEnv(context.Background(), bytes.NewReader(in),
		[]string{"TMUX=" + s.Socket + "," + pid + ",0", "TMUX_PANE=" + a.Pane}, "hook", "prompt-submit", "--receipts", path)
	if err != nil || res.Code != 0 || res.Stderr != "" {
		t.Fatalf("the hook: %v\n%s", err, res)
	}
}

// A send killed right after its submit press leaves the message "typing",
// and the agent prints 300 lines under it. deliver must find that it was
// submitted (in the whole scrollback, or the agent's receipt) and never
// type it again; when nothing shows either way, it says unknown.
func TestDeliverAfterKilledSendNeverTypesTwice(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		historyLimit int  // 0: tmux's default, 2000 lines
		receipt      bool // the agent's prompt-submit hook recorded it
		verdict      string
		state        mailbox.DeliveryState
	}{
		{name: "id in the scrollback", verdict: "submitted", state: mailbox.StateSubmitted},
		{name: "id past the history, with a receipt", historyLimit: 100, receipt: true, verdict: "submitted", state: mailbox.StateSubmitted},
		{name: "id past the history, no receipt", historyLimit: 100, verdict: "unknown", state: mailbox.StateFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := harness.NewTestServer(t)
			s.RunsDirect() // a process of its own: see harness.RunsDirect
			if tt.historyLimit > 0 {
				s.Tmux("set-option", "-g", "history-limit", strconv.Itoa(tt.historyLimit))
			}
			// The echo comes a second late: the send is still confirming
			// when the agent has the prompt.
			ana := s.StartAgent("agent-alpha-ana", harness.EchoDelay(time.Second), harness.OutputLines(300))
			send, _ := start(t, s, "send", "alpha", "ana", "do this exactly once")
			got := ana.WaitReceived(1, 10*time.Second)
			_ = send.Process.Signal(syscall.SIGKILL)
			_ = send.Wait()
			waitNoControlClient(t, s.Socket)
			id, _, _ := strings.Cut(got[0], ":")
			if st := deliveryState(t, s, "alpha", "ana", id); st != mailbox.StateTyping {
				t.Fatalf("the killed send left %s, want typing", st)
			}
			ana.WaitScreen("output line 300 of 300", 10*time.Second)
			if tt.receipt {
				recordReceipt(t, s, ana, got[0])
			}

			res := s.Run("--json", "deliver")
			rep, err := harness.Decode[deliverReport](res.Stdout)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Results) != 1 || rep.Results[0].Verdict != tt.verdict || rep.Results[0].Typings != 0 || rep.Results[0].Presses != 0 {
				t.Errorf("deliver: want verdict %s, nothing typed or pressed; got %s", tt.verdict, res)
			}
			wantReceived(t, ana, got[0])
			if st := deliveryState(t, s, "alpha", "ana", id); st != tt.state {
				t.Errorf("inbox says %s, want %s", st, tt.state)
			}
			wantCode(t, s.Run("deliver"), 0) // and a second pass leaves it alone
			wantReceived(t, ana, got[0])
		})
	}
}

// A long message to an agent that shows long pastes in full: its echo
// scrolls the id past tmux's history, and text that left the box after our
// press was taken. It is typed once.
func TestLongMessageIsTypedOnce(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for i := 1; i <= 2500; i++ {
		fmt.Fprintf(&b, "diff line %d\n", i)
	}
	text := b.String()
	tests := []struct {
		name    string
		opts    []harness.AgentOption
		verdict string
		code    int
		arrived int
	}{
		// The box shows "[Pasted text #1 +2499 lines]"; the transcript
		// all 2500 lines.
		{name: "folded in the box", opts: []harness.AgentOption{harness.Style("plain")}, verdict: "submitted", arrived: 1},
		// The box is taller than the screen: the text cannot be checked
		// there, so it is pasted once and never submitted blind.
		{name: "in full in the box", opts: []harness.AgentOption{harness.Style("plain"), harness.FoldBytes(0), harness.FoldLines(0)},
			verdict: "unknown", code: 5, arrived: 0},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := harness.NewTestServer(t)
			name := fmt.Sprintf("pl%d", i)
			a := s.StartAgent("agent-bg-"+name, tt.opts...)
			rep, res := sendJSON(t, s, &text, "--agent", "nofold", "bg", name, "-")
			wantCode(t, res, tt.code)
			if rep.Verdict != tt.verdict || rep.Typings != 1 {
				t.Errorf("verdict %s after %d typings, want %s after 1\n%s", rep.Verdict, rep.Typings, tt.verdict, res)
			}
			got := a.Received()
			if len(got) != tt.arrived {
				t.Fatalf("%d copies arrived, want %d", len(got), tt.arrived)
			}
			if tt.arrived == 1 && got[0] != harness.Submitted(rep.ID, strings.TrimSuffix(text, "\n")) {
				t.Errorf("received %q", clip(got))
			}
		})
	}
}

// A frozen agent gets one paste, however long it stays frozen: the send
// says unknown and keeps it typed, and once the agent thaws, deliver only
// submits what is in the box.
func TestFrozenAgentGetsOnePaste(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	ana := s.StartAgent("agent-alpha-ana", harness.Stoppable())
	if err := ana.Stop(); err != nil {
		t.Fatal(err)
	}
	thaw := func() {
		if err := ana.Continue(); err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(thaw)

	rep, res := sendJSON(t, s, nil, "--confirm-timeout", "2s", "alpha", "ana", "are you there")
	wantCode(t, res, 5)
	if rep.Verdict != "unknown" || rep.Typings != 1 || rep.Presses != 0 {
		t.Errorf("verdict %s, %d typings, %d presses; want unknown after one paste, nothing pressed\n%s", rep.Verdict, rep.Typings, rep.Presses, res)
	}
	if st := deliveryState(t, s, "alpha", "ana", rep.ID); st != mailbox.StateTyped {
		t.Errorf("inbox says %s, want typed (it may still arrive)", st)
	}
	thaw()
	screen := ana.WaitScreen(rep.ID, 5*time.Second)
	if n := strings.Count(screen, rep.ID); n != 1 {
		t.Fatalf("the box holds the message %d times after thawing:\n%s", n, screen)
	}
	wantCode(t, s.Run("deliver"), 0)
	wantReceived(t, ana, harness.Submitted(rep.ID, "are you there"))
}

// A person who starts typing while a send settles: the box no longer holds
// exactly our text, so nothing is submitted, and their text stays.
func TestPersonTypingDuringSettleIsNeverSubmitted(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	ana := s.StartAgent("agent-alpha-ana")
	send, out := start(t, s, "--json", "send", "--settle", "1s", "alpha", "ana", "agent message")
	ana.WaitScreen("agent message", 5*time.Second)
	ana.Type(" and HUMAN half-typed rm -rf")
	err := send.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 5 {
		t.Fatalf("send: %v, want exit 5\n%s", err, out)
	}
	rep, err := harness.Decode[harness.SendReport](out.String())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != "typed" || rep.Presses != 0 || !strings.Contains(rep.Error, "someone typed") {
		t.Errorf("verdict %s, %d presses, error %q; want typed, nothing pressed, and why", rep.Verdict, rep.Presses, rep.Error)
	}
	wantUntouched(t, ana)
	ana.WaitScreen(rep.ID+": agent message and HUMAN half-typed rm -rf", time.Second)
	// deliver leaves the person's draft alone too.
	wantCode(t, s.Run("deliver", "--ready-timeout", "300ms"), 0)
	wantUntouched(t, ana)
}
