package tui

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mattn/go-runewidth"

	"github.com/agentmsg/agentmsg/alerts"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
)

// fit cuts s to w cells (ending it with … when cut) and pads it to w.
func fit(s string, w int) string {
	if w <= 0 {
		return ""
	}
	return runewidth.FillRight(runewidth.Truncate(s, w, "…"), w)
}

// fitLeft is fit, aligned right: for numbers.
func fitLeft(s string, w int) string {
	if w <= 0 {
		return ""
	}
	return runewidth.FillLeft(runewidth.Truncate(s, w, "…"), w)
}

// one is text from another party, safe on one line.
func one(s string) string { return message.PrintableLine(s) }

// ago is how long ago t was, or "-" for none.
func (m *Model) ago(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return alerts.Age(m.now().Sub(t))
}

// layout is how many rows each part of the list screen gets.
type layout struct{ agents, messages, alerts int }

// lines the list screen always has: header, agents' column names,
// messages' title and column names, status, keys.
const fixedLines = 6

func (m *Model) layout(nAgents, nAlerts int) layout {
	l := layout{alerts: min(nAlerts, 3)}
	rest := max(0, m.height-fixedLines-l.alerts)
	l.agents = min(nAgents, max(1, rest*2/5))
	l.agents = min(l.agents, rest)
	l.messages = rest - l.agents
	return l
}

// pageRows is how far a page key moves in the focused pane.
func (m *Model) pageRows() int {
	l := m.layout(len(m.agentList()), len(m.engine.Active()))
	if m.focus == agentsPane {
		return max(1, l.agents-1)
	}
	return max(1, l.messages-1)
}

func (m *Model) View() string {
	var lines []string
	switch m.mode {
	case helpMode:
		lines = m.helpView()
	case alertsMode:
		lines = m.alertsView()
	case detailMode:
		lines = m.detailView()
	default:
		lines = m.listView()
	}
	for len(lines) < m.height {
		lines = append(lines, "")
	}
	return strings.Join(lines[:m.height], "\n")
}

// scroll keeps the selected row sel in a window of n rows from *top.
func scroll(top *int, sel, n, total int) {
	if n <= 0 {
		return
	}
	if sel < *top {
		*top = sel
	}
	if sel >= *top+n {
		*top = sel - n + 1
	}
	*top = clamp(*top, 0, max(0, total-n))
}

func (m *Model) listView() []string {
	agents, msgs, active := m.agentList(), m.messageList(), m.engine.Active()
	l := m.layout(len(agents), len(active))
	out := []string{m.headerLine(agents, active)}

	ac := m.agentColumns()
	out = append(out, m.styles.title.Render(m.columnsLine(agentsPane, ac.header())))
	ai := m.agentIndex(agents)
	scroll(&m.agentTop, ai, l.agents, len(agents))
	for i := m.agentTop; i < len(agents) && i < m.agentTop+l.agents; i++ {
		out = append(out, m.agentLine(ac, agents[i], i == ai))
	}
	for i := len(agents) - m.agentTop; i < l.agents; i++ {
		out = append(out, "")
	}

	out = append(out, m.messagesTitle(len(msgs)))
	mc := m.msgColumns()
	out = append(out, m.styles.title.Render(m.columnsLine(messagesPane, mc.header())))
	mi := m.msgIndex(msgs)
	scroll(&m.msgTop, mi, l.messages, len(msgs))
	for i := m.msgTop; i < len(msgs) && i < m.msgTop+l.messages; i++ {
		out = append(out, m.msgLine(mc, msgs[i], i == mi))
	}
	for i := len(msgs) - m.msgTop; i < l.messages; i++ {
		out = append(out, "")
	}

	for i := 0; i < l.alerts; i++ {
		text := m.alertLine(active[i])
		if i == l.alerts-1 && len(active) > l.alerts {
			text = fmt.Sprintf("! and %d more alerts: press ! to see them all", len(active)-i)
		}
		out = append(out, m.styles.alert.Render(fit(text, m.width)))
	}
	return append(out, m.statusLine(), m.keysLine(listKeys))
}

// headerLine says where top looks and what it sees, with the time.
func (m *Model) headerLine(agents []*agentRow, active []alerts.Alert) string {
	notReady := 0
	for _, a := range agents {
		if a.State != "ready" && a.State != noSession {
			notReady++
		}
	}
	place := m.st.place
	if m.st.noServer {
		place += " (no tmux server)"
	}
	left := fmt.Sprintf("agentmsg top · %d agents, %d not ready · %d open of %d messages · %d alerts · %s",
		countSessions(agents), notReady, m.st.nOpen, len(m.st.msgs), len(active), one(place))
	clock := m.now().Format("15:04:05")
	w := m.width - len(clock) - 1
	return m.styles.header.Render(fit(left, w) + " " + clock)
}

