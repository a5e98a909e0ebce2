package e2e

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/e2e/harness"
)

// The commands that run until stopped (the follows, the watches, wait
// with no timeout, the daemon) end when what they watch has gone, and say
// so: the mailbox removed under them (each used to read it as empty for
// ever), the tmux server deliver --watch delivers to killed (it went on
// with nothing to deliver), or a SIGHUP (a closed terminal, which killed
// them without a word). Each ends within seconds, exit 1, with the reason
// on stderr.
func TestWatchesEndWithWhatTheyWatch(t *testing.T) {
	const bound = 20 * time.Second
	removeMailbox := func(t *testing.T, s *harness.TestServer, _ *exec.Cmd) {
		// Again while it fails: the daemon's NATS server writes there.
		var err error
		for range 50 {
			if err = os.RemoveAll(filepath.Join(s.Dir, "state", "agentmsg")); err == nil {
				return
			}
		}
		t.Fatal(err)
	}
	killServer := func(t *testing.T, s *harness.TestServer, _ *exec.Cmd) { s.Tmux("kill-server") }
	hangup := func(t *testing.T, _ *harness.TestServer, c *exec.Cmd) { c.Process.Signal(syscall.SIGHUP) }
	const gone = "the mailbox directory is gone"
	cases := []struct {
		name    string
		args    []string
		started func(s *harness.TestServer, stdout, stderr string) bool
		end     func(t *testing.T, s *harness.TestServer, c *exec.Cmd)
		says    string
	}{
		{"inbox --follow, mailbox removed", []string{"inbox", "--follow"},
			func(_ *harness.TestServer, out, _ string) bool { return strings.Contains(out, "[MSG_") }, removeMailbox, gone},
		{"wait --timeout 0, mailbox removed", []string{"wait", "--sender", "nobody", "--timeout", "0"},
			func(_ *harness.TestServer, _, errOut string) bool {
				return strings.Contains(errOut, "waiting until interrupted")
			}, removeMailbox, gone},
		{"events, mailbox removed", []string{"events"},
			func(_ *harness.TestServer, out, _ string) bool { return strings.Contains(out, "message.recorded") }, removeMailbox, gone},
		{"board --watch, mailbox removed", []string{"board", "alpha", "--watch"},
			func(_ *harness.TestServer, out, _ string) bool { return strings.Contains(out, "-- alpha") }, removeMailbox, gone},
		{"deliver --watch, mailbox removed", []string{"-v", "deliver", "--watch"},
			func(_ *harness.TestServer, _, errOut string) bool { return strings.Contains(errOut, "tmux server") }, removeMailbox, gone},
		{"deliver --watch, tmux server killed", []string{"-v", "deliver", "--watch"},
			func(_ *harness.TestServer, _, errOut string) bool { return strings.Contains(errOut, "tmux server") }, killServer, "the tmux server is gone"},
		{"serve, mailbox removed", []string{"serve"},
			func(s *harness.TestServer, _, _ string) bool {
				c, err := net.Dial("unix", s.DaemonSocket())
				if err == nil {
					c.Close()
				}
				return err == nil
			}, removeMailbox, gone},
		{"wait --timeout 0, SIGHUP", []string{"wait", "--sender", "nobody", "--timeout", "0"},
			func(_ *harness.TestServer, _, errOut string) bool {
				return strings.Contains(errOut, "waiting until interrupted")
			}, hangup, "interrupted (SIGHUP received)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := harness.NewTestServer(t)
			s.RunsDirect() // a process of its own, and no daemon but the one under test
			wantCode(t, s.Run("--team", "alpha", "send", "--mailbox-only", "--create", "alpha", "tester", "one to read"), 0)
			wantCode(t, s.Run("--team", "alpha", "status", "set", "--state", "working"), 0)
			var stdout, stderr lockedBuffer
			cmd := exec.Command(s.Bins.Agentmsg, append([]string{"-S", s.Socket, "--team", "alpha"}, c.args...)...)
			cmd.Env, cmd.Stdout, cmd.Stderr = s.Env(), &stdout, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			go func() {
				cmd.Wait()
				close(done)
			}()
			t.Cleanup(func() {
				cmd.Process.Kill()
				<-done
			})
			waitFor(t, "the command's start", 20*time.Second, func() bool { return c.started(s, stdout.String(), stderr.String()) })
			ended := time.Now()
			c.end(t, s, cmd)
			select {
			case <-done:
			case <-time.After(bound):
				t.Fatalf("still running %s after that; stderr:\n%s", bound, stderr.String())
			}
			t.Logf("ended %s after that", time.Since(ended).Round(time.Millisecond))
			if code := cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(stderr.String(), c.says) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit 1 saying %q", code, stderr.String(), c.says)
			}
			if _, err := os.Lstat(filepath.Join(s.Dir, "state", "agentmsg", "places")); err == nil && strings.Contains(c.says, gone) {
				t.Error("the removed mailbox was made again")
			}
		})
	}
}
