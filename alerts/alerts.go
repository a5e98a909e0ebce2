// Package alerts tells a person when something is stuck: a message that
// has waited too long for its agent, an agent that has sat in a dialog or
// with a draft too long, a delivery that ended typed (left in the box) or
// unknown (nothing shows whether it arrived).
//
// Engine is a state machine over observations and nothing else: no clock,
// no I/O. Each condition fires once, and again only after it has cleared
// and come back. Notifier tells the world of an alert (a command, a
// webhook). agentmsg top runs both over what it watches; the daemon can
// run them over its own.
package alerts

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentmsg/agentmsg/mailbox"
)

// Kind is what an alert is about; it is the "event" of its JSON.
type Kind string

const (
	MessageWaiting  Kind = "message_waiting"  // a message has waited longer than Rules.MessageWait
	AgentDialog     Kind = "agent_dialog"     // an agent has been in a dialog longer than Rules.Dialog
	AgentDraft      Kind = "agent_draft"      // an agent has held a draft longer than Rules.Draft
	DeliveryTyped   Kind = "delivery_typed"   // a delivery left the message in the box, unsubmitted
	DeliveryUnknown Kind = "delivery_unknown" // nothing shows whether a message arrived
	Test            Kind = "test"             // agentmsg alerts test
)

// Rules say when a condition alerts; a zero threshold (or false) is off.
type Rules struct {
	MessageWait, Dialog, Draft time.Duration
	Typed, Unknown             bool
}

// Agent is an agent as observed: its screen's state, and since when it
// has been in it (as far as the observer knows).
type Agent struct {
	Place, Team, Agent string
	State, Detail      string
	Since              time.Time
}

// Message is one copy of a message in an inbox, as observed.
type Message struct {
	Place, Team, Agent string // the inbox it is in
	ID, From           string
	State, Reason      string // its delivery state and reason
	Sent, Updated      time.Time
}

// Observation is everything observed at one moment.
type Observation struct {
	Now      time.Time
	Agents   []Agent
	Messages []Message
}

// Alert is one condition that fired.
type Alert struct {
	Event     Kind      `json:"event"`
	Place     string    `json:"place,omitempty"` // the tmux server (socket)
	Team      string    `json:"team,omitempty"`
	Agent     string    `json:"agent,omitempty"`
	MessageID string    `json:"message_id,omitempty"`
	From      string    `json:"from,omitempty"`
	State     string    `json:"state,omitempty"` // the message's delivery state, or the agent's
	Reason    string    `json:"reason,omitempty"`
	Detail    string    `json:"detail,omitempty"`
	Since     time.Time `json:"since"` // when the condition began
	Time      time.Time `json:"time"`  // when it fired
	Text      string    `json:"text"`  // one line for a person
}

// key names the condition: the same condition is the same key.
func (a Alert) key() string {
	return strings.Join([]string{string(a.Event), a.Place, a.Team, a.Agent, a.MessageID}, "\x00")
}

// Engine remembers which conditions hold, so that each fires once.
type Engine struct {
	Rules  Rules
	active map[string]Alert
}

// Observe compares obs with what held before: the conditions that hold
// now and did not are fired, those that held and do not any more are
// cleared (and fire again when they come back).
func (e *Engine) Observe(obs Observation) (fired, cleared []Alert) {
	now := map[string]Alert{}
	for _, a := range e.Rules.conditions(obs) {
		now[a.key()] = a
	}
	for k, a := range e.active {
		if _, ok := now[k]; !ok {
			cleared = append(cleared, a)
			delete(e.active, k)
		}
	}
	if e.active == nil {
		e.active = map[string]Alert{}
	}
	for k, a := range now {
		if _, ok := e.active[k]; !ok {
			e.active[k] = a
			fired = append(fired, a)
		}
	}
	sortAlerts(fired)
	sortAlerts(cleared)
	return fired, cleared
}