func countSessions(agents []*agentRow) int {
	n := 0
	for _, a := range agents {
		if a.Session != "" {
			n++
		}
	}
	return n
}

// columnsLine is a pane's column names, marked when the pane has focus.
func (m *Model) columnsLine(p pane, names string) string {
	mark := "  "
	if m.focus == p {
		mark = "▸ "
	}
	return fit(mark+names, m.width)
}

// columns are widths, in cells, of a table's columns.
type columns []int

// row joins cells, each fit to its column, one space apart.
func (c columns) row(cells ...string) string {
	var b strings.Builder
	for i, w := range c {
		if w <= 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(fit(cells[i], w))
	}
	return b.String()
}

// The agents' table: name, state (and for how long), CLI, messages
// waiting, the oldest's age, the last message in and out, the state's
// detail where there is room.
type agentCols struct{ columns }

func (m *Model) agentColumns() agentCols {
	c := columns{16, 13, 14, 4, 6, 9, 9, 0}
	extra := m.width - 79
	grow := func(i, most int) {
		n := clamp(extra, 0, most)
		c[i] += n
		extra -= n
	}
	grow(0, 14)
	grow(2, 8)
	grow(5, 10)
	grow(6, 10)
	if extra > 10 {
		c[7] = extra - 1
	}
	return agentCols{c}
}

func (c agentCols) header() string {
	return c.row("AGENT", "STATE", "CLI", "WAIT", "OLDEST", "LAST IN", "LAST OUT", "DETAIL")
}

func (m *Model) agentLine(c agentCols, a *agentRow, selected bool) string {
	state := a.State
	if !a.Since.IsZero() && a.State != "ready" && a.State != noSession {
		state += " " + m.ago(a.Since)
	}
	cli := a.Command
	if a.Profile != "" && a.Profile != a.Command {
		cli += "/" + a.Profile
	}
	wait, oldest := "", ""
	if a.Waiting > 0 {
		wait, oldest = strconv.Itoa(a.Waiting), m.ago(a.Oldest)
	}
	last := func(r msgRef) string {
		if r.At.IsZero() {
			return "-"
		}
		return m.ago(r.At) + " " + r.Peer
	}
	cells := []string{a.key.String(), state, one(cli), wait, oldest, one(last(a.LastIn)), one(last(a.LastOut)), one(a.Detail)}
	return m.rowLine(agentsPane, selected, c.columns, cells, 1, a.State, 3)
}

// rowLine draws one table row: its marker when selected in the focused
// pane, the state cell coloured, the number cell aligned right.
func (m *Model) rowLine(p pane, selected bool, c columns, cells []string, stateCell int, state string, number int) string {
	var b strings.Builder
	mark := "  "
	if selected && m.focus == p {
		mark = "> "
	}
	b.WriteString(mark)
	first := true
	for i, w := range c {
		if w <= 0 {
			continue
		}
		if !first {
			b.WriteByte(' ')
		}
		first = false
		if i == number {
			b.WriteString(fitLeft(cells[i], w))
			continue
		}
		cell := fit(cells[i], w)
		if i == stateCell && !(selected && m.focus == p) {
			cell = m.styles.state(state, cell)
		}
		b.WriteString(cell)
	}
	line := b.String()
	if selected && m.focus == p {
		return m.styles.selected.Render(line)
	}
	return line
}

// The messages' table: age (how long an open one has waited; how old a
// settled one's verdict is), id, inbox, sender, state, reason, and the
// text where there is room.
type msgCols struct{ columns }

func (m *Model) msgColumns() msgCols {
	c := columns{5, 20, 15, 8, 9, 12, 0}
	extra := m.width - 77
	grow := func(i, most int) {
		n := clamp(extra, 0, most)
		c[i] += n
		extra -= n
	}
	grow(2, 8)
	grow(5, 8)
	grow(3, 4)
	if extra > 10 {
		c[6] = extra - 1
	}
	return msgCols{c}
}

func (c msgCols) header() string { return c.row("AGE", "ID", "TO", "FROM", "STATE", "REASON", "TEXT") }

func (m *Model) msgLine(c msgCols, r msgRow, selected bool) string {
	age := m.ago(r.env.Timestamp)
	if !r.open() {
		age = m.ago(r.updated())
	}
	cells := []string{age, one(string(r.env.ID)), r.key.String(), one(r.env.From), r.state(), one(r.reason()),
		one(strings.Join(strings.Fields(r.env.Content), " "))}
	return m.rowLine(messagesPane, selected, c.columns, cells, 4, r.state(), -1)
}

