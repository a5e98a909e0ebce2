package chaos

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/agentmsg/agentmsg/e2e/harness"
)

// The daemon of a round that has one (worldSpec.daemon): agentmsg serve in
// the world's environment, so that every command the round runs, the
// stand-ins' hooks included, goes through it while it answers, and runs
// on its own while it does not (a daemon killed a moment ago). A crash
// step SIGKILLs it while it runs a broadcast and starts it again.

// daemon is the world's agentmsg serve, while it runs.
type daemon struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once it has exited
}

// daemonSocket is where the world's daemon listens: <mailbox root>/serve.sock.
func (w *world) daemonSocket() string {
	root := filepath.Join(w.home, "state", "agentmsg")
	if w.mailbox != "" {
		root = w.mailbox
	}
	return filepath.Join(root, "serve.sock")
}

// startDaemon starts agentmsg serve and waits until it answers. One that
// cannot start (a full disk for its socket) is no error of the round: the
// senders then run on their own.
func (w *world) startDaemon() error {
	log, err := os.OpenFile(filepath.Join(w.home, "logs", "daemon.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer log.Close()
	cmd := exec.Command(w.bins.Agentmsg, "-S", w.servers[0].Socket, "serve")
	cmd.Env = w.env
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return err
	}
	d := &daemon{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(d.done) }()
	deadline := time.Now().Add(harness.StartTimeout)
	for time.Now().Before(deadline) {
		select {
		case <-d.done:
			return fmt.Errorf("agentmsg serve exited as it started: %s", w.daemonLog())
		default:
		}
		if c, err := net.Dial("unix", w.daemonSocket()); err == nil {
			c.Close()
			w.daemon = d
			return nil
		}
		time.Sleep(5 * time.Millisecond)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL) // our own child, by its pid
	<-d.done
	return fmt.Errorf("agentmsg serve did not answer within %s: %s", harness.StartTimeout, w.daemonLog())
}

// daemonLog is the end of the daemon's log, for a report.
func (w *world) daemonLog() string {
	b, _ := os.ReadFile(filepath.Join(w.home, "logs", "daemon.log"))
	return clipText(string(b))
}

// killDaemon SIGKILLs the daemon (our own child, by its pid) and waits for
// it. It reports whether it was still running: one that exited by itself
// crashed, unless it never started.
func (w *world) killDaemon() (running bool) {
	d := w.daemon
	if d == nil {
		return false
	}
	w.daemon = nil
	select {
	case <-d.done:
		return false
	default:
	}
	_ = d.cmd.Process.Signal(syscall.SIGKILL)
	<-d.done
	return true
}

// stopDaemon stops the daemon cleanly (SIGTERM), SIGKILL after 10 s.
func (w *world) stopDaemon() error {
	d := w.daemon
	if d == nil {
		return nil
	}
	w.daemon = nil
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
		return nil
	case <-time.After(10 * time.Second):
		_ = d.cmd.Process.Signal(syscall.SIGKILL)
		<-d.done
		return fmt.Errorf("agentmsg serve did not stop within 10 s of SIGTERM")
	}
}

// daemonCrashed reports a daemon that exited by itself: nothing but a
// SIGKILL or SIGTERM of the round's own may end it.
func (r *round) daemonCrashed() {
	d := r.w.daemon
	if d == nil {
		return
	}
	select {
	case <-d.done:
		r.w.daemon = nil
		r.problem("daemon-exited", "agentmsg serve", "it exited by itself: "+r.w.daemonLog())
	default:
	}
}

