// Package serve is agentmsg's daemon: one long-lived process per user that
// serves every operation over HTTP and JSON on a Unix socket (the way
// Docker's engine serves desktop apps), follows every message and agent as
// a resumable stream of events, and runs the CLI's commands for clients
// that forward them, all over one shared client per tmux server (fast
// through one control-mode client; see tmux.Control).
//
// It is a front end like the CLI and the MCP server: it only translates
// between HTTP and package service, with package wire's documents. It
// holds no truth of its own: the mailbox on disk is the record, and the
// daemon can be killed at any moment and started again.
package serve

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentmsg/agentmsg/app"
	"github.com/agentmsg/agentmsg/eventlog"
	"github.com/agentmsg/agentmsg/identity"
	"github.com/agentmsg/agentmsg/internal/safedir"
	"github.com/agentmsg/agentmsg/internal/safesock"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/relay"
	"github.com/agentmsg/agentmsg/service"
)

// Options configure a daemon.
type Options struct {
	// Socket is the Unix socket it listens on; "" is DefaultSocket.
	Socket string
	// TCP, when set, also listens on this address (loopback unless
	// AllowRemote), for requests that carry TokenFile's token.
	TCP         string
	TokenFile   string
	AllowRemote bool
	// Direct: no control client; every tmux command is a process.
	Direct bool
	// Version is agentmsg's, reported to clients (GET /v1/version), with
	// the commit and the date it was built from, when known.
	Version, Commit, Date string
	// RunCLI runs a client's command line in the daemon (main hands in the
	// CLI's runner: no front end imports another).
	RunCLI app.Runner
	// MCP builds a caller's MCP server, for /mcp.
	MCP MCPServer
	// Ready, when set, hears that the daemon listens, and where.
	Ready func(Listening)
}

// Listening is where a daemon listens: its Unix socket, and its TCP
// address when it has one (with the port it got, for a port 0).
type Listening struct {
	Socket, TCP string
}

// DefaultSocket is where the daemon of the mailbox at root listens.
func DefaultSocket(root string) string { return app.DaemonSocket(root) }

// lockName is the file whose flock makes a daemon the one of its user.
const lockName = "serve.lock"

// ErrRunning: a daemon already serves this user.
var ErrRunning = errors.New("agentmsg serve is already running")

// Daemon is a running daemon.
type Daemon struct {
	opts    Options
	env     app.Env
	backend *backend
	hub     *hub
	runs    runs
	mcps    mcpHandlers
	// passes are the deliver passes the daemon runs by itself now, each
	// true when asked for again while it runs.
	passMu sync.Mutex
	passes map[string]bool
	// looked: the agents' states at the watcher's last look.
	looked agentStates
	log    *eventlog.Log
	links  *relay.Relay
	ctx    context.Context
	pid    int
	token  []byte
}

