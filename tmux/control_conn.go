package tmux

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// controlConn is one running control client process: what we write to it,
// what it answers, and when it is gone.
type controlConn struct {
	pid     int
	stdin   *os.File // closing it is how we leave (a clean detach)
	stderr  *os.File
	drainer *os.File // closing it lets the drainer read what is left
	// payloads: the server reads our in-memory files at /proc/PID/fd/N
	// (probed once attached; set before the connection is published;
	// never on Darwin, see serverPath).
	payloads bool

	attached chan error    // the answer to its attach-session (once)
	done     chan struct{} // closed when its output ended: the server let it go
	exited   chan struct{} // closed when its process has exited (the lock is free)
	leaving  sync.Once

	wmu sync.Mutex // one request written at a time, in the order of pending

	mu      sync.Mutex
	pending []*controlReq // written, not yet answered, oldest first
	gone    bool          // takes no more requests
	exitWhy string        // what it said as it left (%exit REASON)
}

// controlReq is one command list sent, and its answer as it comes.
type controlReq struct {
	end    string // the output of the line sent after it: its answer is complete
	files  []*os.File
	out    []byte
	blocks [][]byte // each command's output
	stderr string
	failed bool
	lost   bool // the client left (or garbled) before the answer was complete
	done   chan result
}

// finish answers req and lets its files go. c.mu is held.
func (req *controlReq) finish(r result) {
	for _, f := range req.files {
		f.Close()
	}
	req.files = nil
	req.done <- r
}

// errNotAttached: no control client is attached; nothing was sent.
var errNotAttached = errors.New("no control client attached")

// send writes cmdLine and, on a line of its own, the command whose answer
// marks the end of cmdLine's answer: tmux stops a command list at its
// first failing command, and a line of its own still runs.
func (cn *controlConn) send(cmdLine string, files []*os.File, timeout time.Duration) (*controlReq, error) {
	req := &controlReq{end: "agentmsg-ctl-" + newNonce(), files: files, done: make(chan result, 1)}
	cn.wmu.Lock()
	defer cn.wmu.Unlock()
	cn.mu.Lock()
	if cn.gone {
		cn.mu.Unlock()
		return nil, errNotAttached
	}
	cn.pending = append(cn.pending, req)
	cn.mu.Unlock()
	_ = cn.stdin.SetWriteDeadline(time.Now().Add(timeout))
	if _, err := io.WriteString(cn.stdin, cmdLine+"\ndisplay-message -p "+req.end+"\n"); err != nil {
		// A line cut short, or a client not reading: leave. The request
		// is answered as lost when the output ends.
		cn.leave()
	}
	return req, nil
}

// leave detaches the client cleanly: it reads the end of its input, and
// the server lets it go. Never a signal (see doc.go).
func (cn *controlConn) leave() {
	cn.leaving.Do(func() {
		cn.mu.Lock()
		cn.gone = true
		cn.mu.Unlock()
		cn.stdin.Close()
	})
}

// read reads the client's output to its end, answering requests as their
// answers complete.
func (cn *controlConn) read(out *os.File) {
	defer out.Close()
	defer cn.drainer.Close() // nothing is left: the drainer ends at once
	br := bufio.NewReaderSize(out, 64<<10)
	var p controlParser
	attaching := true
	var broke error
	for {
		s, err := br.ReadString('\n')
		if err != nil {
			break
		}
		if broke != nil {
			continue // drained, not trusted
		}
		b, why, left, err := p.line(strings.TrimSuffix(s, "\n"))
		switch {
		case err != nil:
			broke = err
		case left:
			cn.mu.Lock()
			cn.exitWhy = why
			cn.mu.Unlock()
		case b == nil:
		case !b.ours:
			// Its own attach-session's answer comes first; later ones
			// are hooks' and other clients' business.
			if attaching {
				attaching = false
				cn.attached <- attachResult(b)
			}
		default:
			broke = cn.answer(b)
		}
		if broke != nil {
			cn.fail(broke)
			cn.leave()
		}
	}
	if attaching {
		cn.attached <- fmt.Errorf("the control client left before it attached: %s", cn.leftBecause())
	}
	cn.fail(nil)
	close(cn.done)
}

// attachResult is the client's attach-session's answer.
func attachResult(b *controlBlock) error {
	if !b.failed {
		return nil
	}
	msg := strings.Join(b.lines, "\n")
	return &Error{Command: "attach-session", Stderr: msg, ExitCode: 1, Kind: classify(msg)}
}

// answer adds block b to the answer of the oldest request.
func (cn *controlConn) answer(b *controlBlock) error {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if len(cn.pending) == 0 {
		return errGarbled
	}
	req := cn.pending[0]
	if !b.failed && len(b.lines) == 1 && b.lines[0] == req.end {
		cn.pending = cn.pending[1:]
		r := result{stdout: req.out, stderr: req.stderr, blocks: req.blocks}
		if req.failed {
			r.exitCode = 1 // what a tmux process exits with
		}
		req.finish(r)
		return nil
	}
	if req.failed {
		// Nothing of a list runs after its failing command: only its end.
		return errGarbled
	}
	if b.failed {
		req.failed = true
		req.stderr = strings.Join(b.lines, "\n") + "\n"
		return nil
	}
	var out []byte
	for _, l := range b.lines {
		out = append(append(out, l...), '\n')
	}
	req.out = append(req.out, out...)
	req.blocks = append(req.blocks, out)
	return nil
}

// fail answers every pending request as lost: the client left, or its
// output can no longer be trusted (why). It takes no more requests.
func (cn *controlConn) fail(why error) {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	cn.gone = true
	msg := "the tmux control client left before tmux answered (" + cn.leftBecauseLocked() + "); the commands may have run"
	if why != nil {
		msg = why.Error() + "; the commands may have run"
	}
	for _, req := range cn.pending {
		req.lost = true
		req.finish(result{exitCode: -1, err: errors.New(msg)})
	}
	cn.pending = nil
}

// leftBecause is what the client said as it left, else its stderr.
func (cn *controlConn) leftBecause() string {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	return cn.leftBecauseLocked()
}

func (cn *controlConn) leftBecauseLocked() string {
	if cn.exitWhy != "" {
		return cn.exitWhy
	}
	select {
	case <-cn.exited:
		if msg := strings.TrimSpace(string(readAll(cn.stderr))); msg != "" {
			return msg
		}
	default:
	}
	return "no reason given"
}
