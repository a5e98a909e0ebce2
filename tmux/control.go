package tmux

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentmsg/agentmsg/lock"
)

// Control is one long-lived control-mode client (tmux -C) of one server,
// for a process that sends many commands (the daemon): a command list
// through it costs about 0.1 ms, a tmux process about 2 ms. Exec.UseControl
// sends an Exec's command lists through it while it is attached, and
// through tmux processes while it is not; it attaches, and attaches again
// after it was let go, on its own until Close.
//
// The rule it keeps (doc.go): never two control clients of ours on one
// server at once, not even across a restart of the process that owns it.
// A client is started only by the holder of an flock on a file beside the
// server's socket, and the client process inherits that locked descriptor
// while its owner closes its own: the lock is held exactly as long as the
// client process lives, so a new owner started the moment the old one was
// SIGKILLed waits until the old client has been let go by the server and
// has exited. It also waits while the server lists any control client at
// all (its own leaving one, or another program's). Nothing else is ever
// done to the client: it runs in a process group of its own, is never
// signalled, and leaves when its input ends (Close, or its owner's death).
type Control struct {
	server  Server
	bin     string
	locks   lock.Dir
	timeout time.Duration

	conn atomic.Pointer[controlConn] // the attached client, or nil

	mu      sync.Mutex
	why     error         // why no client is attached (Down)
	changed chan struct{} // closed and replaced when conn or why changes

	stop     chan struct{}
	stopOnce sync.Once
	stopped  chan struct{}
	started  func(pid int) // tests: a client process has just started
}

// Why a Control is not attached.
var (
	errControlLockHeld = errors.New("another control client of ours is on this server, or still leaving it")
	errOtherControl    = errors.New("the server has a control client already (ours leaving, or another program's such as iTerm2's tmux -CC): two at once can crash tmux before 3.7")
	errNoSession       = errors.New("the server has no session for a control client to attach to")
	errControlClosed   = errors.New("closed")
	errNotYet          = errors.New("not attached yet")
)

// Retries of a Control that is not attached: from controlRetryMin,
// doubling up to controlRetryMax (each asks the server, with a tmux
// process), or up to controlLockRetryMax while the lock is held (a flock
// call; a client whose owner died leaves within milliseconds); at once
// after an attached client left.
const (
	controlRetryMin     = 5 * time.Millisecond
	controlRetryMax     = time.Second
	controlLockRetryMax = 80 * time.Millisecond
)

// StartControl starts keeping a control client attached to server, running
// the tmux binary bin ("" for tmux on $PATH), with its lock in locks (the
// pane locks' directory, lock.ForServer). It returns at once; Exec falls
// back to tmux processes until the client is attached.
func StartControl(server Server, bin string, locks lock.Dir) (*Control, error) {
	path, err := FindBinary(bin)
	if err != nil {
		return nil, err
	}
	c := newControl(server, path, locks)
	go c.supervise()
	return c, nil
}

func newControl(server Server, bin string, locks lock.Dir) *Control {
	return &Control{
		server: server, bin: bin, locks: locks, timeout: DefaultCommandTimeout,
		why: errNotYet, changed: make(chan struct{}),
		stop: make(chan struct{}), stopped: make(chan struct{}),
	}
}

// Server is the server this client attaches to.
func (c *Control) Server() Server { return c.server }

// Attached reports whether a client is attached now.
func (c *Control) Attached() bool { return c.conn.Load() != nil }

// takesPayloads reports whether a client is attached whose server reads
// our files, so that it takes command lists that paste text.
func (c *Control) takesPayloads() bool {
	cn := c.conn.Load()
	return cn != nil && cn.payloads
}

