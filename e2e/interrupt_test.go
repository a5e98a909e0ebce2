package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/e2e/harness"
	"github.com/agentmsg/agentmsg/internal/procs"
	"github.com/agentmsg/agentmsg/mailbox"
)

// background is an agentmsg run the test signals while it works.
type background struct {
	cmd    *exec.Cmd
	stdout bytes.Buffer
	stderr *lockedBuffer
	done   chan struct{}
	res    harness.Result
}

// startAgentmsg starts agentmsg -S SOCKET args... without waiting for it;
// the test ends it (signal, stdin) and waits with finish.
func startAgentmsg(t *testing.T, s *harness.TestServer, stdin io.Reader, env []string, args ...string) *background {
	t.Helper()
	b := &background{stderr: &lockedBuffer{}, done: make(chan struct{})}
	b.cmd = exec.Command(s.Bins.Agentmsg, append([]string{"-S", s.Socket}, args...)...)
	b.cmd.Env = append(s.Env(), env...)
	b.cmd.Stdin, b.cmd.Stdout, b.cmd.Stderr = stdin, &b.stdout, b.stderr
	b.cmd.WaitDelay = 2 * time.Second
	start := time.Now()
	if err := b.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := b.cmd.Wait()
		b.res = harness.Result{Stdout: b.stdout.String(), Stderr: b.stderr.String(), Code: b.cmd.ProcessState.ExitCode(), Elapsed: time.Since(start)}
		if err != nil && !errors.As(err, new(*exec.ExitError)) {
			b.res.Stderr += "\nwait: " + err.Error()
		}
		close(b.done)
	}()
	t.Cleanup(func() {
		select {
		case <-b.done:
		default:
			_ = b.cmd.Process.Kill()
			<-b.done
		}
	})
	return b
}

// waitFor polls until cond holds, failing the test after timeout.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %s", what, timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// stderrHas reports whether the run's stderr (its -v log) says s.
func (b *background) stderrHas(s string) func() bool {
	return func() bool { return strings.Contains(b.stderr.String(), s) }
}

func (b *background) signal(t *testing.T, sig os.Signal) {
	t.Helper()
	if err := b.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signalling agentmsg: %v\n%s", err, b.stderr)
	}
}

// signalAgain signals the run once more, unless it has already exited
// (having handled the first signal in the moment between the two).
func (b *background) signalAgain(t *testing.T, sig os.Signal) {
	t.Helper()
	if err := b.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Fatalf("signalling agentmsg again: %v\n%s", err, b.stderr)
	}
}

// finish waits for the run to exit.
func (b *background) finish(t *testing.T) harness.Result {
	t.Helper()
	select {
	case <-b.done:
		return b.res
	case <-time.After(harness.RunTimeout):
		t.Fatalf("agentmsg did not exit within %s after it was stopped; stderr:\n%s", harness.RunTimeout, b.stderr)
		return harness.Result{}
	}
}

// inboxHasOne reports whether alpha/ana's inbox holds a message yet.
func inboxHasOne(s *harness.TestServer) func() bool {
	return func() bool {
		b, err := store(s).Read("alpha", "ana")
		return err == nil && len(b.Envelopes) > 0
	}
}

