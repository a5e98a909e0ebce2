package tui

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/muesli/termenv"

	"github.com/agentmsg/agentmsg/alerts"
	"github.com/agentmsg/agentmsg/eventlog"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/service"
)

// Notifier tells the world of an alert: *alerts.Notifier.
type Notifier interface {
	Enabled() bool
	Notify(ctx context.Context, a alerts.Alert) error
}

// Options are what a Model is built from.
type Options struct {
	Ctx      context.Context // ends the actions in flight when top quits
	Actions  Actions
	Updates  <-chan Update
	Rules    alerts.Rules
	Notifier Notifier
	Now      func() time.Time
	// Colors is the terminal's colour profile: termenv.Ascii for none
	// (the zero value is true colour, as termenv's).
	Colors termenv.Profile
}

type pane int

const (
	agentsPane pane = iota
	messagesPane
)

type mode int

const (
	listMode mode = iota
	detailMode
	helpMode
	alertsMode
)

// Model is agentmsg top: what the agents and their messages are doing,
// drawn from updates and redrawn as they come (and once a second, as
// ages grow). Everything it does goes through Actions.
type Model struct {
	ctx      context.Context
	actions  Actions
	updates  <-chan Update
	notifier Notifier
	engine   alerts.Engine
	now      func() time.Time
	st       *state
	styles   styles

	width, height int
	mode          mode
	focus         pane
	byAttention   bool // agents that need a look first

	agentSel inboxKey // the selected agent
	msgSel   rowKey   // the selected message row
	agentTop int      // the first agent row shown
	msgTop   int

	filter      filter
	editing     bool // typing a filter
	input       textinput.Model
	shown       []msgRow // the messages the filter lets through
	shownFor    int      // the state version shown was made for
	shownFilter string

	detail  *msgRow // the message opened (detailMode)
	history []service.HistoryCopy
	histErr error

	confirm    *confirmation
	running    string // the action in flight, if any
	status     string // what the last action did
	statusBad  bool
	notifyErr  error
	lastUpdate time.Time
	tick       func() tea.Cmd // the next second's tick
}

// confirmation is an action waiting for the person's yes.
type confirmation struct {
	prompt string
	run    tea.Cmd
	what   string
}

// The messages the model handles besides bubbletea's.
type (
	updateMsg Update
	tickMsg   time.Time
	doneMsg   struct {
		text   string
		failed bool
	}
	historyMsg struct {
		row    rowKey
		copies []service.HistoryCopy
		err    error
	}
	notifiedMsg struct{ err error }
)

// New builds the model.
func New(o Options) *Model {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Ctx == nil {
		o.Ctx = context.Background()
	}
	in := textinput.New()
	in.Prompt = "filter: "
	in.Placeholder = "team:alpha agent:ana state:open (or alpha/ana, a word)"
	in.CharLimit = 200
	return &Model{ctx: o.Ctx, actions: o.Actions, updates: o.Updates, notifier: o.Notifier, now: o.Now,
		engine: alerts.Engine{Rules: o.Rules}, st: newState(), styles: newStyles(o.Colors),
		width: 80, height: 24, input: in, shownFor: -1, tick: tick}
}

func (m *Model) Init() tea.Cmd { return tea.Batch(m.waitUpdate(), m.tick()) }

// waitUpdate waits for the source's next update.
func (m *Model) waitUpdate() tea.Cmd {
	if m.updates == nil {
		return nil
	}
	ch := m.updates
	return func() tea.Msg {
		u, ok := <-ch
		if !ok {
			return nil
		}
		return updateMsg(u)
	}
}

// tick comes once a second: ages grow, and alerts are checked.
func tick() tea.Cmd {
	return tea.Tick(time.Second, func(t time.Time) tea.Msg { return tickMsg(t) })
}

func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		return m, nil
	case updateMsg:
		m.st.apply(Update(msg))
		m.lastUpdate = msg.At
		var cmd tea.Cmd
		if m.detail != nil && mentions(msg.Events, m.detail) {
			cmd = m.loadHistory(*m.detail)
		}
		return m, tea.Batch(m.waitUpdate(), cmd)
	case tickMsg:
		return m, tea.Batch(m.tick(), m.checkAlerts())
	case doneMsg:
		m.running, m.status, m.statusBad = "", msg.text, msg.failed
		return m, nil
	case historyMsg:
		if m.detail != nil && m.detail.rowID() == msg.row {
			m.history, m.histErr = msg.copies, msg.err
		}
		return m, nil
	case notifiedMsg:
		m.notifyErr = msg.err
		return m, nil
	case tea.KeyMsg:
		return m, m.key(msg)
	}
	return m, nil
}

// mentions reports whether an event is about row's message.
func mentions(evs []eventlog.Event, row *msgRow) bool {
	for _, e := range evs {
		if e.Message == string(row.env.ID) {
			return true
		}
	}
	return false
}

