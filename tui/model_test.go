package tui

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"github.com/agentmsg/agentmsg/alerts"
	"github.com/agentmsg/agentmsg/courier"
	"github.com/agentmsg/agentmsg/eventlog"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
	"github.com/agentmsg/agentmsg/service"
)

var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.Local)

// clock is a settable time for the model.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }

// fakeActions records what top asked of the service.
type fakeActions struct {
	mu      sync.Mutex
	calls   []string
	open    service.OpenResult
	history []service.HistoryCopy
	err     error
}

func (f *fakeActions) record(s string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, s)
}

func (f *fakeActions) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

func (f *fakeActions) Deliver(_ context.Context, team string) (service.DeliverResult, error) {
	f.record("deliver " + team)
	return service.DeliverResult{Typed: []courier.Typing{{Team: team, Agent: "eve"}}}, f.err
}

func (f *fakeActions) Retry(_ context.Context, ref service.MessageRef) (service.RetryResult, error) {
	f.record("retry " + ref.String())
	return service.RetryResult{Delivery: mailbox.Delivery{State: mailbox.StatePending}}, f.err
}

func (f *fakeActions) Handle(_ context.Context, ref service.MessageRef) (mailbox.Delivery, error) {
	f.record("handle " + ref.String())
	return mailbox.Delivery{State: mailbox.StateHandled}, f.err
}

func (f *fakeActions) OpenPane(_ context.Context, team, agent string) (service.OpenResult, error) {
	f.record("open " + team + "/" + agent)
	return f.open, f.err
}

func (f *fakeActions) History(_ context.Context, ref service.MessageRef) ([]service.HistoryCopy, error) {
	f.record("history " + ref.String())
	return f.history, f.err
}

// fakeNotifier records the alerts it was told of.
type fakeNotifier struct {
	mu  sync.Mutex
	got []alerts.Alert
}

func (n *fakeNotifier) Enabled() bool { return true }
func (n *fakeNotifier) Notify(_ context.Context, a alerts.Alert) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.got = append(n.got, a)
	return nil
}

// env is a message in an inbox, sent min minutes after t0.
func env(id, from, state, reason string, min int) mailbox.Envelope {
	at := t0.Add(time.Duration(min) * time.Minute)
	e := mailbox.Envelope{ID: message.ID(id), From: from, Type: mailbox.TypeText, Content: "text of " + id, Timestamp: at}
	if state != "" {
		e.Delivery = &mailbox.Delivery{State: mailbox.DeliveryState(state), Reason: reason, Updated: at, Attempts: 1}
	}
	return e
}

const (
	idDeferred  = "MSG_LEAD_0000000d"
	idTyped     = "MSG_LEAD_0000000e"
	idSubmitted = "MSG_LEAD_0000000f"
	idFromEve   = "MSG_EVE_00000001"
)

// team is alpha: ana ready, bob busy, eve in a dialog with a message
// deferred for her and one left in her box; ana got one, from eve.
func team() (Update, Update) {
	screens := Update{At: t0, Screens: &service.ScreensResult{Socket: "/tmp/am/sock", Agents: []service.AgentScreen{
		{Team: "alpha", Agent: "ana", Session: "agent-alpha-ana", Pane: "%1", Command: "claude", Profile: "claude", State: "ready"},
		{Team: "alpha", Agent: "bob", Session: "agent-alpha-bob", Pane: "%2", Command: "node", Profile: "codex", State: "busy", Detail: "the agent is working"},
		{Team: "alpha", Agent: "eve", Session: "agent-alpha-eve", Pane: "%3", Command: "claude", Profile: "claude", State: "dialog", Detail: "selection menu: ❯ 1. Yes"},
	}}}
	mail := Update{At: t0, Full: true, Inboxes: []Inbox{
		{Team: "alpha", Agent: "eve", Messages: []mailbox.Envelope{env(idDeferred, "lead", "deferred", "dialog", 0), env(idTyped, "lead", "typed", "in_box", 1)}},
		{Team: "alpha", Agent: "ana", Messages: []mailbox.Envelope{env(idSubmitted, "eve", "submitted", "", 2)}},
		{Team: "alpha", Agent: "lead", Messages: []mailbox.Envelope{env(idFromEve, "eve", "inbox", "", 3)}},
	}}
	return screens, mail
}

