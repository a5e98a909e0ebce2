package tmux

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Control is one tmux control-mode client (tmux -C) kept open for many
// commands. A command costs about 0.1 ms there against several ms for a new
// tmux process, which is what makes a 100-agent broadcast or a tight confirm
// loop cheap.
//
// A control client must be attached to a session. It attaches with
// ignore-size (it never resizes the agent's window) and no-output (tmux
// does not stream the panes' output to it); the session shows one more
// attached client while it is open.
type Control struct {
	server  Server
	exec    *Exec // for what control mode cannot do (nothing today) and Info
	proc    *exec.Cmd
	stdin   io.WriteCloser
	timeout time.Duration

	mu      sync.Mutex // orders writes with the pending queue
	pending []chan reply
	dead    error
	done    chan struct{}
	closed  bool
	// Trace, when set, hears every command: its name, duration and error.
	Trace func(command string, took time.Duration, err error)
}

type reply struct {
	out []string
	err error
}

// DialControl starts a control client attached to session (an exact name).
// It fails with ErrSessionNotFound when there is no such session.
func DialControl(ctx context.Context, e *Exec, session string) (*Control, error) {
	// attach-session would start a server on a missing socket (which then
	// exits, having no sessions); say what is true instead.
	if _, err := os.Stat(e.server.Socket); errors.Is(err, os.ErrNotExist) {
		return nil, &Error{Command: "attach-session", Socket: e.server.Socket, ExitCode: 1,
			Stderr: "no server running on " + e.server.Socket, Kind: ErrNoServer}
	}
	// The client outlives ctx (it is closed with Close), so no CommandContext.
	proc := exec.Command(e.bin, "-S", e.server.Socket, "-C",
		"attach-session", "-f", "ignore-size,no-output", "-t", "="+session)
	// If agentmsg is killed (kill -9 included), the client must not stay
	// attached to the agent's session: the kernel ends it with us.
	proc.SysProcAttr = controlProcAttr()
	stdin, err := proc.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := proc.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var stderr strings.Builder
	proc.Stderr = &stderr
	if err := proc.Start(); err != nil {
		return nil, err
	}
	c := &Control{server: e.server, exec: e, proc: proc, stdin: stdin, timeout: e.timeout, done: make(chan struct{}), Trace: e.Trace}
	attached := make(chan reply, 1)
	c.pending = []chan reply{attached}
	go c.read(bufio.NewReaderSize(stdout, 64<<10), &stderr)

	select {
	case r := <-attached:
		if r.err != nil {
			c.Close()
			return nil, r.err
		}
		return c, nil
	case <-ctx.Done():
		c.Close()
		return nil, ctx.Err()
	}
}

func (c *Control) Server() Server { return c.server }

// read parses the control protocol: a command's output is framed by
// "%begin T N F" and "%end T N F" (or "%error T N F") with the same three
// fields; other lines starting with % are notifications.
func (c *Control) read(r *bufio.Reader, stderr *strings.Builder) {
	var (
		inBlock  bool
		guard    string // "T N F" of the open block
		out      []string
		attached bool // the first block answers attach-session itself
	)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			break
		}
		line = strings.TrimSuffix(line, "\n")
		if !inBlock {
			if rest, ok := strings.CutPrefix(line, "%begin "); ok {
				inBlock, guard, out = true, rest, nil
			}
			continue // a notification
		}
		if line == "%end "+guard || line == "%error "+guard {
			inBlock = false
			var rep reply
			rep.out = out
			if strings.HasPrefix(line, "%error") {
				msg := strings.Join(out, "\n")
				rep.err = &Error{Command: "(control)", Socket: c.server.Socket, Stderr: msg, ExitCode: 1, Kind: classify(msg)}
			}
			// Our commands' blocks carry flag 1; anything else (a hook's
			// output) is not a reply to us.
			if !attached || strings.HasSuffix(guard, " 1") {
				attached = true
				c.deliver(rep)
			}
			continue
		}
		out = append(out, line)
	}
	_ = c.proc.Wait()
	msg := strings.TrimSpace(stderr.String())
	if msg == "" {
		msg = "the control client exited"
	}
	dead := &Error{Command: "control client", Socket: c.server.Socket, Stderr: msg, ExitCode: -1, Kind: classify(msg)}
	if dead.Kind == nil && !c.isClosed() {
		dead.Kind = ErrNoServer
	}
	c.mu.Lock()
	c.dead = dead
	pending := c.pending
	c.pending = nil
	c.mu.Unlock()
	for _, p := range pending {
		p <- reply{err: dead}
	}
	close(c.done)
}

func (c *Control) deliver(rep reply) {
	c.mu.Lock()
	if len(c.pending) == 0 {
		c.mu.Unlock()
		return // output of a command we did not send (another client's hook)
	}
	p := c.pending[0]
	c.pending = c.pending[1:]
	c.mu.Unlock()
	p <- rep
}

// gone reports whether the client has ended (its server or session went
// away, or it was closed). It is true before any command fails for it.
func (c *Control) gone() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dead != nil || c.closed
}

