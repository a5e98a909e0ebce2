package serve

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/agentmsg/agentmsg/app"
	"github.com/agentmsg/agentmsg/wire"
)

// A client's agentmsg forwards its command line here when a daemon runs
// (unless --direct): the command runs in the daemon, the same code over
// the daemon's shared tmux clients, and only its stdin, stdout, stderr and
// exit code cross the socket. So its output and exit code are what they
// would have been, and it is fast: no tmux process per call.

// errInterrupted is what a client's Ctrl-C becomes in its forwarded run:
// the command stops as it would on the signal.
var errInterrupted = errors.New("interrupted (the client was)")

// run is one command line running for a client.
type run struct {
	cancel context.CancelCauseFunc
	stdin  *askedStdin
}

// runs are the command lines running now, by id.
type runs struct {
	mu sync.Mutex
	m  map[string]*run
}

func (d *Daemon) cli(w http.ResponseWriter, r *http.Request) {
	if d.opts.RunCLI == nil {
		fail(w, http.StatusNotImplemented, errors.New("this daemon runs no command lines"))
		return
	}
	var req wire.CLIRequest
	if !decode(w, r, &req) {
		return
	}
	env := map[string]string{}
	for _, kv := range req.Env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	// The command must not forward itself back here.
	env["AGENTMSG_DIRECT"] = "1"
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	out := &frames{w: w, rc: http.NewResponseController(w)}
	rn := &run{cancel: cancel, stdin: &askedStdin{ask: func() { out.write(wire.CLIFrame{Stdin: true}) }, given: make(chan io.Reader, 1), done: make(chan struct{})}}
	id := d.runs.add(rn)
	defer d.runs.remove(id)
	defer rn.stdin.finish()

	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	out.write(wire.CLIFrame{Run: id})
	code := d.opts.RunCLI(ctx, app.Run{
		Args:      req.Args,
		LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
		Stdin:     rn.stdin.reader(ctx),
		Stdout:    out.stream(false),
		Stderr:    out.stream(true),
		InTTY:     req.InTTY,
		ErrTTY:    req.ErrTTY,
		Tmux:      d.backend.client,
		Hosts:     d.backend.remote(),
	})
	out.write(wire.CLIFrame{Exit: &code})
}

// interrupt is POST /v1/cli/{run}/interrupt: the client's Ctrl-C.
func (d *Daemon) interrupt(w http.ResponseWriter, r *http.Request) {
	rn, ok := d.runs.get(r.PathValue("run"))
	if !ok {
		fail(w, http.StatusNotFound, errors.New("no such run (it has ended)"))
		return
	}
	rn.cancel(errInterrupted)
	respond(w, wire.ExitOK, struct {
		ExitCode int `json:"exit_code"`
	}{wire.ExitOK})
}

// stdin is POST /v1/cli/{run}/stdin: the client's stdin, which the run
// asked for; it returns once the command has read all of it or ended.
func (d *Daemon) stdin(w http.ResponseWriter, r *http.Request) {
	rn, ok := d.runs.get(r.PathValue("run"))
	if !ok {
		fail(w, http.StatusNotFound, errors.New("no such run (it has ended)"))
		return
	}
	if !rn.stdin.give(r.Body) {
		fail(w, http.StatusConflict, errors.New("this run's stdin was given already"))
		return
	}
	select {
	case <-rn.stdin.done:
	case <-r.Context().Done():
	}
	respond(w, wire.ExitOK, struct {
		ExitCode int `json:"exit_code"`
	}{wire.ExitOK})
}

// askedStdin is a run's stdin: asked of the client on the command's first
// read, so that a command that reads none never waits for it, and a
// client whose stdin stays open is never read past what the command needs.
type askedStdin struct {
	ask   func()
	once  sync.Once
	given chan io.Reader
	gave  sync.Once
	done  chan struct{} // closed when the run ends
	end   sync.Once
}

func (s *askedStdin) give(r io.Reader) (ok bool) {
	s.gave.Do(func() { s.given <- r; ok = true })
	return ok
}

func (s *askedStdin) finish() { s.end.Do(func() { close(s.done) }) }

// reader is the command's stdin.
func (s *askedStdin) reader(ctx context.Context) io.Reader {
	var from io.Reader
	return readerFunc(func(p []byte) (int, error) {
		if from == nil {
			s.once.Do(s.ask)
			select {
			case from = <-s.given:
			case <-ctx.Done():
				return 0, fmt.Errorf("reading stdin: %w", context.Cause(ctx))
			}
		}
		n, err := from.Read(p)
		if err == io.EOF {
			s.finish()
		}
		return n, err
	})
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

func (r *runs) add(rn *run) string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	id := hex.EncodeToString(b)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]*run{}
	}
	r.m[id] = rn
	return id
}

func (r *runs) remove(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, id)
}

func (r *runs) get(id string) (*run, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rn, ok := r.m[id]
	return rn, ok
}

// frames writes a run's answer, one JSON line per frame, each flushed.
type frames struct {
	mu sync.Mutex
	w  http.ResponseWriter
	rc *http.ResponseController
}

func (f *frames) write(fr wire.CLIFrame) {
	line, _ := json.Marshal(fr)
	f.mu.Lock()
	defer f.mu.Unlock()
	_, _ = f.w.Write(append(line, '\n'))
	_ = f.rc.Flush()
}

// stream is an io.Writer whose writes become stdout (or stderr) frames.
func (f *frames) stream(stderr bool) *frameWriter { return &frameWriter{f: f, stderr: stderr} }

type frameWriter struct {
	f      *frames
	stderr bool
}

func (fw *frameWriter) Write(p []byte) (int, error) {
	b := append([]byte(nil), p...)
	if fw.stderr {
		fw.f.write(wire.CLIFrame{Stderr: b})
	} else {
		fw.f.write(wire.CLIFrame{Stdout: b})
	}
	return len(p), nil
}