// newModel is top over the team at 80x24, without colour, at t0+5m.
func newModel(t *testing.T, a Actions, o Options) (*Model, *clock) {
	t.Helper()
	c := &clock{now: t0.Add(5 * time.Minute)}
	o.Actions, o.Now = a, c.Now
	if o.Colors == termenv.TrueColor {
		o.Colors = termenv.Ascii // the words alone, unless a test asks for colour
	}
	m := New(o)
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	screens, mail := team()
	m.Update(updateMsg(screens))
	m.Update(updateMsg(mail))
	return m, c
}

// key is a key press as bubbletea reports it.
func key(k string) tea.KeyMsg {
	switch k {
	case "tab":
		return tea.KeyMsg{Type: tea.KeyTab}
	case "enter":
		return tea.KeyMsg{Type: tea.KeyEnter}
	case "esc":
		return tea.KeyMsg{Type: tea.KeyEsc}
	case "down":
		return tea.KeyMsg{Type: tea.KeyDown}
	case "up":
		return tea.KeyMsg{Type: tea.KeyUp}
	}
	return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)}
}

// press feeds keys; the command of an action (never a timer) is run and
// its result fed back, as bubbletea would.
func press(m *Model, keys ...string) {
	for _, k := range keys {
		_, cmd := m.Update(key(k))
		if cmd != nil && k != "/" {
			if msg := cmd(); msg != nil {
				m.Update(msg)
			}
		}
	}
}

// typeText types into the filter box.
func typeText(m *Model, s string) {
	for _, r := range s {
		m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}})
	}
}

// checkScreen fails unless the view is exactly h lines of at most w
// cells each.
func checkScreen(t *testing.T, view string, w, h int) {
	t.Helper()
	lines := strings.Split(view, "\n")
	if len(lines) != h {
		t.Errorf("%d lines, want %d", len(lines), h)
	}
	for i, l := range lines {
		if n := lipgloss.Width(l); n > w {
			t.Errorf("line %d is %d cells wide, more than %d: %q", i, n, w, l)
		}
	}
}

// The list screen shows each agent's state, CLI, waiting messages and
// last messages in and out, and the open messages first, in 80x24.
func TestListView(t *testing.T) {
	m, _ := newModel(t, &fakeActions{}, Options{})
	view := m.View()
	checkScreen(t, view, 80, 24)
	for _, want := range []string{
		"agentmsg top · 3 agents, 2 not ready · 2 open of 4 messages · 0 alerts… 12:05:00",
		"▸ AGENT             STATE         CLI            WAIT OLDEST LAST IN   LAST OUT",
		"> alpha/ana         ready         claude                     3m eve    -",
		"  alpha/bob         busy 5m       node/codex                 -         -",
		"  alpha/eve         dialog 5m     claude            2 5m     4m lead   2m lead",
		"  alpha/lead        no-session                               2m eve    4m eve",
		"MESSAGES 2 open, 4 kept",
		"  AGE   ID                   TO                 FROM     STATE     REASON",
		"  5m    MSG_LEAD_0000000d    alpha/eve          lead     deferred  dialog",
		"  4m    MSG_LEAD_0000000e    alpha/eve          lead     typed     in_box",
		"  2m    MSG_EVE_00000001     alpha/lead         eve      inbox",
		"  3m    MSG_LEAD_0000000f    alpha/ana          eve      submitted",
		"d deliver  o pane  r retry  h handled  / filter  ? help  q quit",
	} {
		if !strings.Contains(view, want) {
			t.Errorf("the screen lacks %q:\n%s", want, view)
		}
	}
}

