package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentmsg/agentmsg/courier"
	"github.com/agentmsg/agentmsg/delivery"
	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/eventlog"
	"github.com/agentmsg/agentmsg/service"
	"github.com/agentmsg/agentmsg/wire"
)

// Events reach a client from the event log, which every agentmsg process
// appends to: a client asks for what came after the last id it saw
// (Last-Event-ID, or ?since=), so a restart of either side loses nothing
// and repeats nothing. One follower reads the log for every stream; each
// stream has a bounded buffer, and a reader too slow to keep up is cut off
// with the id to resume from, never allowed to grow the daemon's memory.

// streamBuffer bounds the events waiting for one slow reader.
const streamBuffer = 1024

// followEvery is how often the follower looks for new events.
const followEvery = 20 * time.Millisecond

// hub fans the log's new events out to the streams.
type hub struct {
	log  *eventlog.Log
	mu   sync.Mutex
	subs map[*sub]bool
	last int64 // the newest event the follower has passed on
	// wake tells an idle follower (no streams, so no reading) that a
	// stream has come: read the log 50 times a second for no one, and
	// an idle daemon used over 1% of a core.
	wake chan struct{}
}

type sub struct {
	ch      chan eventlog.Event
	dropped chan struct{} // closed when the reader fell behind
	once    sync.Once
}

func newHub(log *eventlog.Log) *hub {
	last, _ := log.Last()
	return &hub{log: log, subs: map[*sub]bool{}, last: last, wake: make(chan struct{}, 1)}
}

// follow passes each new event on, until ctx ends. While no stream is
// open it reads nothing and waits to be woken.
func (h *hub) follow(ctx context.Context) {
	t := time.NewTicker(followEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		h.mu.Lock()
		idle, last := len(h.subs) == 0, h.last
		h.mu.Unlock()
		if idle {
			select {
			case <-ctx.Done():
				return
			case <-h.wake:
			}
			continue
		}
		for {
			evs, next, err := h.log.Since(last, 512)
			if errors.Is(err, eventlog.ErrExpired) {
				h.last = -1
				continue
			}
			if err != nil || len(evs) == 0 {
				break
			}
			h.mu.Lock()
			h.last, last = next, next
			for s := range h.subs {
				for _, e := range evs {
					select {
					case s.ch <- e:
					default:
						s.once.Do(func() { close(s.dropped) })
						delete(h.subs, s)
					}
				}
			}
			h.mu.Unlock()
		}
	}
}

func (h *hub) subscribe() *sub {
	s := &sub{ch: make(chan eventlog.Event, streamBuffer), dropped: make(chan struct{})}
	h.mu.Lock()
	if len(h.subs) == 0 {
		// The follower read nothing while idle: it goes on from now. The
		// stream reads what came before from the log itself, and skips
		// what it gets twice (by id).
		if last, err := h.log.Last(); err == nil {
			h.last = last
		}
	}
	h.subs[s] = true
	h.mu.Unlock()
	select {
	case h.wake <- struct{}{}:
	default: // already woken
	}
	return s
}

func (h *hub) unsubscribe(s *sub) {
	h.mu.Lock()
	delete(h.subs, s)
	h.mu.Unlock()
}

// stream is GET /v1/events: Server-Sent Events, each with its id, from
// after Last-Event-ID (or ?since=ID; ?since=now for only what comes next;
// without either, from the oldest kept), only those team, agent and types
// select. A cursor past the end of the log (a state dir wiped or moved)
// is told at once with a reset event, and the stream goes on from the
// log's end: what the client knew may be of another log.
func (d *Daemon) stream(w http.ResponseWriter, r *http.Request) {
	var q wire.EventsQuery
	if !decodeQuery(w, r, &q) {
		return
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		fail(w, http.StatusInternalServerError, errors.New("this connection cannot stream"))
		return
	}
	after := int64(-1)
	since := r.Header.Get("Last-Event-ID")
	if since == "" {
		since = q.Since
	}
	switch since {
	case "":
	case "now":
		after, _ = d.log.Last()
	default:
		n, err := strconv.ParseInt(since, 10, 64)
		if err != nil || n < -1 {
			failCode(w, http.StatusBadRequest, wire.CodeWrongType, "since", fmt.Errorf("since %q: want an event id", since))
			return
		}
		after = n
	}
	keep, err := eventFilter(q)
	if err != nil {
		failCode(w, http.StatusBadRequest, wire.CodeBadRequest, "types", err)
		return
	}
	// Subscribed first, then the backlog read: nothing falls between.
	s := d.hub.subscribe()
	defer d.hub.unsubscribe(s)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	if last, err := d.log.Last(); err == nil && after > last {
		writeEvent(w, wire.StreamEventReset, last, wire.StreamReset{Type: wire.StreamEventReset, Last: last, ResumeFrom: last,
			Error: fmt.Sprintf("event %d is past the end of the log (%d): it was wiped or moved; read the state again, then trust the events", after, last)})
		after = last
	}
	// The headers go now: a client of a quiet log had none, and its
	// request did not return, until the first event or keepalive (15 s).
	flusher.Flush()
	for {
		evs, next, err := d.log.Since(after, 512)
		if errors.Is(err, eventlog.ErrExpired) {
			writeEvent(w, wire.StreamEventExpired, after, wire.StreamExpired{Type: wire.StreamEventExpired, Error: err.Error(), ResumeFrom: -1})
			after = -1
			continue
		}
		if err != nil || len(evs) == 0 {
			break
		}
		for _, e := range evs {
			if keep(e) {
				writeEvent(w, "", e.ID, e)
			}
		}
		after = next
		flusher.Flush()
	}
	keepalive := time.NewTicker(15 * time.Second)
	defer keepalive.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-s.dropped:
			// Too slow: cut off, with where to resume.
			writeEvent(w, wire.StreamEventDropped, after, wire.StreamDropped{Type: wire.StreamEventDropped, ResumeFrom: after})
			flusher.Flush()
			return
		case e := <-s.ch:
			if e.ID <= after {
				continue // sent with the backlog
			}
			after = e.ID
			if !keep(e) {
				continue
			}
			writeEvent(w, "", e.ID, e)
			flusher.Flush()
		case <-keepalive.C:
			fmt.Fprint(w, ": keepalive\n\n")
			flusher.Flush()
		}
	}
}