func (c *Control) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// Close detaches the client (closing its stdin ends it).
func (c *Control) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	c.stdin.Close()
	select {
	case <-c.done:
	case <-time.After(2 * time.Second):
		_ = c.proc.Process.Kill()
		<-c.done
	}
	return nil
}

// run sends one command line and waits for its reply.
func (c *Control) run(ctx context.Context, args ...string) ([]string, error) {
	line, err := quoteLine(args)
	if err != nil {
		return nil, err
	}
	ch := make(chan reply, 1)
	start := time.Now()
	c.mu.Lock()
	if c.dead != nil || c.closed {
		err := c.dead
		c.mu.Unlock()
		if err == nil {
			err = errors.New("tmux control client is closed")
		}
		return nil, err
	}
	c.pending = append(c.pending, ch)
	_, werr := io.WriteString(c.stdin, line+"\n")
	c.mu.Unlock()
	if werr != nil {
		// The reader will fail every pending reply, ours included.
		r := <-ch
		return nil, r.err
	}
	timer := time.NewTimer(c.timeout)
	defer timer.Stop()
	var rep reply
	select {
	case rep = <-ch:
	case <-ctx.Done():
		// The reply will still come and be dropped in ch's buffer.
		rep.err = ctx.Err()
	case <-timer.C:
		rep.err = &Error{Command: args[0], Socket: c.server.Socket, Stderr: fmt.Sprintf("no answer within %s", c.timeout), ExitCode: -1}
	}
	var te *Error
	if errors.As(rep.err, &te) && te.Command == "(control)" {
		te.Command = args[0]
	}
	if c.Trace != nil {
		c.Trace("-C "+args[0], time.Since(start), rep.err)
	}
	return rep.out, rep.err
}

// quoteLine renders args for tmux's command parser. Everything is single
// quoted; our arguments are pane ids, exact session targets, formats,
// generated buffer names and temp file paths, none of which holds a quote or a
// newline, and anything that does is refused rather than mangled.
func quoteLine(args []string) (string, error) {
	var b strings.Builder
	for i, a := range args {
		if strings.ContainsAny(a, "'\n\r") {
			return "", fmt.Errorf("tmux argument %q cannot be sent over a control client", a)
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteByte('\'')
		b.WriteString(a)
		b.WriteByte('\'')
	}
	return b.String(), nil
}

func (c *Control) Info(ctx context.Context) (Info, error) { return c.exec.Info(ctx) }

func (c *Control) ListPanes(ctx context.Context) ([]Pane, error) {
	out, err := c.run(ctx, "list-panes", "-a", "-F", paneFormat)
	if err != nil {
		return nil, err
	}
	return parsePanes([]byte(strings.Join(out, "\n")), true), nil
}

func (c *Control) SessionPane(ctx context.Context, session string) (Pane, error) {
	out, err := c.run(ctx, "list-panes", "-t", "="+session+":", "-F", paneFormat)
	if err != nil {
		return Pane{}, err
	}
	for _, p := range parsePanes([]byte(strings.Join(out, "\n")), false) {
		if p.Session == session {
			return p, nil
		}
	}
	return Pane{}, &Error{Command: "list-panes", Socket: c.server.Socket, Stderr: "can't find session: " + session, Kind: ErrSessionNotFound}
}

func (c *Control) LeaveMode(ctx context.Context, pane string) error {
	_, err := c.run(ctx, "copy-mode", "-q", "-t", pane)
	return err
}

func (c *Control) Capture(ctx context.Context, pane string, history int) ([]string, error) {
	args := []string{"capture-pane", "-p", "-J", "-t", pane}
	if history > 0 {
		args = append(args, "-S", strconv.Itoa(-history))
	}
	return c.run(ctx, args...)
}

func (c *Control) Paste(ctx context.Context, pane, buffer, text string) error {
	// load-buffer cannot read our stdin here (it carries the protocol), so
	// the text goes through a private file that the tmux client reads; it
	// lives only for the load.
	f, err := os.CreateTemp("", "agentmsg-paste-*")
	if err != nil {
		return fmt.Errorf("paste file: %w", err)
	}
	path := f.Name()
	defer os.Remove(path)
	_, err = f.WriteString(text)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("paste file: %w", err)
	}
	if _, err := c.run(ctx, "load-buffer", "-b", buffer, path); err != nil {
		return err
	}
	if _, err := c.run(ctx, "paste-buffer", "-p", "-d", "-r", "-b", buffer, "-t", pane); err != nil {
		_, _ = c.run(context.WithoutCancel(ctx), "delete-buffer", "-b", buffer)
		return err
	}
	return nil
}

func (c *Control) SendBytes(ctx context.Context, pane string, b ...byte) error {
	args := []string{"send-keys", "-t", pane, "-H"}
	for _, x := range b {
		args = append(args, fmt.Sprintf("%02x", x))
	}
	_, err := c.run(ctx, args...)
	return err
}