// Each key asks the service for one thing, about what is selected; retry
// and handled ask the person first.
func TestKeys(t *testing.T) {
	ref := func(id string) string { return id + " in alpha/eve" }
	for _, tt := range []struct {
		name   string
		keys   []string
		calls  []string
		screen string // on the screen after the keys
	}{
		{"deliver the selected agent's team", []string{"j", "j", "d"}, []string{"deliver alpha"}, "deliver alpha: 0 of 1 delivered"},
		{"deliver every team", []string{"D"}, []string{"deliver "}, "deliver to every team: 0 of 1 delivered"},
		{"open the selected agent's pane", []string{"j", "j", "o"}, []string{"open alpha/eve"}, "watch it with: tmux -S /tmp/am/sock attach -r -t =agent-alpha-eve"},
		{"open the pane of a message's agent", []string{"tab", "o"}, []string{"open alpha/eve"}, "watch it with:"},
		{"retry asks first", []string{"tab", "j", "r"}, nil, "retry MSG_LEAD_0000000e for alpha/eve? Look at its pane first (o)"},
		{"retry, yes", []string{"tab", "j", "r", "y"}, []string{"retry " + ref(idTyped)}, "retry MSG_LEAD_0000000e: pending again"},
		{"retry, no", []string{"tab", "j", "r", "n"}, nil, "not done"},
		{"only a typed or failed message is retried", []string{"tab", "r"}, nil, "MSG_LEAD_0000000d is deferred: only a typed or failed message is retried"},
		{"handled, yes", []string{"tab", "h", "y"}, []string{"handle " + ref(idDeferred)}, "MSG_LEAD_0000000d is marked handled: it will not be typed"},
		{"nothing left to handle in a submitted message", []string{"tab", "f", "f", "j", "h"}, nil, "is submitted: there is nothing left to handle"},
		{"enter on an agent shows its messages", []string{"j", "j", "enter"}, nil, "2 shown · filter: alpha/eve (esc clears)"},
		{"enter on a message opens it", []string{"tab", "enter"}, []string{"history " + ref(idDeferred)}, "text of MSG_LEAD_0000000d"},
		{"deliver from a message", []string{"tab", "enter", "d"}, []string{"history " + ref(idDeferred), "deliver alpha"}, "deliver alpha:"},
		{"help", []string{"?"}, nil, "r           retry a typed or failed message, after looking at its pane"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fa := &fakeActions{open: service.OpenResult{Command: "tmux -S /tmp/am/sock attach -r -t =agent-alpha-eve"}}
			m, _ := newModel(t, fa, Options{})
			press(m, tt.keys...)
			if got := fa.Calls(); !slices.Equal(got, tt.calls) {
				t.Errorf("calls %q, want %q", got, tt.calls)
			}
			view := m.View()
			if !strings.Contains(view, tt.screen) {
				t.Errorf("the screen lacks %q:\n%s", tt.screen, view)
			}
			checkScreen(t, view, 80, 24)
		})
	}
}

// A second action waits for the first to finish.
func TestOneActionAtATime(t *testing.T) {
	fa := &fakeActions{}
	m, _ := newModel(t, fa, Options{})
	_, first := m.Update(key("d"))
	_, second := m.Update(key("d"))
	if first == nil || second != nil || !strings.Contains(m.View(), "deliver alpha is still running") {
		t.Errorf("a second deliver while one runs: %v\n%s", second, m.View())
	}
	m.Update(first())
	if _, again := m.Update(key("d")); again == nil {
		t.Error("no deliver after the first one finished")
	}
}

// The filter box takes team:, agent:, state: and words.
func TestFilter(t *testing.T) {
	m, _ := newModel(t, &fakeActions{}, Options{})
	press(m, "/")
	typeText(m, "state:typed")
	press(m, "enter")
	view := m.View()
	if !strings.Contains(view, "1 shown · filter: state:typed") || strings.Contains(view, idDeferred) || !strings.Contains(view, idTyped) {
		t.Errorf("filtered on state:typed:\n%s", view)
	}
	press(m, "esc")
	if view := m.View(); !strings.Contains(view, idDeferred) || strings.Contains(view, "filter:") {
		t.Errorf("esc did not clear the filter:\n%s", view)
	}
	for in, want := range map[string]filter{
		"alpha/eve state:open":  {team: "alpha", agent: "eve", state: "open"},
		"team:beta agent:x dlg": {team: "beta", agent: "x", words: []string{"dlg"}},
		"agent:alpha/eve":       {team: "alpha", agent: "eve"},
	} {
		if got := parseFilter(in); got.String() != want.String() {
			t.Errorf("parseFilter(%q) = %q, want %q", in, got, want)
		}
	}
}