// checkAlerts fires the alerts whose conditions now hold, and tells the
// notifier of them in the background, one after another.
func (m *Model) checkAlerts() tea.Cmd {
	fired, _ := m.engine.Observe(m.st.observation(m.now()))
	if len(fired) == 0 || m.notifier == nil || !m.notifier.Enabled() {
		return nil
	}
	n, ctx := m.notifier, m.ctx
	return func() tea.Msg {
		var errs []error
		for _, a := range fired {
			errs = append(errs, n.Notify(ctx, a))
		}
		return notifiedMsg{errors.Join(errs...)}
	}
}

// key acts on one key press.
func (m *Model) key(k tea.KeyMsg) tea.Cmd {
	if k.String() == "ctrl+c" {
		return tea.Quit
	}
	if m.confirm != nil {
		c := m.confirm
		m.confirm = nil
		if k.String() == "y" || k.String() == "Y" {
			m.running, m.status, m.statusBad = c.what, c.what+"…", false
			return c.run
		}
		m.status, m.statusBad = "not done", false
		return nil
	}
	if m.editing {
		return m.editFilter(k)
	}
	switch m.mode {
	case helpMode, alertsMode:
		if k.String() == "q" {
			return tea.Quit
		}
		m.mode = listMode
		return nil
	case detailMode:
		return m.detailKey(k)
	}
	return m.listKey(k)
}

func (m *Model) listKey(k tea.KeyMsg) tea.Cmd {
	switch k.String() {
	case "q":
		return tea.Quit
	case "tab", "shift+tab", "left", "right":
		m.focus = 1 - m.focus
	case "up", "k":
		m.move(-1)
	case "down", "j":
		m.move(1)
	case "pgup":
		m.move(-m.pageRows())
	case "pgdown", " ":
		m.move(m.pageRows())
	case "home", "g":
		m.move(-1 << 30)
	case "end", "G":
		m.move(1 << 30)
	case "enter":
		return m.enter()
	case "esc":
		m.filter = filter{}
		m.status = ""
	case "/":
		m.editing = true
		m.input.SetValue(m.filter.String())
		m.input.CursorEnd()
		return m.input.Focus()
	case "f":
		m.filter.state = nextState(m.filter.state)
	case "s":
		m.byAttention = !m.byAttention
	case "?":
		m.mode = helpMode
	case "!":
		m.mode = alertsMode
	case "d":
		return m.deliver(m.selectedTeam())
	case "D":
		return m.deliver("")
	case "o":
		return m.open()
	case "r":
		if row, ok := m.selectedMessage(); ok {
			return m.askRetry(row)
		}
		m.say("select a message to retry (tab to the messages)", true)
	case "h":
		if row, ok := m.selectedMessage(); ok {
			return m.askHandle(row)
		}
		m.say("select a message to mark handled (tab to the messages)", true)
	}
	return nil
}

func (m *Model) detailKey(k tea.KeyMsg) tea.Cmd {
	row := *m.detail
	switch k.String() {
	case "q":
		return tea.Quit
	case "esc", "backspace", "left", "enter":
		m.mode, m.detail = listMode, nil
	case "d":
		return m.deliver(row.key.Team)
	case "o":
		return m.openAgent(row.key)
	case "r":
		return m.askRetry(row)
	case "h":
		return m.askHandle(row)
	}
	return nil
}

func (m *Model) editFilter(k tea.KeyMsg) tea.Cmd {
	switch k.String() {
	case "enter":
		m.filter, m.editing = parseFilter(m.input.Value()), false
		m.input.Blur()
		m.focus, m.msgTop = messagesPane, 0
		return nil
	case "esc":
		m.editing = false
		m.input.Blur()
		return nil
	}
	var cmd tea.Cmd
	m.input, cmd = m.input.Update(k)
	return cmd
}

// say puts a line in the status bar.
func (m *Model) say(text string, bad bool) { m.status, m.statusBad = text, bad }

// enter opens what is selected: an agent's messages, a message's detail.
func (m *Model) enter() tea.Cmd {
	if m.focus == agentsPane {
		if a, ok := m.selectedAgent(); ok {
			m.filter.team, m.filter.agent = a.key.Team, a.key.Agent
			m.focus, m.msgTop = messagesPane, 0
		}
		return nil
	}
	row, ok := m.selectedMessage()
	if !ok {
		return nil
	}
	m.mode, m.detail, m.history, m.histErr = detailMode, &row, nil, nil
	return m.loadHistory(row)
}

func (m *Model) loadHistory(row msgRow) tea.Cmd {
	a, ctx := m.actions, m.ctx
	return func() tea.Msg {
		copies, err := a.History(ctx, row.ref())
		return historyMsg{row: row.rowID(), copies: copies, err: err}
	}
}

// busy refuses a second action while one runs, and says so.
func (m *Model) busy() bool {
	if m.running != "" {
		m.say(m.running+" is still running", true)
		return true
	}
	return false
}

func (m *Model) deliver(team string) tea.Cmd {
	if m.busy() {
		return nil
	}
	what := "deliver " + team
	if team == "" {
		what = "deliver to every team"
	}
	m.running, m.status, m.statusBad = what, what+"…", false
	a, ctx := m.actions, m.ctx
	return func() tea.Msg {
		res, err := a.Deliver(ctx, team)
		label := team
		if team == "" {
			label = "to every team"
		}
		return doneMsg{deliverWords(label, res, err), err != nil}
	}
}

