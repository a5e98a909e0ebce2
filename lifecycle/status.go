package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentmsg/agentmsg/broadcast"
	"github.com/agentmsg/agentmsg/delivery"
	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/target"
	"github.com/agentmsg/agentmsg/tmux"
)

// Agent states.
const (
	Running = "running" // session alive, the agent is working (or its screen is not recognised)
	Idle    = "idle"    // its input box is empty and on screen
	Waiting = "waiting" // a dialog is open, or a person's draft is in its box
	Dead    = "dead"    // session or process gone, or its heartbeat stopped
)

// Statuses are every agent state Status reports, with what each means.
var Statuses = []struct{ State, Doc string }{
	{Running, "its session is alive and the agent works (or its screen is not recognised)"},
	{Idle, "its input box is empty and on screen"},
	{Waiting, "a dialog is open, or a person's draft is in its box"},
	{Dead, "its session or process is gone, or its heartbeat stopped"},
}

// AgentStatus is one agent as Status sees it.
type AgentStatus struct {
	Target       target.Target
	State        string // Running, Idle, Waiting, Dead
	Reason       string // why, for a person: the screen's detail, or what is gone
	LastActivity time.Time
	Pending      int // outstanding inbox messages (pending, deferred, being typed)
	OpenRequests int // requests it posted that nobody has claimed yet
	Status       *mailbox.Status
	Pane         string
	Command      string // the pane's foreground command; the registered argv when the session is gone

	Registered bool                 // it has a registry entry
	Record     *mailbox.AgentRecord // the entry, when Registered
	PID        int                  // the pane's first process (0 when gone)
	Heartbeat  time.Time            // last heartbeat (zero: it does not heart-beat)
}

// entry is what Status joins for one agent.
type entry struct {
	t    target.Target
	rec  *mailbox.AgentRecord
	live *dispatch.Agent
}

// Status reports every agent of team ("" for all teams, "ralph" for the
// team-less ones): those in the registry and those with a session on the
// server, joined, sorted by session name. An agent is dead when its
// session or its process is gone, or when it has heart-beaten before and
// its last heartbeat is older than HeartbeatTimeout. Otherwise its state
// is read from its screen (with the agent's profile when the dispatcher
// has a Profile hook): idle when ready, waiting for a dialog or a draft,
// running otherwise.
func (m *Manager) Status(ctx context.Context, team string) ([]AgentStatus, error) {
	return m.StatusWithin(ctx, team, m.HeartbeatTimeout)
}

// StatusWithin is Status with this call's heartbeat timeout (0:
// DefaultHeartbeatTimeout) in place of the Manager's.
func (m *Manager) StatusWithin(ctx context.Context, team string, timeout time.Duration) ([]AgentStatus, error) {
	entries, err := m.gather(ctx, team)
	if err != nil {
		return nil, err
	}
	acts, err := m.Tmux.Activity(ctx)
	if err != nil {
		acts = map[string]time.Time{} // activity is a nicety; the rest stands
	}
	now := m.now()
	if timeout <= 0 {
		timeout = DefaultHeartbeatTimeout
	}
	boards := map[string]map[string]mailbox.Status{}
	requests := map[string]map[string]int{}
	out := make([]AgentStatus, 0, len(entries))
	for _, e := range entries {
		st := AgentStatus{Target: e.t}
		inboxTeam, agent := target.Inbox(e.t)
		if e.rec != nil {
			st.Registered, st.Record, st.Heartbeat = true, e.rec, e.rec.Heartbeat
			st.Command = strings.Join(e.rec.Command, " ")
			st.LastActivity = latest(e.rec.Spawned, e.rec.Heartbeat)
		}
		switch {
		case e.live == nil:
			st.State, st.Reason = Dead, "session gone: no session named exactly "+e.t.Session
		case e.live.Pane.Dead:
			st.State, st.Reason = Dead, "the program in the pane has exited"
		case e.live.Pane.PID > 0 && !pidAlive(e.live.Pane.PID):
			st.State, st.Reason = Dead, fmt.Sprintf("process %d is gone", e.live.Pane.PID)
		case !st.Heartbeat.IsZero() && now.Sub(st.Heartbeat) > timeout:
			st.State = Dead
			st.Reason = fmt.Sprintf("no heartbeat for %s (timeout %s); the session is still there", now.Sub(st.Heartbeat).Round(time.Second), timeout)
		default:
			st.State, st.Reason = screenState(e.live.State, e.live.Detail)
			if e.live.Shell {
				// The session lives on, but its agent has exited.
				st.State, st.Reason = Dead, "the pane shows a shell prompt: the agent has exited"
			}
		}
		if e.live != nil {
			st.Pane, st.PID, st.Command = e.live.Pane.ID, e.live.Pane.PID, e.live.Pane.Command
			st.LastActivity = latest(st.LastActivity, acts[e.t.Session])
		}
		if b, ok := boards[inboxTeam]; !ok {
			b = map[string]mailbox.Status{}
			list, _ := m.Store.Board(inboxTeam)
			for _, s := range list {
				b[s.Agent] = s
			}
			boards[inboxTeam] = b
		}
		if s, ok := boards[inboxTeam][agent]; ok {
			st.Status = &s
			st.LastActivity = latest(st.LastActivity, s.Updated)
		}
		if _, ok := requests[inboxTeam]; !ok {
			counts := map[string]int{}
			list, _ := m.Store.Requests(inboxTeam)
			for _, r := range list {
				if r.State == mailbox.RequestOpen {
					counts[r.From]++
				}
			}
			requests[inboxTeam] = counts
		}
		st.OpenRequests = requests[inboxTeam][agent]
		if batch, err := m.Store.Read(inboxTeam, agent); err == nil {
			for _, env := range batch.Envelopes {
				if env.Delivery != nil && env.Delivery.State.Outstanding() {
					st.Pending++
				}
			}
		}
		out = append(out, st)
	}
	return out, nil
}