// The detail screen shows the message, its last verdict and its
// history, and follows the history as events about it come.
func TestDetail(t *testing.T) {
	fa := &fakeActions{history: []service.HistoryCopy{{Team: "alpha", Inbox: "eve", Message: env(idDeferred, "lead", "deferred", "dialog", 0), Recorded: mailbox.StateTyping,
		Delivery: []mailbox.Delivery{{State: mailbox.StateTyping, Attempts: 1, Updated: t0}, {State: mailbox.StateDeferred, Attempts: 1, LastVerdict: "not ready: dialog", Updated: t0.Add(time.Second)}}}}}
	m, _ := newModel(t, fa, Options{})
	press(m, "tab", "enter")
	view := m.View()
	for _, want := range []string{"MSG_LEAD_0000000d  lead → alpha/eve  (text)", "deferred: dialog · 1 attempt", "text of MSG_LEAD_0000000d", "HISTORY",
		"12:00:00.000  recorded, typing", "12:00:01.000  deferred  attempt 1  not ready: dialog", "esc back"} {
		if !strings.Contains(view, want) {
			t.Errorf("the detail lacks %q:\n%s", want, view)
		}
	}
	checkScreen(t, view, 80, 24)
	_, cmd := m.Update(updateMsg{At: t0, Events: []eventlog.Event{{Type: "message.submitted", Message: idDeferred}}})
	if cmd == nil {
		t.Fatal("an event about the message opened did not read its history again")
	}
	press(m, "esc")
	if strings.Contains(m.View(), "HISTORY") {
		t.Error("esc did not go back to the list")
	}
}

// Alerts fire once per condition, to the notifier and on the screen.
func TestAlertsInTop(t *testing.T) {
	n := &fakeNotifier{}
	m, c := newModel(t, &fakeActions{}, Options{Notifier: n, Rules: alerts.Rules{Dialog: 4 * time.Minute, MessageWait: 10 * time.Minute, Typed: true}})
	m.tick = func() tea.Cmd { return nil }
	tickAt := func() {
		if _, cmd := m.Update(tickMsg(c.now)); cmd != nil {
			m.Update(cmd()) // the notifications
		}
	}
	tickAt()
	n.mu.Lock()
	var got []string
	for _, a := range n.got {
		got = append(got, string(a.Event)+" "+a.Team+"/"+a.Agent+" "+a.MessageID)
	}
	n.mu.Unlock()
	slices.Sort(got)
	if want := []string{"agent_dialog alpha/eve ", "delivery_typed alpha/eve " + idTyped}; !slices.Equal(got, want) {
		t.Errorf("notified %q, want %q", got, want)
	}
	view := m.View()
	for _, want := range []string{"2 alerts", "! alpha/eve has been in a dialog for 5m", "! alpha/eve: MSG_LEAD_0000000e was typed, not submitted"} {
		if !strings.Contains(view, want) {
			t.Errorf("the screen lacks %q:\n%s", want, view)
		}
	}
	checkScreen(t, view, 80, 24)
	c.now = c.now.Add(6 * time.Minute) // both messages pass 10m
	tickAt()
	if len(n.got) != 4 || n.got[2].Event != alerts.MessageWaiting || n.got[3].Event != alerts.MessageWaiting {
		t.Errorf("after 11m: notified %+v; want both messages waiting once more", n.got)
	}
	tickAt()
	if len(n.got) != 4 {
		t.Errorf("a condition that still holds fired again: %d alerts", len(n.got))
	}
}

// Colour only adds to the words: without it (NO_COLOR) there is no
// escape at all, and the selection is still marked; with 256 colours the
// states are coloured.
func TestColours(t *testing.T) {
	plain, _ := newModel(t, &fakeActions{}, Options{Colors: termenv.Ascii})
	if v := plain.View(); strings.Contains(v, "\x1b") || !strings.Contains(v, "> alpha/ana") {
		t.Errorf("without colour:\n%q", v)
	}
	coloured, _ := newModel(t, &fakeActions{}, Options{Colors: termenv.ANSI256})
	v := coloured.View()
	if !strings.Contains(v, "\x1b[") || !strings.Contains(v, "38;5;203") || !strings.Contains(v, "dialog 5m") {
		t.Errorf("256 colours: no red dialog in\n%q", v)
	}
}

