package netlab

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Proc is a long-lived process that a lab started in one of its hosts. It
// leads a process group of its own; the lab kills the group when the test
// ends, if the test has not.
type Proc struct {
	Log string // its stdout and stderr

	pid  int
	name string
	done chan struct{}
	err  error
}

// Start starts name with args in h, its output going to a log file under the
// lab's dir, with env added to this process's environment.
func (h *Host) Start(env []string, name string, args ...string) (*Proc, error) {
	l := h.lab
	l.mu.Lock()
	l.started++
	logPath := filepath.Join(l.Dir, "logs", fmt.Sprintf("%02d-%s-%s.log", l.started, h.label, filepath.Base(name)))
	l.mu.Unlock()
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	// The child has its own copy of the file once started.
	defer f.Close()
	cmd := h.Command(context.Background(), env, name, args...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s in %s: %w", name, h.Name, err)
	}
	p := &Proc{Log: logPath, pid: cmd.Process.Pid, name: h.label + " " + filepath.Base(name), done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	l.mu.Lock()
	l.procs = append(l.procs, p)
	l.mu.Unlock()
	return p, nil
}

func (p *Proc) String() string { return fmt.Sprintf("%s (pid %d)", p.name, p.pid) }

// Pid is the process's id, which is also its process group's.
func (p *Proc) Pid() int { return p.pid }

// Done is closed when the process has exited; Err then says how.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Err is how the process ended (nil before Done).
func (p *Proc) Err() error {
	select {
	case <-p.done:
		return p.err
	default:
		return nil
	}
}

// exited reports whether p has ended.
func (p *Proc) exited() bool {
	select {
	case <-p.Done():
		return true
	default:
		return false
	}
}

// Kill sends SIGKILL to the process's group and waits for the process.
func (p *Proc) Kill() error {
	return p.signal(syscall.SIGKILL, 0)
}

// Stop asks the process's group to end (SIGTERM), and kills it if the
// process has not ended after grace.
func (p *Proc) Stop(grace time.Duration) error {
	return p.signal(syscall.SIGTERM, grace)
}

func (p *Proc) signal(sig syscall.Signal, grace time.Duration) error {
	select {
	case <-p.done:
		return nil // reaped: its pid may be someone else's by now
	default:
	}
	if err := syscall.Kill(-p.pid, sig); err != nil && err != syscall.ESRCH {
		return fmt.Errorf("signalling %s: %w", p, err)
	}
	if sig == syscall.SIGKILL {
		<-p.done
		return nil
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
		return p.Kill()
	}
}

// logTails logs the end of every log of the lab's processes, for a test
// that failed.
func (l *Lab) logTails() {
	logs, _ := filepath.Glob(filepath.Join(l.Dir, "logs", "*.log"))
	for _, path := range logs {
		b, _ := os.ReadFile(path)
		lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
		lines = lines[max(0, len(lines)-20):]
		l.t.Logf("netlab: end of %s:\n%s", filepath.Base(path), strings.Join(lines, "\n"))
	}
}

// waitListening waits until addr accepts a connection from the root
// namespace, or done is closed (its listener ended), or timeout passes.
func waitListening(addr string, done <-chan struct{}, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("it ended before it listened on %s", addr)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nothing listens on %s after %s: %v", addr, timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