// Down says why no client is attached now; nil when one is.
func (c *Control) Down() error {
	if c.Attached() {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.why
}

// WaitAttached waits until a client is attached or ctx ends (then with
// the reason it is not, Down).
func (c *Control) WaitAttached(ctx context.Context) error {
	for {
		c.mu.Lock()
		changed := c.changed
		c.mu.Unlock()
		if c.Attached() {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("tmux control client on %s: %w (%w)", c.server.Socket, ctx.Err(), c.Down())
		case <-c.stopped:
			return errControlClosed
		}
	}
}

// Close detaches the client cleanly and waits, up to the command timeout,
// until its process has exited; one that has not by then is left to
// finish (never killed), and still holds the lock until it does.
func (c *Control) Close() error {
	c.stopOnce.Do(func() { close(c.stop) })
	t := time.NewTimer(c.timeout)
	defer t.Stop()
	select {
	case <-c.stopped:
		return nil
	case <-t.C:
		return fmt.Errorf("the tmux control client of %s has not left within %s; it is left to finish", c.server.Socket, c.timeout)
	}
}

// note records the state after a change and wakes WaitAttached.
func (c *Control) note(cn *controlConn, why error) {
	c.conn.Store(cn)
	c.mu.Lock()
	c.why = why
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
}

// ControlUnsafeError: the server's tmux release crashes when a control
// client attaches while another client's command makes a notification
// (a session created, a window added): before 3.7, a client that has said
// it is a control client but not yet finished attaching is sent the
// notification, with state it does not have yet (control_write on a NULL
// control_state; 3.7 checks it). Measured with the daemon attaching as
// sessions were made: 1 of 30 runs crashed 3.3a, 3 of 60 3.4 and 3 of 60
// 3.2a, 0 of 60 3.7c. So no control client before 3.7: every command is
// an ordinary tmux process there.
type ControlUnsafeError struct{ Version Version }

func (e *ControlUnsafeError) Error() string {
	return fmt.Sprintf("tmux %s crashes when a control client attaches while other clients work (fixed in 3.7): commands go as tmux processes", e.Version)
}

// supervise attaches a client, and another after it was let go, until
// Close.
func (c *Control) supervise() {
	defer close(c.stopped)
	wait := controlRetryMin
	for {
		attached, err := c.attachOnce()
		c.note(nil, err)
		var unsafe *ControlUnsafeError
		switch {
		case errors.As(err, &unsafe):
			// Not on this release: no client ever, no looks every second.
			<-c.stop
			c.note(nil, errControlClosed)
			return
		case attached:
			wait = controlRetryMin
		case errors.Is(err, errControlLockHeld):
			wait = min(2*wait, controlLockRetryMax)
		default:
			wait = min(2*wait, controlRetryMax)
		}
		t := time.NewTimer(wait)
		select {
		case <-c.stop:
			t.Stop()
			c.note(nil, errControlClosed)
			return
		case <-t.C:
		}
	}
}

// attachOnce starts one client when the rule allows, serves through it
// until it leaves or Close, and returns once its process has exited.
func (c *Control) attachOnce() (attached bool, err error) {
	// No socket, no server: nothing to attach to, and its directory is
	// not ours to make again for a lock (the server was killed and its
	// directory removed, or it is not started yet).
	if _, err := os.Stat(c.server.Socket); err != nil {
		return false, fmt.Errorf("no tmux server: %w", err)
	}
	lockFile, err := c.lock()
	if err != nil {
		return false, err
	}
	session, err := c.readyToAttach()
	if err == nil && c.stopping() {
		err = errControlClosed
	}
	if err != nil {
		lockFile.Close()
		return false, err
	}
	cn, err := c.startClient(session, lockFile)
	if err != nil {
		return false, err
	}
	defer func() {
		<-cn.done
		<-cn.exited // only now is the lock free
	}()
	if err := c.waitAttach(cn); err != nil {
		cn.leave()
		return false, err
	}
	cn.payloads = c.probePayloads(cn)
	c.note(cn, nil)
	select {
	case <-cn.done:
	case <-c.stop:
	}
	c.note(nil, errNotYet) // no new command lists; they go to processes
	cn.leave()
	<-cn.done
	return true, fmt.Errorf("the control client left: %s", cn.leftBecause())
}

func (c *Control) stopping() bool {
	select {
	case <-c.stop:
		return true
	default:
		return false
	}
}

// lockPath is the control lock's file: beside the pane locks, one per
// socket. It is never removed: a removed file would let a second client
// lock a new one while the first still holds the old.
func (c *Control) lockPath() string {
	sum := sha256.Sum256([]byte(c.server.Socket))
	return filepath.Join(c.locks.Path, "control-"+hex.EncodeToString(sum[:8])+".lock")
}

// lock takes the control lock without waiting; errControlLockHeld when
// another holds it.
func (c *Control) lock() (*os.File, error) {
	if err := c.locks.Ensure(); err != nil {
		return nil, fmt.Errorf("lock directory: %w", err)
	}
	f, err := os.OpenFile(c.lockPath(), os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("control lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, errControlLockHeld
		}
		return nil, fmt.Errorf("control lock: %w", err)
	}
	return f, nil
}

// readyToAttach asks the server, with one tmux process, whether a client
// may attach now, and names the session to attach to: the one most
// recently used (the one a bare "tmux attach" picks anyway, so attaching
// does not change that choice), by id.
func (c *Control) readyToAttach() (session string, err error) {
	res := runProc(context.Background(), c.bin, []string{"-S", c.server.Socket,
		"display-message", "-p", "v #{version}", ";",
		"list-clients", "-F", "c #{client_control_mode}", ";",
		"list-sessions", "-F", "s #{session_activity} #{session_id}"}, nil, false, c.timeout, true)
	if res.err != nil {
		return "", res.err
	}
	if res.exitCode != 0 {
		return "", &Error{Command: "list-sessions", Socket: c.server.Socket, Stderr: res.stderr, ExitCode: res.exitCode, Kind: classify(res.stderr)}
	}
	var version Version
	var best int64 = -1
	for line := range strings.SplitSeq(strings.TrimSpace(string(res.stdout)), "\n") {
		kind, rest, _ := strings.Cut(line, " ")
		switch kind {
		case "v":
			version = Version(rest)
		case "c":
			if rest == "1" {
				return "", errOtherControl
			}
		case "s":
			at, id, _ := strings.Cut(rest, " ")
			if n, err := strconv.ParseInt(at, 10, 64); err == nil && n > best && isID(id, '$') {
				best, session = n, id
			}
		}
	}
	if !version.AtLeast(3, 7) {
		return "", &ControlUnsafeError{Version: version}
	}
	if session == "" {
		return "", errNoSession
	}
	return session, nil
}

// startClient starts a client attaching to session, handing it the held
// lock (lockFile is closed here either way), and its drainer.
func (c *Control) startClient(session string, lockFile *os.File) (*controlConn, error) {
	defer lockFile.Close() // the client's copy holds the lock from now on
	var files []*os.File   // ours until the processes have them
	var err error
	pipe := func() (r, w *os.File) {
		if err == nil {
			if r, w, err = os.Pipe(); err == nil {
				files = append(files, r, w)
			}
		}
		return r, w
	}
	inR, inW := pipe()
	outR, outW := pipe()
	drainR, drainW := pipe()
	var stderr *os.File
	if err == nil {
		if stderr, err = memFile("control-err"); err == nil {
			files = append(files, stderr)
		}
	}
	if err != nil {
		closeFiles(files)
		return nil, err
	}
	// The drainer holds the client's output and reads it to its end once
	// our end of its input closes (we died, or read that output to its end
	// ourselves): tmux does not let a control client go while it has
	// output it could not write, so a client whose reader died with output
	// pending would stay attached for ever, holding the lock, and a server
	// told to exit would wait for it for ever (seen on 3.3a).
	drain := exec.Command("/bin/sh", "-c", "read x; exec cat <&3 >/dev/null")
	drain.Stdin = drainR
	drain.ExtraFiles = []*os.File{outR}
	drain.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := drain.Start(); err != nil {
		closeFiles(files)
		return nil, fmt.Errorf("control client's drainer: %w", err)
	}
	go func() { _ = drain.Wait() }()
	drainR.Close()
	// -E: the session's environment is not updated from ours;
	// ignore-size: no influence on any window's size; no-output: no
	// %output of every pane.
	cmd := exec.Command(c.bin, "-S", c.server.Socket, "-C", "attach-session", "-E", "-f", "ignore-size,no-output", "-t", session)
	cmd.Env = environWithout(os.Environ(), "TMUX", "TMUX_PANE")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, stderr
	cmd.ExtraFiles = []*os.File{lockFile}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		for _, f := range []*os.File{inW, outR, drainW, stderr} {
			f.Close()
		}
		return nil, err
	}
	cn := &controlConn{
		pid: cmd.Process.Pid, stdin: inW, stderr: stderr, drainer: drainW,
		attached: make(chan error, 1), done: make(chan struct{}), exited: make(chan struct{}),
	}
	if c.started != nil {
		c.started(cn.pid)
	}
	go func() {
		_ = cmd.Wait()
		close(cn.exited)
	}()
	go cn.read(outR)
	return cn, nil
}

