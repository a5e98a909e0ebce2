package tmux

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// A tmux client process is started so that nothing agentmsg does, and
// nothing done to agentmsg, can end it half way:
//
//   - it runs in a process group of its own, so a Ctrl-C or a signal sent
//     to agentmsg's group never reaches it;
//   - it is never killed: a command that takes too long is abandoned (we
//     stop waiting and reap it later), not signalled;
//   - its stdout and stderr are anonymous in-memory files, never pipes, so
//     agentmsg dying cannot make it die of SIGPIPE;
//   - data it reads (message text) is written whole into anonymous files
//     before it starts, so agentmsg dying cannot cut a message short, and
//     no file of message text stays behind.
//
// Why: every tmux before 3.7 segfaults, taking every session with it, when
// a client dies before the server has finished taking it in (see doc.go
// for the figures).

// result is what one tmux process did.
type result struct {
	stdout   []byte
	stderr   string
	exitCode int   // -1 when it did not exit (abandoned) or never ran
	err      error // start failure or abandonment; nil when it exited
	// blocks: through a control client, the output of each command that
	// ran and did not fail, in order (stdout is all of them together).
	blocks [][]byte
}

// errAbandoned: the process did not answer in time and was left to finish.
var errAbandoned = errors.New("no answer in time")

// runProc runs bin with args. payloads become the files at fd 3, 4, ...
// (readable as /dev/fd/N by the tmux client), or with onStdin the one
// payload is its standard input. It waits at most timeout, or
// until ctx ends when waitOut is false; a write (waitOut true) is waited
// for up to timeout even after ctx ends, so its caller learns the truth.
func runProc(ctx context.Context, bin string, args []string, payloads []string, onStdin bool, timeout time.Duration, waitOut bool) result {
	var files []*os.File
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	stdout, err := memFile("out")
	if err != nil {
		return result{exitCode: -1, err: err}
	}
	files = append(files, stdout)
	stderr, err := memFile("err")
	if err != nil {
		closeAll()
		return result{exitCode: -1, err: err}
	}
	files = append(files, stderr)
	extra := make([]*os.File, 0, len(payloads))
	for _, p := range payloads {
		f, err := memFile("paste")
		if err == nil {
			files = append(files, f)
			_, err = io.WriteString(f, p)
		}
		if err == nil {
			_, err = f.Seek(0, io.SeekStart)
		}
		if err != nil {
			closeAll()
			return result{exitCode: -1, err: fmt.Errorf("message file: %w", err)}
		}
		extra = append(extra, f)
	}

	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr, cmd.ExtraFiles = stdout, stderr, extra
	if onStdin && len(extra) == 1 {
		cmd.Stdin, cmd.ExtraFiles = extra[0], nil
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		closeAll()
		return result{exitCode: -1, err: err}
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var stop <-chan struct{}
	if !waitOut {
		stop = ctx.Done()
	}
	var werr error
	select {
	case werr = <-exited:
	case <-timer.C:
		go func() { <-exited; closeAll() }()
		return result{exitCode: -1, err: errAbandoned}
	case <-stop:
		go func() { <-exited; closeAll() }()
		return result{exitCode: -1, err: ctx.Err()}
	}
	defer closeAll()
	res := result{stdout: readAll(stdout), stderr: string(readAll(stderr))}
	var exitErr *exec.ExitError
	switch {
	case werr == nil:
	case errors.As(werr, &exitErr):
		res.exitCode = exitErr.ExitCode()
	default:
		res.exitCode, res.err = -1, werr
	}
	return res
}

func readAll(f *os.File) []byte {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil
	}
	b, _ := io.ReadAll(f)
	return b
}

// tempFile is a file for a tmux process's output or a paste where there
// is no memfd: one without a name where the system has them (anonFile),
// else one unlinked the moment it is made and written only after, so that
// it never holds text under a name; a kill in that moment leaves it, empty.
func tempFile(name string) (*os.File, error) {
	if f, err := anonFile(); err == nil {
		return f, nil
	}
	f, err := os.CreateTemp("", "agentmsg-"+name+"-*")
	if err != nil {
		return nil, err
	}
	// Unlinked at once: the file lives only as long as its descriptors.
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// abandonedMessage words an abandoned call for an error.
func abandonedMessage(timeout time.Duration, write bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "no answer within %s", timeout)
	if write {
		b.WriteString("; it may still happen (a tmux client is never killed half way: that can crash tmux before 3.7)")
	}
	return b.String()
}