// crash runs a broadcast through the daemon and SIGKILLs the daemon after
// st.delay, then starts it again, as a person or a service manager would.
// A CLI sender then reports no verdict (its daemon went away); an app that
// chose the message's id asks again with it once the daemon is back, and
// must be answered for every copy, never refused.
func (r *round) crash(st step) error {
	r.daemonCrashed()
	if r.w.daemon == nil {
		if err := r.w.startDaemon(); err != nil {
			r.note("  the daemon could not start: %v", err)
		}
	}
	srv, m := r.w.servers[st.server], st.msgs[0]
	var wait func()
	if st.api {
		wait = r.apiBroadcast(srv, st.team, m)
	} else {
		o := r.broadcast(srv, st.team, m, true)
		wait = func() { <-o.done }
	}
	time.Sleep(st.delay)
	r.mu.Lock()
	for _, o := range r.ops {
		if o.running() {
			// Its daemon may be the one killed: no JSON is owed.
			o.signals = append(o.signals, "daemon KILL")
		}
	}
	r.mu.Unlock()
	if r.w.killDaemon() {
		r.note("  SIGKILL to agentmsg serve")
		r.mu.Lock()
		r.kills++
		r.mu.Unlock()
	}
	wait()
	if err := r.w.startDaemon(); err != nil {
		r.note("  the daemon could not start again: %v", err)
	}
	if st.api {
		r.apiRetry()
	}
	return nil
}

// apiCall is one broadcast an app made through the API, its answer not
// yet known.
type apiCall struct {
	msg    *Message
	body   string
	copies map[string]*Copy
	srv    *server
	team   string
}

// apiBroadcast starts a broadcast by an app through the API with the id it
// chose, and returns what waits for its answer (none, when the daemon is
// killed first).
func (r *round) apiBroadcast(srv *server, team string, m msgSpec) (wait func()) {
	msg, copies := r.broadcastMessage(srv, team, m, "api broadcast", true)
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	msg.ID = "MSG_LEAD_" + hex.EncodeToString(b)
	body := map[string]any{"team": team, "text": m.text, "from": "lead", "id": msg.ID, "socket": socket(srv, m.alias)}
	for i := 0; i < len(m.flags); i++ {
		switch m.flags[i] {
		case "--ready-timeout":
			i++
			body["ready_timeout"] = m.flags[i]
		case "--no-queue":
			body["no_queue"] = true
		case "--while-busy":
			body["while_busy"] = true
		case "--agent":
			i++
			body["profile"] = m.flags[i]
		}
	}
	data, _ := json.Marshal(body)
	call := &apiCall{msg: msg, body: string(data), copies: copies, srv: srv, team: team}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if st, out, err := r.w.api("POST", "/v1/broadcast", call.body); err == nil && st == http.StatusOK {
			r.apiVerdicts(call, out)
			return
		}
		r.mu.Lock()
		r.lost = append(r.lost, call)
		r.mu.Unlock()
	}()
	return func() { <-done }
}

// apiRetry asks again for each broadcast whose app got no answer, with the
// same id and body: it must be answered (200) for every copy.
func (r *round) apiRetry() {
	r.mu.Lock()
	lost := r.lost
	r.lost = nil
	r.mu.Unlock()
	for _, call := range lost {
		st, out, err := r.w.api("POST", "/v1/broadcast", call.body)
		switch {
		case err != nil:
			r.note("  retry of %s: the daemon did not answer: %v", call.msg.ID, err)
		case st != http.StatusOK:
			r.problem(ruleRetryRefused, call.srv.name+"/"+call.team, fmt.Sprintf("%s asked again with the same id and text: HTTP %d: %s", call.msg.ID, st, clipText(string(out))))
		default:
			r.note("  retry of %s answered", call.msg.ID)
			r.apiVerdicts(call, out)
		}
	}
}

// apiVerdicts gives each copy of call the verdict the answer says.
func (r *round) apiVerdicts(call *apiCall, out []byte) {
	rep, err := harness.Decode[harness.BroadcastReport](string(out))
	if err != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, res := range rep.Results {
		if c := call.copies[res.Agent]; c != nil && res.Team == call.team {
			c.Verdict, c.Error, c.VerdictAt = res.Verdict, res.Error, time.Now()
		}
	}
}

// api calls the daemon's API; a daemon that is not there is an error.
func (w *world) api(method, path, body string) (int, []byte, error) {
	sock := w.daemonSocket()
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
	defer c.CloseIdleConnections()
	req, err := http.NewRequest(method, "http://agentmsg"+path, bytes.NewReader([]byte(body)))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, err
	}
	return resp.StatusCode, out, nil
}

// tellable says whether a broadcast to a's team now can tell a's pane: the
// only one in its session. Then, if any inbox gets the message, a's must.
func tellable(a *agent) bool { return len(a.extras) == 0 }