// eventFilter is what q selects: events of its team, of its agent, of its
// types (one ending in ".*" is every type it begins); every event when q
// names none.
func eventFilter(q wire.EventsQuery) (func(eventlog.Event) bool, error) {
	types := map[eventlog.Type]bool{}
	var prefixes []string
	for _, t := range q.Types {
		if p, ok := strings.CutSuffix(t, "*"); ok {
			prefixes = append(prefixes, p)
			continue
		}
		if !eventlog.Known(eventlog.Type(t)) {
			return nil, fmt.Errorf("types: %q is no type of event (GET /v1/openapi.json, components Event, lists them)", t)
		}
		types[eventlog.Type(t)] = true
	}
	return func(e eventlog.Event) bool {
		if q.Team != "" && e.Team != q.Team || q.Agent != "" && e.Agent != q.Agent {
			return false
		}
		if len(q.Types) == 0 || types[e.Type] {
			return true
		}
		for _, p := range prefixes {
			if strings.HasPrefix(string(e.Type), p) {
				return true
			}
		}
		return false
	}, nil
}

// writeEvent writes one SSE event: its id, its name (none for events of
// the log: an EventSource's message) and its data as one line of JSON.
func writeEvent(w http.ResponseWriter, kind string, id int64, v any) {
	data, _ := json.Marshal(v)
	if kind != "" {
		fmt.Fprintf(w, "event: %s\n", kind)
	}
	if id >= 0 {
		fmt.Fprintf(w, "id: %d\n", id)
	}
	fmt.Fprintf(w, "data: %s\n\n", data)
}

// watchAgents looks at every server the daemon serves once a second and
// records each change of an agent's state as an event: appeared, ready,
// busy, dialog, draft, unknown, exited (its pane shows a shell), gone. An
// agent that has become ready gets what waits for it: a deliver pass over
// its team (and, at the first look, over every team), so that a message
// kept while its agent was busy arrives with no hook and no one running
// deliver.
//
// A look captures every agent's pane; most seconds nothing has changed
// on any of them. So each second starts with one cheap question (see
// tmux.Exec.Changes), and the look is taken only when the answer says a
// screen may have changed: 500 idle agents cost the daemon 6.6% of a core
// with a look every second.
func (d *Daemon) watchAgents(ctx context.Context) {
	last := map[string]map[string]eventlog.Event{} // socket -> session -> how its agent was seen
	looked := map[string]lookMark{}                // socket -> what the last look saw
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for socket, p := range d.backend.snapshot() {
			disp, err := p.Dispatcher() // built with the parts (backend.parts)
			if err != nil {
				continue
			}
			mark, fresh := lookMark{}, true
			if w, ok := disp.Tmux.(changeWatcher); ok {
				mark.at = time.Now() // before the question: what it misses, the next one sees
				fp, newest, err := w.Changes(ctx)
				mark.fingerprint = fp
				prevMark, seen := looked[socket]
				fresh = err != nil || !seen || fp != prevMark.fingerprint || !newest.Before(prevMark.at.Truncate(time.Second))
			}
			if !fresh && last[socket] != nil {
				continue // no screen changed since the last look
			}
			agents, err := disp.Agents(ctx, "", dispatch.Call{})
			if err != nil {
				delete(looked, socket)
				continue
			}
			if mark.fingerprint != "" {
				looked[socket] = mark
			}
			prev := last[socket]
			now := seenAgents(socket, agents)
			evs, ready, gone := agentChanges(prev, now)
			for _, session := range gone {
				// Its process is gone, and so is any use of the token
				// spawn gave it (its handlers go within a second).
				if d.mcps.tokens != nil {
					if _, err := d.mcps.tokens.RevokeSession(socket, session, ""); err != nil {
						d.logf("revoking the MCP tokens of %s, which is gone: %v", session, err)
					}
				}
			}
			last[socket] = now
			states := make(map[string]string, len(now))
			for session, e := range now {
				states[session] = e.State
			}
			d.looked.set(socket, states)
			_, _ = d.log.Append(evs...)
			for team := range ready {
				d.deliverSoon(socket, team, courier.Listing{})
			}
		}
	}
}