// messagesTitle counts the messages, names the filter, or is the filter
// being typed.
func (m *Model) messagesTitle(shown int) string {
	if m.editing {
		return fit(m.input.View(), m.width)
	}
	s := fmt.Sprintf("MESSAGES %d open, %d kept", m.st.nOpen, len(m.st.msgs))
	if !m.filter.empty() {
		s += fmt.Sprintf(" · %d shown · filter: %s (esc clears)", shown, one(m.filter.String()))
	}
	return m.styles.title.Render(fit(s, m.width))
}

// statusLine is a question, what runs, what the last action did, or what
// went wrong in watching.
func (m *Model) statusLine() string {
	switch {
	case m.confirm != nil:
		return m.styles.alert.Render(fit(m.confirm.prompt, m.width))
	case m.status != "" && m.statusBad:
		return m.styles.alert.Render(fit(one(m.status), m.width))
	case m.running != "":
		return fit(m.running+"…", m.width)
	case m.status != "":
		return fit(one(m.status), m.width)
	case m.st.screenErr != nil:
		return m.styles.alert.Render(fit("tmux: "+one(m.st.screenErr.Error()), m.width))
	case m.st.mailErr != nil:
		return m.styles.alert.Render(fit("mailbox: "+one(m.st.mailErr.Error()), m.width))
	case m.notifyErr != nil:
		return m.styles.alert.Render(fit(one(m.notifyErr.Error()), m.width))
	}
	return ""
}

// The keys each screen names on its last line, the most used first: what
// does not fit is in the help.
var (
	listKeys   = []string{"d", "deliver", "o", "pane", "r", "retry", "h", "handled", "/", "filter", "?", "help", "q", "quit", "tab", "pane", "f", "open/done", "s", "sort", "!", "alerts"}
	detailKeys = []string{"esc", "back", "d", "deliver", "o", "pane", "r", "retry", "h", "handled", "q", "quit"}
)

func (m *Model) keysLine(keys []string) string {
	var b strings.Builder
	width := 0
	for i := 0; i < len(keys); i += 2 {
		add := runewidth.StringWidth(keys[i] + " " + keys[i+1])
		if width > 0 {
			add += 2
		}
		if width+add > m.width {
			break
		}
		if width > 0 {
			b.WriteString("  ")
		}
		b.WriteString(m.styles.key.Render(keys[i]) + " " + keys[i+1])
		width += add
	}
	return b.String()
}

// alertLine words an active alert as it stands now.
func (m *Model) alertLine(a alerts.Alert) string {
	who := a.Team + "/" + a.Agent
	switch a.Event {
	case alerts.MessageWaiting:
		return fmt.Sprintf("! %s: %s has waited %s (%s)", who, a.MessageID, m.ago(a.Since), why(a.State, a.Reason))
	case alerts.AgentDialog:
		return fmt.Sprintf("! %s has been in a dialog for %s", who, m.ago(a.Since))
	case alerts.AgentDraft:
		return fmt.Sprintf("! %s has held a draft for %s", who, m.ago(a.Since))
	case alerts.DeliveryTyped:
		return fmt.Sprintf("! %s: %s was typed, not submitted: look (o), then retry (r) or mark handled (h)", who, a.MessageID)
	case alerts.DeliveryUnknown:
		return fmt.Sprintf("! %s: nothing shows whether %s arrived: look (o), then retry (r) or mark handled (h)", who, a.MessageID)
	}
	return "! " + a.Text
}

func why(state, reason string) string {
	if reason == "" {
		return state
	}
	return state + ": " + reason
}

func (m *Model) alertsView() []string {
	active := m.engine.Active()
	out := []string{m.styles.header.Render(fit(fmt.Sprintf("ALERTS: %d (any key goes back)", len(active)), m.width))}
	if len(active) == 0 {
		out = append(out, "nothing is stuck")
	}
	for i, a := range active {
		if len(out) == m.height-1 && i < len(active) {
			out = append(out, fmt.Sprintf("… and %d more", len(active)-i))
			break
		}
		out = append(out, m.styles.alert.Render(fit(one(m.alertLine(a)), m.width)))
	}
	return out
}