// Any size from 80x24 up keeps every line within the screen; a large one
// shows the details there is room for.
func TestSizes(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {100, 30}, {200, 50}, {80, 12}} {
		m, _ := newModel(t, &fakeActions{}, Options{})
		m.Update(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
		checkScreen(t, m.View(), size[0], size[1])
		press(m, "tab", "enter")
		checkScreen(t, m.View(), size[0], size[1])
	}
	m, _ := newModel(t, &fakeActions{}, Options{})
	m.Update(tea.WindowSizeMsg{Width: 200, Height: 50})
	if v := m.View(); !strings.Contains(v, "selection menu: ❯ 1. Yes") || !strings.Contains(v, "text of "+idDeferred) {
		t.Errorf("200 columns show no detail or text:\n%s", v)
	}
}

// An agent's state change starts its clock; one that leaves the server
// keeps its inbox as no-session.
func TestAgentStateSince(t *testing.T) {
	m, c := newModel(t, &fakeActions{}, Options{})
	screens, _ := team()
	screens.At = c.now
	screens.Screens.Agents[2].State = "ready"
	screens.Screens.Agents = screens.Screens.Agents[1:]
	m.Update(updateMsg(screens))
	c.now = c.now.Add(2 * time.Minute)
	view := m.View()
	for _, want := range []string{"alpha/ana         no-session", "alpha/eve         ready ", "alpha/bob         busy 7m"} {
		if !strings.Contains(view, want) {
			t.Errorf("the screen lacks %q:\n%s", want, view)
		}
	}
}

// synthetic is agents agents in teams of 10 and msgs messages among them,
// a tenth of them waiting: top's load at the scale.
func synthetic(agents, msgs int) (Update, Update) {
	screens := &service.ScreensResult{Socket: "/tmp/am/sock"}
	states := []string{"ready", "ready", "ready", "busy", "busy", "dialog", "draft", "unknown"}
	for i := range agents {
		screens.Agents = append(screens.Agents, service.AgentScreen{Team: fmt.Sprintf("t%02d", i/10), Agent: fmt.Sprintf("a%03d", i),
			Session: fmt.Sprintf("agent-t%02d-a%03d", i/10, i), Pane: fmt.Sprintf("%%%d", i), Command: "claude", Profile: "claude", State: states[i%len(states)]})
	}
	boxes := map[inboxKey][]mailbox.Envelope{}
	for i := range msgs {
		to := i % agents
		k := inboxKey{fmt.Sprintf("t%02d", to/10), fmt.Sprintf("a%03d", to)}
		state, reason := "submitted", ""
		if i%10 == 0 {
			state, reason = "deferred", "busy"
		}
		boxes[k] = append(boxes[k], env(fmt.Sprintf("MSG_A%03d_%08x", (i+1)%agents, i), fmt.Sprintf("a%03d", (i+1)%agents), state, reason, i/100))
	}
	mail := Update{At: t0, Full: true}
	for k, envs := range boxes {
		mail.Inboxes = append(mail.Inboxes, Inbox{Team: k.Team, Agent: k.Agent, Messages: envs})
	}
	return Update{At: t0, Screens: screens}, mail
}

// One frame at 500 agents and 10,000 messages: an inbox changed (an event
// came), then the screen is drawn.
func BenchmarkFrame(b *testing.B) {
	screens, mail := synthetic(500, 10000)
	m := New(Options{Actions: &fakeActions{}, Now: func() time.Time { return t0.Add(2 * time.Hour) }, Colors: termenv.ANSI256})
	m.Update(tea.WindowSizeMsg{Width: 160, Height: 50})
	m.Update(updateMsg(screens))
	m.Update(updateMsg(mail))
	one := Update{At: t0, Inboxes: []Inbox{mail.Inboxes[0]}}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		m.Update(updateMsg(one))
		_ = m.View()
	}
}

// A frame with nothing changed: a key that moves the selection, or the
// tick that ages every row.
func BenchmarkFrameIdle(b *testing.B) {
	screens, mail := synthetic(500, 10000)
	m := New(Options{Actions: &fakeActions{}, Now: func() time.Time { return t0.Add(2 * time.Hour) }, Colors: termenv.ANSI256})
	m.Update(tea.WindowSizeMsg{Width: 160, Height: 50})
	m.Update(updateMsg(screens))
	m.Update(updateMsg(mail))
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if i%2 == 0 {
			m.Update(key("j"))
		} else {
			m.Update(key("tab"))
		}
		_ = m.View()
	}
}
