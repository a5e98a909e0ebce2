package tui

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/agentmsg/agentmsg/alerts"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
	"github.com/agentmsg/agentmsg/service"
)

// inboxKey names an inbox, and the agent whose it is.
type inboxKey struct{ Team, Agent string }

func (k inboxKey) String() string { return k.Team + "/" + k.Agent }

func less(a, b inboxKey) int {
	return cmp.Or(cmp.Compare(a.Team, b.Team), cmp.Compare(a.Agent, b.Agent))
}

// noSession is the state of an agent with an inbox and no session.
const noSession = service.NoSession

// agentRow is one agent as top shows it: its screen, and its messages.
type agentRow struct {
	key                             inboxKey
	Session, Pane, Command, Profile string
	State, Detail                   string
	Since                           time.Time // when top first saw it in State
	Waiting                         int       // messages on their way to it
	Oldest                          time.Time // the oldest of those
	LastIn, LastOut                 msgRef
}

// msgRef is a message an agent got or sent, and with whom; zero: none.
type msgRef struct {
	ID, Peer string
	At       time.Time
}

// msgRow is one copy of a message, in one inbox.
type msgRow struct {
	key inboxKey
	env mailbox.Envelope
}

func (m msgRow) state() string {
	if m.env.Delivery == nil {
		return "-" // a notice: a request, a claim
	}
	return string(m.env.Delivery.State)
}

func (m msgRow) reason() string {
	if m.env.Delivery == nil {
		return ""
	}
	return m.env.Delivery.Reason
}

// updated is when its state was last recorded.
func (m msgRow) updated() time.Time {
	if d := m.env.Delivery; d != nil && !d.Updated.IsZero() {
		return d.Updated
	}
	return m.env.Timestamp
}

// open reports whether the message still needs something: typing, or a
// person's decision (a delivery that failed or left it in the box).
func (m msgRow) open() bool {
	d := m.env.Delivery
	return d != nil && (d.State.Outstanding() || d.State == mailbox.StateFailed)
}

// waiting reports whether the message is on its way to its agent.
func (m msgRow) waiting() bool { return m.env.Delivery != nil && m.env.Delivery.State.Outstanding() }

func (m msgRow) ref() service.MessageRef {
	return service.MessageRef{Team: m.key.Team, Agent: m.key.Agent, ID: m.env.ID}
}

// rowKey names a message row: a broadcast has a copy per inbox.
type rowKey struct {
	inbox inboxKey
	id    message.ID
}

func (m msgRow) rowID() rowKey { return rowKey{m.key, m.env.ID} }

func compareRows(a, b msgRow) int {
	return cmp.Or(less(a.key, b.key), strings.Compare(string(a.env.ID), string(b.env.ID)))
}

// agentChange is an agent seen in a new state.
type agentChange struct {
	key         inboxKey
	from, to    string
	detail      string
	appeared    bool
	disappeared bool
}

// state is everything top knows, kept up to date by updates. The lists
// shown are derived from it once per change, not once per frame.
type state struct {
	place     string
	noServer  bool
	screenErr error
	mailErr   error
	screens   map[inboxKey]service.AgentScreen
	since     map[inboxKey]time.Time
	inboxes   map[inboxKey][]mailbox.Envelope
	looked    bool // the screens were read at least once

	version int // counts changes to what the lists derive from
	built   int // the version agents and msgs were built from
	agents  []*agentRow
	msgs    []msgRow // open ones first, the oldest first; then the newest
	nOpen   int
}

func newState() *state {
	return &state{screens: map[inboxKey]service.AgentScreen{}, since: map[inboxKey]time.Time{},
		inboxes: map[inboxKey][]mailbox.Envelope{}, built: -1}
}

// apply takes in an update and says which agents changed state.
func (s *state) apply(u Update) []agentChange {
	var changes []agentChange
	if u.Screens != nil {
		s.screenErr = u.Err
		changes = s.applyScreens(*u.Screens, u.At)
	} else {
		s.mailErr = u.Err
	}
	if u.Full {
		for k := range s.inboxes {
			delete(s.inboxes, k)
		}
	}
	for _, in := range u.Inboxes {
		s.inboxes[inboxKey{in.Team, in.Agent}] = in.Messages
	}
	if u.Full || len(u.Inboxes) > 0 || len(changes) > 0 {
		s.version++
	}
	return changes
}