func (m *Model) helpView() []string {
	lines := []string{
		"agentmsg top: every agent and every message, live (any key goes back)",
		"",
		"tab, ←→     switch between agents and messages    ↑↓ j k, pgup pgdn, g G  move",
		"enter       an agent: show its messages; a message: its text and history",
		"d           deliver now: a pass over the selected team's inboxes (D: every team)",
		"o           open the agent's pane (inside its tmux server), else show how to watch it",
		"r           retry a typed or failed message, after looking at its pane",
		"h           mark a message handled: it is never typed",
		"/           filter messages: team:T agent:A state:S, T/A, or any word; esc clears",
		"f           show open messages, then settled ones, then all",
		"s           sort agents by name, or those needing a look first",
		"!           every alert",
		"q, ctrl+c   quit",
		"",
		"Agents: ready, busy, dialog, draft (a person's text in the box), unknown (no box",
		"recognised), exited, no-session; with how long top has seen them so.",
		"Messages: open ones first, the longest waiting at the top, then the newest verdicts.",
		"AGE is how long an open message has waited, else how old its verdict is.",
	}
	out := []string{m.styles.header.Render(fit("HELP", m.width))}
	for _, l := range lines {
		out = append(out, fit(l, m.width))
	}
	return out
}

func (m *Model) detailView() []string {
	r := *m.detail
	// The row as it is now: an update may have changed it.
	for _, cur := range m.messageList() {
		if cur.rowID() == r.rowID() {
			r = cur
			break
		}
	}
	e := r.env
	out := []string{m.styles.header.Render(fit(fmt.Sprintf("%s  %s → %s  (%s)", one(string(e.ID)), one(e.From), r.key, one(string(e.Type))), m.width))}
	state := "sent " + e.Timestamp.Local().Format("2006-01-02 15:04:05") + " (" + m.ago(e.Timestamp) + " ago) · " + m.styles.state(r.state(), why(r.state(), one(r.reason())))
	if d := e.Delivery; d != nil && d.Attempts == 1 {
		state += " · 1 attempt"
	} else if d != nil {
		state += fmt.Sprintf(" · %d attempts", d.Attempts)
	}
	out = append(out, state)
	if d := e.Delivery; d != nil && d.LastVerdict != "" {
		out = append(out, fit("last verdict: "+one(d.LastVerdict), m.width))
	}
	rule := m.styles.dim.Render(strings.Repeat("─", m.width))
	hist := m.historyLines(r)
	room := max(1, m.height-len(out)-len(hist)-5)
	out = append(out, rule)
	text := wrap(message.Printable(e.Content), m.width)
	if len(text) > room {
		text = append(text[:room-1], m.styles.dim.Render(fmt.Sprintf("… %d more lines", len(text)-room+1)))
	}
	out = append(out, text...)
	out = append(out, rule)
	out = append(out, hist...)
	for len(out) < m.height-2 {
		out = append(out, "")
	}
	return append(out[:m.height-2], m.statusLine(), m.keysLine(detailKeys))
}

// historyLines are the message's delivery records in this inbox.
func (m *Model) historyLines(r msgRow) []string {
	out := []string{m.styles.title.Render("HISTORY")}
	switch {
	case m.histErr != nil:
		return append(out, fit("  "+one(m.histErr.Error()), m.width))
	case m.history == nil:
		return append(out, "  reading…")
	}
	for _, c := range m.history {
		if c.Team != r.key.Team || c.Inbox != r.key.Agent {
			continue
		}
		// The first record is the one the message was stored with (log
		// says it so too): a message kept behind an older one is
		// recorded deferred, not mailbox-only.
		first, later := "recorded (mailbox only)", c.Delivery
		switch {
		case c.Unrecorded:
			first = "not recorded here yet"
		case c.Recorded == mailbox.StateInbox && len(c.Delivery) > 0:
			later = c.Delivery[1:]
		case c.Recorded != "" && len(c.Delivery) > 0:
			first, later = "recorded, "+string(c.Recorded), c.Delivery[1:]
		}
		out = append(out, fit("  "+c.Message.Timestamp.Local().Format("15:04:05.000")+"  "+first, m.width))
		for _, d := range later {
			line := fmt.Sprintf("  %s  %-9s attempt %d", d.Updated.Local().Format("15:04:05.000"), d.State, d.Attempts)
			if d.LastVerdict != "" {
				line += "  " + one(d.LastVerdict)
			}
			out = append(out, fit(line, m.width))
		}
	}
	// The newest steps matter most when there is no room for all.
	if most := max(3, m.height/3); len(out) > most {
		out = append([]string{out[0], fmt.Sprintf("  … %d earlier steps", len(out)-most)}, out[len(out)-most+2:]...)
	}
	return out
}

// wrap breaks text into lines of at most w cells.
func wrap(text string, w int) []string {
	var out []string
	for _, line := range strings.Split(strings.ReplaceAll(text, "\t", "    "), "\n") {
		for runewidth.StringWidth(line) > w {
			cut := runewidth.Truncate(line, w, "")
			if cut == "" { // a rune wider than the screen
				_, size := utf8.DecodeRuneInString(line)
				cut = line[:size]
			}
			out = append(out, cut)
			line = line[len(cut):]
		}
		out = append(out, line)
	}
	return out
}
