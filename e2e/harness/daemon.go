package harness

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// With AGENTMSG_E2E_DAEMON=1 every test server runs the daemon (agentmsg
// serve) in its environment, and every agentmsg the tests run forwards its
// command to it: the end-to-end suite runs both ways, and must pass both
// ways (scripts/test). A test of what only a process of its own can show
// (a sender killed or stopped mid-send, its pid in a lock file) runs
// agentmsg with Direct in its environment.

// Direct makes an agentmsg run in its own process even when a daemon runs.
const Direct = "AGENTMSG_DIRECT=1"

// DaemonMode reports whether test servers run a daemon.
func DaemonMode() bool { return os.Getenv("AGENTMSG_E2E_DAEMON") == "1" }

// daemonPIDFile is where the watchdog finds the daemon to stop.
func (s *Server) daemonPIDFile() string { return filepath.Join(s.Dir, "daemon.pid") }

// DaemonSocket is where the server's daemon listens.
func (s *Server) DaemonSocket() string {
	return filepath.Join(s.Dir, "state", "agentmsg", "serve.sock")
}

// StartDaemon starts agentmsg serve for this server, with env added to its
// environment, and waits until it listens.
func (s *Server) StartDaemon(env ...string) error {
	cmd := exec.Command(s.Bins.Agentmsg, "-S", s.Socket, "serve")
	cmd.Env = append(s.Env(), env...)
	log, err := os.Create(filepath.Join(s.Dir, "logs", "daemon.log"))
	if err != nil {
		return err
	}
	defer log.Close()
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return err
	}
	s.daemon = cmd
	if err := os.WriteFile(s.daemonPIDFile(), []byte(strconv.Itoa(cmd.Process.Pid)), 0o600); err != nil {
		return err
	}
	deadline := time.Now().Add(StartTimeout)
	for {
		// Answering, not only there: a killed daemon leaves its socket.
		if c, err := net.Dial("unix", s.DaemonSocket()); err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(filepath.Join(s.Dir, "logs", "daemon.log"))
			return fmt.Errorf("the daemon did not listen within %s:\n%s", StartTimeout, b)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// StopDaemon stops the daemon (SIGTERM: it detaches its tmux clients
// cleanly) and waits for it.
func (s *Server) StopDaemon() error {
	if s.daemon == nil {
		return nil
	}
	cmd := s.daemon
	s.daemon = nil
	_ = cmd.Process.Signal(syscall.SIGTERM) // our own child, by its pid
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return fmt.Errorf("the daemon: %w", err)
		}
		return nil
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		return errors.New("the daemon did not stop within 10s of SIGTERM")
	}
}

// KillDaemon SIGKILLs the daemon, at once (our own child, by its pid), and
// waits for it: what a crash of the daemon leaves.
func (s *Server) KillDaemon() {
	if s.daemon == nil {
		return
	}
	cmd := s.daemon
	s.daemon = nil
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
}

// DaemonPID is the running daemon's pid, 0 when none runs.
func (s *Server) DaemonPID() int {
	if s.daemon == nil {
		return 0
	}
	return s.daemon.Process.Pid
}