// A send stopped by SIGINT or SIGTERM at any step leaves its message kept
// and recorded as what it is: deferred when nothing was typed yet, typed
// when the text waits in the box (a paste or a press under way is
// finished, never cut in half). Deliver then finishes it, and the agent
// receives it exactly once. Before, such a send recorded "failed": the text
// stayed in the box, nothing ever submitted it, and later sends waited
// forever behind "someone else's text".
func TestInterruptedSendIsFinishedOnceByDeliver(t *testing.T) {
	t.Parallel()
	type step struct {
		name  string
		agent []harness.AgentOption
		args  []string // send's flags
		// stop waits for the step and stops the send.
		stop func(t *testing.T, s *harness.TestServer, a *harness.TestAgent, b *background)
		// The stopped send's exit code and record.
		code  int
		state mailbox.DeliveryState
		// ready sets the agent ready before deliver.
		ready bool
		// then finishes the message: deliver, or a later send.
		bySend bool
	}
	steps := []step{
		{name: "SIGINT waiting for a dialog to close", agent: []harness.AgentOption{harness.InitialState("dialog")},
			args: []string{"--ready-timeout", "30s"},
			stop: func(t *testing.T, s *harness.TestServer, a *harness.TestAgent, b *background) {
				waitFor(t, "record of the message", 10*time.Second, inboxHasOne(s))
				waitFor(t, "wait for the dialog", 10*time.Second, b.stderrHas("capture-pane"))
				b.signal(t, syscall.SIGINT)
			},
			code: 0, state: mailbox.StateDeferred, ready: true},
		{name: "SIGTERM waiting for a busy agent", agent: []harness.AgentOption{harness.InitialState("busy")},
			args: []string{"--wait-idle", "--ready-timeout", "30s"},
			stop: func(t *testing.T, s *harness.TestServer, a *harness.TestAgent, b *background) {
				waitFor(t, "record of the message", 10*time.Second, inboxHasOne(s))
				waitFor(t, "wait for the agent", 10*time.Second, b.stderrHas("capture-pane"))
				b.signal(t, syscall.SIGTERM)
			},
			code: 0, state: mailbox.StateDeferred, ready: true},
		{name: "SIGINT with the paste under way", args: []string{"--settle", "2s"},
			stop: func(t *testing.T, s *harness.TestServer, a *harness.TestAgent, b *background) {
				waitFor(t, "load-buffer", 10*time.Second, b.stderrHas("load-buffer"))
				b.signal(t, syscall.SIGINT)
			},
			code: 5, state: mailbox.StateTyped},
		{name: "SIGTERM twice in the settle", args: []string{"--settle", "3s"},
			stop: func(t *testing.T, s *harness.TestServer, a *harness.TestAgent, b *background) {
				a.WaitScreen("MSG_TESTER_", 10*time.Second)
				b.signal(t, syscall.SIGTERM)
				b.signalAgain(t, syscall.SIGTERM) // a second one still records first
			},
			code: 5, state: mailbox.StateTyped},
		{name: "SIGINT in the settle, then another send", args: []string{"--settle", "3s"},
			stop: func(t *testing.T, s *harness.TestServer, a *harness.TestAgent, b *background) {
				a.WaitScreen("MSG_TESTER_", 10*time.Second)
				b.signal(t, syscall.SIGINT)
			},
			code: 5, state: mailbox.StateTyped, bySend: true},
		{name: "SIGINT after the submit press", agent: []harness.AgentOption{harness.DropEnter(1)},
			args: []string{"--repress", "20s", "--confirm-timeout", "20s"},
			stop: func(t *testing.T, s *harness.TestServer, a *harness.TestAgent, b *background) {
				waitFor(t, "submit press", 10*time.Second, b.stderrHas("send-keys"))
				b.signal(t, syscall.SIGINT)
			},
			code: 5, state: mailbox.StateTyped},
		{name: "a dialog opens between paste and submit", args: []string{"--settle", "2s"},
			stop: func(t *testing.T, s *harness.TestServer, a *harness.TestAgent, b *background) {
				a.WaitScreen("MSG_TESTER_", 10*time.Second)
				a.SetState("dialog")
			},
			code: 5, state: mailbox.StateTyped, ready: true},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			s := harness.NewTestServer(t)
			s.RunsDirect() // a process of its own: see harness.RunsDirect
			ana := s.StartAgent("agent-alpha-ana", st.agent...)
			args := append(append([]string{"-v", "--json", "send"}, st.args...), "alpha", "ana", "stopped half way")
			b := startAgentmsg(t, s, nil, nil, args...)
			st.stop(t, s, ana, b)
			res := b.finish(t)
			rep, err := harness.Decode[harness.SendReport](res.Stdout)
			if err != nil {
				t.Fatalf("%v\n%s", err, res)
			}
			if res.Code != st.code {
				t.Errorf("stopped send: want exit %d, got %s", st.code, res)
			}
			if got := deliveryState(t, s, "alpha", "ana", rep.ID); got != st.state {
				t.Fatalf("stopped send recorded %s, want %s\n%s", got, st.state, res)
			}
			if got := ana.Received(); len(got) != 0 {
				t.Fatalf("submitted %q before it was finished", got)
			}
			if st.ready {
				ana.SetState("ready")
			}
			want := []string{harness.Submitted(rep.ID, "stopped half way")}
			if st.bySend {
				next, res := sendJSON(t, s, nil, "alpha", "ana", "next")
				wantCode(t, res, 0)
				want = append(want, harness.Submitted(next.ID, "next"))
			}
			wantCode(t, s.Run("deliver"), 0)
			wantCode(t, s.Run("deliver"), 0) // nothing left to do
			wantReceived(t, ana, want...)
			if got := deliveryState(t, s, "alpha", "ana", rep.ID); got != mailbox.StateSubmitted {
				t.Errorf("after deliver the inbox says %s, want submitted", got)
			}
		})
	}
}