// environWithout is env without the named variables: a client started
// from inside tmux must not be taken for a nested one.
func environWithout(env []string, names ...string) []string {
	var kept []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(names, name) {
			kept = append(kept, kv)
		}
	}
	return kept
}

// waitAttach waits for the client's attach-session to be answered.
func (c *Control) waitAttach(cn *controlConn) error {
	t := time.NewTimer(c.timeout)
	defer t.Stop()
	select {
	case err := <-cn.attached:
		if te := (*Error)(nil); errors.As(err, &te) {
			te.Socket = c.server.Socket
		}
		return err
	case <-t.C:
		return fmt.Errorf("the control client did not attach within %s", c.timeout)
	case <-c.stop:
		return errControlClosed
	}
}

// probePayloads checks that the server reads message text from our
// in-memory files, as /proc/OUR_PID/fd/N (an attached client's files are
// opened by the server itself): the same text must come back. It would
// not where the server sees another /proc (another pid namespace), nor
// where there is none (Darwin: serverPath); lists that carry text then go
// through tmux processes.
func (c *Control) probePayloads(cn *controlConn) bool {
	if !serverOpensOurFiles {
		return false
	}
	text := "agentmsg-probe-" + newNonce()
	buffer := "agentmsg-probe-" + newNonce()
	r, ok := c.runOn(cn, [][]string{
		{"load-buffer", "-b", buffer, payloadArg(0)},
		{"show-buffer", "-b", buffer},
		{"delete-buffer", "-b", buffer},
	}, []string{text}, true)
	return ok && r.err == nil && r.exitCode == 0 && string(r.stdout) == text+"\n"
}