// seenAgents is each agent of a look at the server at socket, by session,
// as the event of its state would say it.
func seenAgents(socket string, agents []dispatch.Agent) map[string]eventlog.Event {
	now := make(map[string]eventlog.Event, len(agents))
	for _, a := range agents {
		state := string(a.State)
		if a.Shell {
			state = "exited"
		}
		now[a.Target.Session] = eventlog.Event{Place: socket, Team: a.Target.Team, Agent: a.Target.Agent(), Pane: a.Pane.ID, State: state, Detail: a.Detail}
	}
	return now
}

// agentChanges are the events of what changed between two looks (prev nil:
// the first, whose states are learnt, not news), the teams with an agent
// that became ready ("" every team: the first look, or a ralph agent),
// and the sessions gone. Every event says which agent it is about: team,
// agent, pane and server (agent.gone said only its session's name), and
// agent.gone the state it was last seen in.
func agentChanges(prev, now map[string]eventlog.Event) (evs []eventlog.Event, ready map[string]bool, gone []string) {
	ready = map[string]bool{}
	if prev == nil {
		return nil, map[string]bool{"": true}, nil
	}
	for _, session := range slices.Sorted(maps.Keys(now)) {
		e := now[session]
		old, seen := prev[session]
		switch {
		case !seen:
			e.Type = eventlog.AgentAppeared
			evs = append(evs, e)
			e.Type = eventlog.AgentState(e.State)
			evs = append(evs, e)
		case old.State != e.State:
			e.Type = eventlog.AgentState(e.State)
			evs = append(evs, e)
		}
		if e.State == string(delivery.Ready) && (!seen || old.State != e.State) {
			ready[e.Team] = true // a ralph agent's "": every team
		}
	}
	for _, session := range slices.Sorted(maps.Keys(prev)) {
		if _, still := now[session]; !still {
			e := prev[session]
			e.Type, e.Detail = eventlog.AgentGone, "session "+session+" is gone"
			evs = append(evs, e)
			gone = append(gone, session)
		}
	}
	if ready[""] {
		ready = map[string]bool{"": true}
	}
	return evs, ready, gone
}

// changeWatcher is the tmux client's cheap question (tmux.Exec.Changes).
type changeWatcher interface {
	Changes(ctx context.Context) (fingerprint string, newest time.Time, err error)
}

// lookMark is what a look at a server's screens began with: the servers'
// fingerprint and when it was asked.
type lookMark struct {
	fingerprint string
	at          time.Time
}

// passLimit bounds a deliver pass the daemon starts by itself.
const passLimit = 30 * time.Second

// passReady bounds a pass's wait for each agent to be ready. The daemon
// starts a pass when it sees an agent become ready, so one that is not
// ready now gets another pass when it is: waiting longer would only keep
// its message marked typing (and shown so by top and the events) while
// it sat behind a dialog.
const passReady = 2 * time.Second

// deliverSoon starts a deliver pass over team ("" every team) on the
// server at socket, unless one of the daemon's own runs there now: the
// passes of a team take turns with every other agentmsg's (a turn-end
// hook's), so nothing is typed twice. Asked while its pass runs, it runs
// one more when that ends: what was recorded meanwhile (a message from
// another host) may have come after the running pass read the inbox.
// known is what the caller knows of the agent sessions a moment ago: a
// pass that starts now starts from it.
func (d *Daemon) deliverSoon(socket, team string, known courier.Listing) {
	key := socket + "\x00" + team
	d.passMu.Lock()
	if _, running := d.passes[key]; running {
		d.passes[key] = true // again, once this one ends
		d.passMu.Unlock()
		return
	}
	d.passes[key] = false
	d.passMu.Unlock()
	go func() {
		for {
			if svc, err := d.backend.service(Caller{Socket: socket}); err == nil {
				_, _ = svc.Deliver(d.ctx, service.DeliverRequest{Team: team, TakeTurns: true, Limit: passLimit, ReadyTimeout: passReady, LeaveSelf: true, Listed: known})
			}
			if d.links != nil {
				d.links.PassDone() // what the pass typed for other hosts
			}
			d.passMu.Lock()
			again := d.passes[key] && d.ctx.Err() == nil
			if !again {
				delete(d.passes, key)
				d.passMu.Unlock()
				return
			}
			d.passes[key] = false
			d.passMu.Unlock()
			known = courier.Listing{} // from before the last pass: too old now
		}
	}()
}

// agentStates are the agents' states at the watcher's last look at each
// server: socket -> session -> state.
type agentStates struct {
	mu sync.Mutex
	m  map[string]map[string]string
}

func (a *agentStates) set(socket string, states map[string]string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.m == nil {
		a.m = map[string]map[string]string{}
	}
	a.m[socket] = states
}

func (a *agentStates) get(socket, session string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.m[socket][session]
}