// An MCP server stopped while send_message has the text in the agent's
// box, by SIGTERM or by its client closing stdin, strands nothing: the
// message is recorded typed (for deliver to submit) or the server finishes
// the call first, and the agent receives it exactly once.
func TestMCPStoppedMidSendStrandsNothing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		stop func(t *testing.T, b *background, stdin io.Closer)
	}{
		{name: "SIGTERM", stop: func(t *testing.T, b *background, stdin io.Closer) {
			b.signal(t, syscall.SIGTERM)
			// Its stdin stays open until it has gone.
			waitFor(t, "the server to exit", 30*time.Second, func() bool { return exited(b.cmd.Process.Pid) })
			stdin.Close()
		}},
		{name: "stdin closed", stop: func(t *testing.T, _ *background, stdin io.Closer) { stdin.Close() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := harness.NewTestServer(t)
			s.RunsDirect() // a process of its own: see harness.RunsDirect
			ana := s.StartAgent("agent-t-ana")
			r, w := io.Pipe()
			b := startAgentmsg(t, s, r, []string{"AGENTMSG_FROM=lead", "AGENTMSG_TEAM=t", "AGENTMSG_SETTLE=3s"}, "-v", "mcp")
			t.Cleanup(func() { w.Close() }) // first: an open stdin keeps the run's Wait waiting
			for _, line := range []string{
				`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`,
				`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
				`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"send_message","arguments":{"to":"ana","content":"the client will be gone"}}}`,
			} {
				if _, err := fmt.Fprintln(w, line); err != nil {
					t.Fatal(err)
				}
			}
			ana.WaitScreen("MSG_LEAD_", 10*time.Second)
			tc.stop(t, b, w)
			b.finish(t)

			batch, err := store(s).Read("t", "ana")
			if err != nil || len(batch.Envelopes) != 1 {
				t.Fatalf("ana's inbox: %+v, %v", batch.Envelopes, err)
			}
			env := batch.Envelopes[0]
			if d := env.Delivery; d == nil || (d.State != mailbox.StateTyped && d.State != mailbox.StateSubmitted) {
				t.Fatalf("recorded %+v, want typed (for deliver) or submitted\n%s", d, b.stderr)
			}
			wantCode(t, s.Run("deliver"), 0)
			wantReceived(t, ana, harness.Submitted(string(env.ID), "the client will be gone"))
			if got := deliveryState(t, s, "t", "ana", string(env.ID)); got != mailbox.StateSubmitted {
				t.Errorf("after deliver the inbox says %s, want submitted", got)
			}
		})
	}
}

// exited reports whether pid has ended (a zombie not yet waited for, or
// gone).
func exited(pid int) bool {
	p, err := procs.Get(pid)
	return err != nil || p.Ended()
}