// Active lists the conditions that hold, the oldest first.
func (e *Engine) Active() []Alert {
	out := make([]Alert, 0, len(e.active))
	for _, a := range e.active {
		out = append(out, a)
	}
	sortAlerts(out)
	return out
}

func sortAlerts(as []Alert) {
	slices.SortFunc(as, func(a, b Alert) int {
		if c := a.Since.Compare(b.Since); c != 0 {
			return c
		}
		return strings.Compare(a.key(), b.key())
	})
}

// reasonUnknown is courier.ReasonUnknown: it may have reached the agent,
// and nothing shows whether it did.
const reasonUnknown = "unknown"

// conditions lists every condition that holds in obs under r.
func (r Rules) conditions(obs Observation) []Alert {
	var out []Alert
	for _, m := range obs.Messages {
		base := Alert{Place: m.Place, Team: m.Team, Agent: m.Agent, MessageID: m.ID, From: m.From, State: m.State, Reason: m.Reason, Time: obs.Now}
		if r.MessageWait > 0 && mailbox.DeliveryState(m.State).Outstanding() && obs.Now.Sub(m.Sent) >= r.MessageWait {
			a := base
			a.Event, a.Since = MessageWaiting, m.Sent
			a.Text = fmt.Sprintf("%s/%s: %s from %s has waited %s (%s)", m.Team, m.Agent, m.ID, m.From, Age(obs.Now.Sub(m.Sent)), why(m.State, m.Reason))
			out = append(out, a)
		}
		switch {
		case r.Unknown && m.Reason == reasonUnknown && (m.State == string(mailbox.StateFailed) || m.State == string(mailbox.StateTyped)):
			a := base
			a.Event, a.Since = DeliveryUnknown, m.Updated
			a.Text = fmt.Sprintf("%s/%s: nothing shows whether %s arrived; look at the pane, then retry it or mark it handled", m.Team, m.Agent, m.ID)
			out = append(out, a)
		case r.Typed && m.State == string(mailbox.StateTyped):
			a := base
			a.Event, a.Since = DeliveryTyped, m.Updated
			a.Text = fmt.Sprintf("%s/%s: %s was typed into the box and not submitted; look at the pane, then retry it or mark it handled", m.Team, m.Agent, m.ID)
			out = append(out, a)
		}
	}
	for _, ag := range obs.Agents {
		var limit time.Duration
		var kind Kind
		var what string
		switch ag.State {
		case "dialog":
			limit, kind, what = r.Dialog, AgentDialog, "in a dialog"
		case "draft":
			limit, kind, what = r.Draft, AgentDraft, "with a person's draft in its box"
		default:
			continue
		}
		if limit <= 0 || obs.Now.Sub(ag.Since) < limit {
			continue
		}
		a := Alert{Event: kind, Place: ag.Place, Team: ag.Team, Agent: ag.Agent, State: ag.State, Reason: ag.State, Detail: ag.Detail, Since: ag.Since, Time: obs.Now}
		a.Text = fmt.Sprintf("%s/%s has been %s for %s", ag.Team, ag.Agent, what, Age(obs.Now.Sub(ag.Since)))
		if ag.Detail != "" {
			a.Text += ": " + ag.Detail
		}
		out = append(out, a)
	}
	return out
}

// why words a message's state and reason: "deferred: dialog".
func why(state, reason string) string {
	if reason == "" {
		return state
	}
	return state + ": " + reason
}

// Age words a duration as a person reads it at a glance: "45s", "12m",
// "3h5m", "2d4h".
func Age(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", max(0, int(d/time.Second)))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 24*time.Hour:
		return trimZero(fmt.Sprintf("%dh%dm", int(d/time.Hour), int(d%time.Hour/time.Minute)))
	}
	return trimZero(fmt.Sprintf("%dd%dh", int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour)))
}

// trimZero drops a zero second unit: "3h0m" is "3h".
func trimZero(s string) string {
	if strings.HasSuffix(s, "h0m") || strings.HasSuffix(s, "d0h") {
		return s[:len(s)-2]
	}
	return s
}