// screenState maps a screen reading to an agent state.
func screenState(s delivery.State, detail string) (string, string) {
	switch s {
	case delivery.Ready:
		return Idle, detail
	case delivery.Dialog, delivery.Draft:
		return Waiting, joinReason(string(s), detail)
	case delivery.Busy:
		return Running, detail
	}
	return Running, joinReason("screen not recognised ("+string(s)+")", detail)
}

func joinReason(a, b string) string {
	if b == "" {
		return a
	}
	return a + ": " + b
}

func latest(ts ...time.Time) time.Time {
	var out time.Time
	for _, t := range ts {
		if t.After(out) {
			out = t
		}
	}
	return out
}

// gather joins the registry of team with the agent sessions on the server.
func (m *Manager) gather(ctx context.Context, team string) ([]entry, error) {
	byName := map[string]*entry{}
	var order []string
	add := func(t target.Target) *entry {
		if e, ok := byName[t.Session]; ok {
			return e
		}
		e := &entry{t: t}
		byName[t.Session] = e
		order = append(order, t.Session)
		return e
	}
	teams := []string{team}
	switch team {
	case "":
		all, err := m.Store.Teams()
		if err != nil {
			return nil, err
		}
		teams = all
	case target.RalphTeam:
	default:
		if err := target.ValidateTeam(team); err != nil {
			return nil, err
		}
	}
	var errs []error
	for _, tm := range teams {
		recs, err := m.Store.Registered(tm)
		if err != nil {
			errs = append(errs, err)
		}
		for _, r := range recs {
			t, ok := target.InboxOwner(tm, r.Agent)
			if !ok {
				continue
			}
			add(t).rec = &r
		}
	}
	live, err := m.liveAgents(ctx, team)
	if err != nil {
		return nil, err
	}
	for i := range live {
		add(live[i].Target).live = &live[i]
	}
	slices.Sort(order)
	out := make([]entry, len(order))
	for i, s := range order {
		out[i] = *byName[s]
	}
	return out, errors.Join(errs...)
}

// liveAgents lists the agent sessions of team on the server with their
// screen states; none when no server runs.
func (m *Manager) liveAgents(ctx context.Context, team string) ([]dispatch.Agent, error) {
	filter := team
	if team == target.RalphTeam {
		filter = ""
	}
	agents, err := m.Dispatch.Agents(ctx, filter, dispatch.Call{})
	if errors.Is(err, tmux.ErrNoServer) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if team == target.RalphTeam {
		agents = slices.DeleteFunc(agents, func(a dispatch.Agent) bool { return !a.Target.IsRalph() })
	}
	if m.Dispatch.Profile == nil {
		return agents, nil
	}
	// Read each screen again the way its agent CLI draws it.
	return broadcast.Each(ctx, agents, m.Dispatch.Concurrency, func(ctx context.Context, a dispatch.Agent) dispatch.Agent {
		screen, err := m.Dispatch.Tmux.Capture(ctx, a.Pane.ID, 0)
		if err != nil {
			return a
		}
		p, _ := m.Dispatch.Profile(a.Pane, screen)
		if p.Reader == nil {
			return a
		}
		rd := p.Reader.Read(screen)
		a.State, a.Detail = rd.State, rd.Detail
		return a
	}), nil
}

// Reap reports the dead agents of team (as Status finds them) and removes
// their registry entries. It is conservative: it kills nothing. A session
// whose heartbeat stopped but which is still there is reported and
// unregistered only, because a silent agent may be busy in a long tool
// call; end it with Kill. Once unregistered, such a session shows again as
// an unregistered agent, with its screen's state. Inboxes and statuses
// stay: they are the team's history.
func (m *Manager) Reap(ctx context.Context, team string) ([]AgentStatus, error) {
	return m.ReapWithin(ctx, team, m.HeartbeatTimeout)
}

// ReapWithin is Reap with this call's heartbeat timeout (0:
// DefaultHeartbeatTimeout) in place of the Manager's.
func (m *Manager) ReapWithin(ctx context.Context, team string, timeout time.Duration) ([]AgentStatus, error) {
	all, err := m.StatusWithin(ctx, team, timeout)
	if err != nil {
		return nil, err
	}
	var (
		dead []AgentStatus
		errs []error
	)
	for _, st := range all {
		if st.State != Dead {
			continue
		}
		dead = append(dead, st)
		if !st.Registered {
			continue
		}
		tm, agent := target.Inbox(st.Target)
		if err := m.Store.Unregister(tm, agent); err != nil {
			errs = append(errs, err)
		}
	}
	return dead, errors.Join(errs...)
}