func (m *Model) open() tea.Cmd {
	if m.focus == messagesPane {
		if row, ok := m.selectedMessage(); ok {
			return m.openAgent(row.key)
		}
	}
	if a, ok := m.selectedAgent(); ok {
		return m.openAgent(a.key)
	}
	return nil
}

func (m *Model) openAgent(k inboxKey) tea.Cmd {
	if m.busy() {
		return nil
	}
	m.running = "open " + k.String()
	a, ctx := m.actions, m.ctx
	return func() tea.Msg {
		res, err := a.OpenPane(ctx, k.Team, k.Agent)
		return doneMsg{openWords(k, res, err), err != nil}
	}
}

// retryable and handleable are the states each action applies to (the
// service says the same; asking first spares a pointless question).
var (
	retryable  = []mailbox.DeliveryState{mailbox.StateTyped, mailbox.StateFailed}
	handleable = []mailbox.DeliveryState{mailbox.StatePending, mailbox.StateDeferred, mailbox.StateTyping, mailbox.StateTyped, mailbox.StateFailed}
)

func (m *Model) askRetry(row msgRow) tea.Cmd {
	if !inState(row, retryable) {
		m.say(string(row.env.ID)+" is "+row.state()+": only a typed or failed message is retried", true)
		return nil
	}
	if m.busy() {
		return nil
	}
	a, ctx, ref := m.actions, m.ctx, row.ref()
	m.confirm = &confirmation{
		prompt: "retry " + string(ref.ID) + " for " + row.key.String() + "? Look at its pane first (o): it is typed again only where nothing of it shows. y/n",
		what:   "retry " + string(ref.ID),
		run: func() tea.Msg {
			res, err := a.Retry(ctx, ref)
			return doneMsg{retryWords(ref, res, err), err != nil}
		},
	}
	return nil
}

func (m *Model) askHandle(row msgRow) tea.Cmd {
	if !inState(row, handleable) {
		m.say(string(row.env.ID)+" is "+row.state()+": there is nothing left to handle", true)
		return nil
	}
	if m.busy() {
		return nil
	}
	a, ctx, ref := m.actions, m.ctx, row.ref()
	m.confirm = &confirmation{
		prompt: "mark " + string(ref.ID) + " for " + row.key.String() + " handled? It will never be typed. y/n",
		what:   "mark " + string(ref.ID) + " handled",
		run: func() tea.Msg {
			_, err := a.Handle(ctx, ref)
			return doneMsg{handleWords(ref, err), err != nil}
		},
	}
	return nil
}

func inState(row msgRow, states []mailbox.DeliveryState) bool {
	return row.env.Delivery != nil && slices.Contains(states, row.env.Delivery.State)
}

// selectedTeam is the team of what is selected: the agent's, the message's.
func (m *Model) selectedTeam() string {
	if m.focus == messagesPane {
		if row, ok := m.selectedMessage(); ok {
			return row.key.Team
		}
	}
	if a, ok := m.selectedAgent(); ok {
		return a.key.Team
	}
	return ""
}

// agentList is the agents in the order shown.
func (m *Model) agentList() []*agentRow { return m.st.sortedAgents(m.byAttention) }

// messageList is the messages the filter lets through, in the order shown.
func (m *Model) messageList() []msgRow {
	m.st.build()
	if f := m.filter.String(); m.shownFor != m.st.version || m.shownFilter != f {
		m.shownFor, m.shownFilter = m.st.version, f
		m.shown = m.shown[:0]
		for _, r := range m.st.msgs {
			if m.filter.match(r) {
				m.shown = append(m.shown, r)
			}
		}
	}
	return m.shown
}

// agentIndex is the selected agent's place in list (0 when it is gone).
func (m *Model) agentIndex(list []*agentRow) int {
	for i, a := range list {
		if a.key == m.agentSel {
			return i
		}
	}
	return 0
}

func (m *Model) msgIndex(list []msgRow) int {
	for i, r := range list {
		if r.rowID() == m.msgSel {
			return i
		}
	}
	return 0
}

func (m *Model) selectedAgent() (*agentRow, bool) {
	list := m.agentList()
	if len(list) == 0 {
		return nil, false
	}
	return list[m.agentIndex(list)], true
}

func (m *Model) selectedMessage() (msgRow, bool) {
	list := m.messageList()
	if len(list) == 0 {
		return msgRow{}, false
	}
	return list[m.msgIndex(list)], true
}

// move moves the selection of the focused pane by n rows.
func (m *Model) move(n int) {
	if m.focus == agentsPane {
		list := m.agentList()
		if len(list) > 0 {
			m.agentSel = list[clamp(m.agentIndex(list)+n, 0, len(list)-1)].key
		}
		return
	}
	list := m.messageList()
	if len(list) > 0 {
		m.msgSel = list[clamp(m.msgIndex(list)+n, 0, len(list)-1)].rowID()
	}
}

func clamp(v, lo, hi int) int { return max(lo, min(v, hi)) }