// run runs cmds (payload placeholders standing for payloads) as one
// command list through the attached client. ok is false when nothing was
// sent, or a list that changes nothing got no full answer: the caller
// runs it in a tmux process instead.
func (c *Control) run(cmds [][]string, payloads []string, write bool) (res result, ok bool) {
	cn := c.conn.Load()
	if cn == nil || len(payloads) > 0 && !cn.payloads {
		return result{}, false
	}
	return c.runOn(cn, cmds, payloads, write)
}

func (c *Control) runOn(cn *controlConn, cmds [][]string, payloads []string, write bool) (res result, ok bool) {
	files, paths, err := payloadFiles(payloads)
	if err != nil {
		return result{}, false
	}
	req, err := cn.send(controlLine(cmds, func(i int) string { return paths[i] }), files, c.timeout)
	if err != nil {
		closeFiles(files)
		return result{}, false
	}
	t := time.NewTimer(c.timeout)
	defer t.Stop()
	select {
	case r := <-req.done:
		if req.lost && !write {
			return result{}, false
		}
		return r, true
	case <-t.C:
		// A client that does not answer in time is let go (a new one
		// attaches); its answer, if it comes, is dropped.
		cn.leave()
		return result{exitCode: -1, err: errAbandoned}, true
	}
}

// errNoServerPath: the server cannot open our files here (serverPath).
var errNoServerPath = errors.New("the tmux server cannot open this process's files on this system")

// payloadFiles writes each payload whole into an in-memory file, named as
// the server can open it.
func payloadFiles(payloads []string) (files []*os.File, paths []string, err error) {
	for _, p := range payloads {
		f, err := memFile("paste")
		if err == nil {
			_, err = f.WriteString(p)
		}
		if err != nil {
			closeFiles(append(files, f))
			return nil, nil, err
		}
		files = append(files, f)
		path, ok := serverPath(f)
		if !ok {
			closeFiles(files)
			return nil, nil, errNoServerPath
		}
		paths = append(paths, path)
	}
	return files, paths, nil
}

func closeFiles(files []*os.File) {
	for _, f := range files {
		if f != nil {
			f.Close()
		}
	}
}