func (s *state) applyScreens(res service.ScreensResult, at time.Time) []agentChange {
	if res.Socket != "" {
		s.place = res.Socket
	}
	s.noServer = res.NoServer
	now := make(map[inboxKey]service.AgentScreen, len(res.Agents))
	var changes []agentChange
	for _, a := range res.Agents {
		k := inboxKey{a.Team, a.Agent}
		now[k] = a
		old, had := s.screens[k]
		switch {
		case !had:
			s.since[k] = at
			if s.looked {
				changes = append(changes, agentChange{key: k, to: a.State, detail: a.Detail, appeared: true})
			} else {
				changes = append(changes, agentChange{key: k, to: a.State, detail: a.Detail})
			}
		case old.State != a.State:
			s.since[k] = at
			changes = append(changes, agentChange{key: k, from: old.State, to: a.State, detail: a.Detail})
		}
	}
	for k, old := range s.screens {
		if _, ok := now[k]; !ok {
			delete(s.since, k)
			changes = append(changes, agentChange{key: k, from: old.State, to: noSession, disappeared: true})
		}
	}
	s.screens, s.looked = now, true
	return changes
}

// build derives the lists from the state, when it changed.
func (s *state) build() {
	if s.built == s.version {
		return
	}
	s.built = s.version
	rows := map[inboxKey]*agentRow{}
	row := func(k inboxKey) *agentRow {
		r, ok := rows[k]
		if !ok {
			r = &agentRow{key: k, State: noSession}
			rows[k] = r
		}
		return r
	}
	for k, a := range s.screens {
		r := row(k)
		r.Session, r.Pane, r.Command, r.Profile, r.State, r.Detail = a.Session, a.Pane, a.Command, a.Profile, a.State, a.Detail
		r.Since = s.since[k]
	}
	n := 0
	for _, envs := range s.inboxes {
		n += len(envs)
	}
	msgs := make([]msgRow, 0, n)
	for k, envs := range s.inboxes {
		r := row(k)
		for _, e := range envs {
			m := msgRow{key: k, env: e}
			msgs = append(msgs, m)
			if m.waiting() {
				r.Waiting++
				if r.Oldest.IsZero() || e.Timestamp.Before(r.Oldest) {
					r.Oldest = e.Timestamp
				}
			}
			if e.Timestamp.After(r.LastIn.At) {
				r.LastIn = msgRef{ID: string(e.ID), Peer: e.From, At: e.Timestamp}
			}
		}
	}
	// What an agent sent is in the inboxes of its team.
	for _, m := range msgs {
		from := inboxKey{m.key.Team, m.env.From}
		if r, ok := rows[from]; ok && m.env.Timestamp.After(r.LastOut.At) {
			r.LastOut = msgRef{ID: string(m.env.ID), Peer: m.key.Agent, At: m.env.Timestamp}
		}
	}
	s.agents = s.agents[:0]
	for _, r := range rows {
		s.agents = append(s.agents, r)
	}
	slices.SortFunc(s.agents, func(a, b *agentRow) int { return less(a.key, b.key) })
	slices.SortFunc(msgs, compareMessages)
	s.msgs = msgs
	s.nOpen = 0
	for _, m := range msgs {
		if m.open() {
			s.nOpen++
		}
	}
}

// compareMessages puts the open messages first, the one waiting longest
// at the top; then the others, the newest verdict first.
func compareMessages(a, b msgRow) int {
	ao, bo := a.open(), b.open()
	switch {
	case ao && !bo:
		return -1
	case bo && !ao:
		return 1
	case ao:
		return cmp.Or(a.env.Timestamp.Compare(b.env.Timestamp), compareRows(a, b))
	}
	return cmp.Or(b.updated().Compare(a.updated()), compareRows(a, b))
}

// attention ranks an agent's state: what a person should look at first.
func attention(state string) int {
	switch state {
	case "dialog":
		return 0
	case "draft":
		return 1
	case service.Exited:
		return 2
	case "unknown":
		return 3
	case "busy":
		return 4
	case "ready":
		return 6
	}
	return 5
}

// sortedAgents is the agents by name, or those needing a look first.
func (s *state) sortedAgents(byAttention bool) []*agentRow {
	s.build()
	if !byAttention {
		return s.agents
	}
	out := slices.Clone(s.agents)
	slices.SortStableFunc(out, func(a, b *agentRow) int {
		return cmp.Or(cmp.Compare(attention(a.State), attention(b.State)), cmp.Compare(b.Waiting, a.Waiting))
	})
	return out
}

// observation is what the alert engine looks at: every agent on the
// server, and every message still open.
func (s *state) observation(now time.Time) alerts.Observation {
	s.build()
	obs := alerts.Observation{Now: now}
	for _, a := range s.agents {
		if a.Session == "" {
			continue
		}
		obs.Agents = append(obs.Agents, alerts.Agent{Place: s.place, Team: a.key.Team, Agent: a.key.Agent, State: a.State, Detail: a.Detail, Since: a.Since})
	}
	for _, m := range s.msgs[:s.nOpen] {
		obs.Messages = append(obs.Messages, alerts.Message{Place: s.place, Team: m.key.Team, Agent: m.key.Agent,
			ID: string(m.env.ID), From: m.env.From, State: m.state(), Reason: m.reason(), Sent: m.env.Timestamp, Updated: m.updated()})
	}
	return obs
}