// Run serves until ctx ends; then it stops listening, lets requests in
// flight end (up to a few seconds), detaches its control clients cleanly
// and returns.
func Run(ctx context.Context, env app.Env, opts Options) error {
	store := mailbox.Default(env.LookupEnv)
	root := store.Root
	if err := store.EnsureRoot(); err != nil {
		return err
	}
	release, err := holdLock(root, opts.socket(root))
	if err != nil {
		return err
	}
	defer release()
	stopProfile, err := profile(env.LookupEnv)
	defer func() { _ = stopProfile() }()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	d := &Daemon{opts: opts, env: env, backend: newBackend(env, opts.Version, !opts.Direct),
		log: env.Events(root), ctx: ctx, pid: os.Getpid(), passes: map[string]bool{},
		mcps: mcpHandlers{tokens: &identity.Tokens{Path: identity.DefaultPath(root)}, by: map[string]*mcpHandler{}}}
	defer d.backend.close()
	// Its own server first: the one its configuration names.
	if server, err := d.backend.env.Server(); err == nil {
		_, _ = d.backend.env.Client(server)
	}
	links, err := relay.Open(ctx, relay.Options{
		Config: d.backend.env.Config.Hosts, ReadyTimeout: d.backend.env.Config.Settings.ReadyTimeout, Root: root,
		Service: func() (*service.Service, error) { return d.backend.service(Caller{}) },
		Deliver: d.deliverSoon, Looked: d.looked.get, Events: d.log, Logf: d.logf,
	})
	if err != nil {
		return fmt.Errorf("this host's link to others ([hosts]): %w", err)
	}
	defer links.Close()
	d.links = links
	d.backend.mu.Lock()
	d.backend.hosts = links
	d.backend.mu.Unlock()
	d.hub = newHub(d.log)
	go d.hub.follow(ctx)
	go d.watchAgents(ctx)
	go d.mcps.dropRevoked(ctx)

	mux := http.NewServeMux()
	d.routes(mux)
	// Timeouts: a connection that says nothing, or idles after its
	// answer, is closed (see gate.go for what else bounds TCP). No write
	// or whole-read timeout: a send may rightly wait minutes for its
	// agent, and the event stream and a command's output flow for hours.
	srv := &http.Server{Handler: d.authorize(mux), ReadHeaderTimeout: readHeaderTimeout, IdleTimeout: idleTimeout,
		BaseContext: func(net.Listener) context.Context { return ctx }, ConnContext: withConn}
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	sock := opts.socket(root)
	ul, err := safesock.Listen(sock)
	if err != nil {
		return err
	}
	listeners = append(listeners, ul)
	if opts.TCP != "" {
		tl, err := d.listenTCP()
		if err != nil {
			return err
		}
		listeners = append(listeners, tl)
	}
	errs := make(chan error, len(listeners))
	for _, l := range listeners {
		go func() { errs <- srv.Serve(l) }()
	}
	if opts.Ready != nil {
		at := Listening{Socket: sock}
		if len(listeners) > 1 {
			at.TCP = listeners[1].Addr().String()
		}
		opts.Ready(at)
	}
	select {
	case <-ctx.Done():
	case err = <-errs:
	case err = <-rootGone(ctx, root, rootLook):
	}
	shut, done := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer done()
	_ = srv.Shutdown(shut)
	os.Remove(sock)
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// rootLook is how often the daemon looks whether its mailbox is still
// there.
const rootLook = time.Second

// rootGone says, once, when the mailbox at root was removed or replaced
// (mailbox.ErrMailboxGone): the daemon's socket and lock went with it, so
// no client finds it any more, and every record it made would fail. It
// ends then, saying so, rather than serve nobody; started again, it
// serves the new one.
func rootGone(ctx context.Context, root string, every time.Duration) <-chan error {
	gone := make(chan error, 1)
	was, err := os.Stat(root)
	if err != nil {
		gone <- fmt.Errorf("%w: %s: %w", mailbox.ErrMailboxGone, root, err)
		return gone
	}
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if now, err := os.Stat(root); err != nil || !os.SameFile(was, now) {
				gone <- fmt.Errorf("%w: %s was removed while the daemon served it; the daemon ends (start it again to serve a new one)", mailbox.ErrMailboxGone, root)
				return
			}
		}
	}()
	return gone
}

func (o Options) socket(root string) string {
	if o.Socket != "" {
		return o.Socket
	}
	return DefaultSocket(root)
}

// holder is what a daemon writes into its lock file.
type holder struct {
	PID    int       `json:"pid"`
	Socket string    `json:"socket"`
	Since  time.Time `json:"since"`
}

// holdLock makes this the user's one daemon, for as long as it lives (the
// kernel lets the flock go when it dies, however it dies). A second one
// is refused, naming the first.
func holdLock(root, socket string) (release func(), err error) {
	path := filepath.Join(root, lockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		defer f.Close()
		var h holder
		b := make([]byte, 4096)
		n, _ := f.ReadAt(b, 0)
		if json.Unmarshal(b[:n], &h) == nil && h.PID > 0 {
			return nil, fmt.Errorf("%w: pid %d, listening on %s since %s", ErrRunning, h.PID, h.Socket, h.Since.Local().Format(time.DateTime))
		}
		return nil, fmt.Errorf("%w (%s is locked)", ErrRunning, path)
	}
	data, _ := json.Marshal(holder{PID: os.Getpid(), Socket: socket, Since: time.Now().UTC()})
	if f.Truncate(0) == nil {
		_, _ = f.WriteAt(data, 0)
	}
	return func() { f.Close() }, nil
}

// Running reports the daemon that serves the mailbox at root, if one does.
func Running(root string) (pid int, socket string, ok bool) {
	path := filepath.Join(root, lockName)
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, "", false
	}
	defer f.Close()
	if unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB) == nil {
		return 0, "", false // nobody holds it
	}
	var h holder
	b := make([]byte, 4096)
	n, _ := f.ReadAt(b, 0)
	if json.Unmarshal(b[:n], &h) != nil {
		return 0, "", false
	}
	return h.PID, h.Socket, true
}

// listenTCP listens on opts.TCP, loopback only unless AllowRemote, and
// reads (or makes) the token every request there must carry.
func (d *Daemon) listenTCP() (net.Listener, error) {
	host, _, err := net.SplitHostPort(d.opts.TCP)
	if err != nil {
		return nil, fmt.Errorf("--tcp %q: %w", d.opts.TCP, err)
	}
	ip := net.ParseIP(host)
	loopback := host == "localhost" || (ip != nil && ip.IsLoopback())
	if !loopback && !d.opts.AllowRemote {
		return nil, fmt.Errorf("--tcp %q is not a loopback address: anyone who can reach it could type into your agents with the token; give --allow-remote to mean it", d.opts.TCP)
	}
	if d.opts.TokenFile == "" {
		return nil, errors.New("--tcp needs --token-file: requests over TCP must carry its token")
	}
	if d.token, err = readToken(d.opts.TokenFile); err != nil {
		return nil, err
	}
	if !loopback && d.env.Log != nil {
		d.env.Log.Warn("LISTENING BEYOND THIS MACHINE: anyone who reaches " + d.opts.TCP + " with the token can type into your agents")
	}
	l, err := net.Listen("tcp", d.opts.TCP)
	if err != nil {
		return nil, err
	}
	return newTCPGate(l), nil
}

// How long a connection may take to send a request's headers, and stay
// open with nothing to do after an answer.
const (
	readHeaderTimeout = 5 * time.Second
	idleTimeout       = time.Minute
)

// readToken reads the bearer token from path, a file that is this user's
// and only this user may read, in a directory no one else may write to
// (where another user could have put a file of theirs, whose token they
// know, or a link to one they can read); it makes one (32 random bytes,
// hex) when there is none, never through a link.
func readToken(path string) ([]byte, error) {
	if err := safedir.CheckFollow(filepath.Dir(path)); err != nil {
		return nil, fmt.Errorf("token file %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return makeToken(path)
	}
	if err != nil {
		return nil, fmt.Errorf("token file %s: %w (a symbolic link is refused)", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return nil, fmt.Errorf("token file %s belongs to uid %d, not to you: another user may know its token; remove it", path, st.Uid)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("token file %s is readable by others (mode %o): chmod 600 it", path, fi.Mode().Perm())
	}
	b, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return nil, err
	}
	tok := []byte(strings.TrimSpace(string(b)))
	if len(tok) < 16 {
		return nil, fmt.Errorf("token file %s holds no token of at least 16 characters", path)
	}
	return tok, nil
}

// makeToken writes a new token to path, which must not exist yet.
func makeToken(path string) ([]byte, error) {
	buf := make([]byte, 32)
	if _, err := rand.Read(buf); err != nil {
		return nil, err
	}
	tok := []byte(hex.EncodeToString(buf))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("token file %s: %w", path, err)
	}
	if _, err := f.Write(append(tok, '\n')); err != nil {
		f.Close()
		return nil, err
	}
	return tok, f.Close()
}

// authorize lets a Unix-socket request through (its peer was checked on
// accept) and a TCP request only with the bearer token.
func (d *Daemon) authorize(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// /mcp: each agent's own token says who it is (Daemon.mcp).
		if _, tcp := r.Context().Value(http.LocalAddrContextKey).(*net.TCPAddr); tcp && !isMCP(r) {
			got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok || len(d.token) == 0 || subtle.ConstantTimeCompare([]byte(got), d.token) != 1 {
				unauthorized(w, "a request over TCP needs the token of --token-file: Authorization: Bearer TOKEN")
				return
			}
			tokenShown(r.Context())
		}
		next.ServeHTTP(w, r)
	})
}

// unauthorized answers 401 and closes the connection: one that could not
// show a token is not kept open for another try.
func unauthorized(w http.ResponseWriter, why string) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="agentmsg"`)
	w.Header().Set("Connection", "close")
	fail(w, http.StatusUnauthorized, errors.New(why))
}

// isMCP reports whether r is for the MCP endpoint.
func isMCP(r *http.Request) bool {
	return r.URL.Path == "/mcp" || strings.HasPrefix(r.URL.Path, "/mcp/")
}

// logf reports what goes wrong in the background (the link to other hosts).
func (d *Daemon) logf(format string, args ...any) {
	if d.env.Log != nil {
		d.env.Log.Warnf(format, args...)
	}
}
