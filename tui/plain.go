package tui

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/agentmsg/agentmsg/alerts"
	"github.com/agentmsg/agentmsg/eventlog"
	"github.com/agentmsg/agentmsg/message"
	"github.com/agentmsg/agentmsg/service"
)

// Plain is top for a screen reader or a log: it writes what changes, one
// sentence a line, and never redraws; it reads commands, one a line.
type Plain struct {
	In       io.Reader // commands; at its end top goes on watching
	Out      io.Writer
	Actions  Actions
	Updates  <-chan Update
	Rules    alerts.Rules
	Notifier Notifier
	Now      func() time.Time

	st      *state
	engine  alerts.Engine
	gotMail bool // the mailbox was read whole
	started bool // the first look was summed up
}

// plainHelp lists the commands.
const plainHelp = `commands: agents; messages (the open ones); show ID; deliver [TEAM]; retry ID;
handled ID; open TEAM/AGENT; alerts; help; quit. An ID may be followed by TEAM/AGENT
when the message is in several inboxes.`

// Run writes changes and runs commands until ctx ends or "quit".
func (p *Plain) Run(ctx context.Context) error {
	if p.Now == nil {
		p.Now = time.Now
	}
	p.st, p.engine = newState(), alerts.Engine{Rules: p.Rules}
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(p.In)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
	}()
	results := make(chan string, 8)
	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()
	p.say("agentmsg top: watching; type help for the commands")
	updates := p.Updates
	for {
		select {
		case <-ctx.Done():
			return nil
		case u, ok := <-updates:
			if !ok {
				updates = nil
				continue
			}
			p.update(u)
		case <-ticker.C:
			p.checkAlerts(ctx, results)
		case line := <-lines:
			if p.command(ctx, strings.TrimSpace(line), results) {
				return nil
			}
		case r := <-results:
			p.say(r)
		}
	}
}

func (p *Plain) say(format string, args ...any) {
	fmt.Fprintf(p.Out, format+"\n", args...)
}

// update takes in an update and says what changed: once the screens and
// the mailbox were both read, a summary; after that, each change.
func (p *Plain) update(u Update) {
	changes := p.st.apply(u)
	p.gotMail = p.gotMail || u.Full
	if u.Err != nil {
		p.say("trouble watching: %s", one(u.Err.Error()))
	}
	if !p.started {
		if p.st.looked && p.gotMail {
			p.started = true
			p.sayAgents(false)
			p.say("%d messages are open, of %d kept", p.st.nOpen, len(p.st.msgs))
		}
		return
	}
	for _, c := range changes {
		p.sayChange(c)
	}
	for _, e := range u.Events {
		if line := eventLine(e); line != "" {
			p.say("%s", line)
		}
	}
}

// sayAgents sums up the agents, and names each one that is not ready (or
// every one, with all).
func (p *Plain) sayAgents(all bool) {
	p.st.build()
	counts := map[string]int{}
	n := 0
	for _, a := range p.st.agents {
		if a.Session == "" {
			continue
		}
		n++
		counts[a.State]++
	}
	var parts []string
	for st, c := range counts {
		parts = append(parts, fmt.Sprintf("%d %s", c, st))
	}
	sort.Strings(parts)
	place := one(p.st.place)
	if p.st.noServer {
		p.say("no tmux server runs at %s: no agents", place)
		return
	}
	p.say("%d agents on %s: %s", n, place, strings.Join(parts, ", "))
	for _, a := range p.st.agents {
		if a.Session != "" && (all || a.State != "ready") {
			p.say("%s", p.agentSentence(a))
		}
	}
}

func (p *Plain) agentSentence(a *agentRow) string {
	s := a.key.String() + " " + stateWords(a.State)
	if a.Detail != "" {
		s += " (" + one(a.Detail) + ")"
	}
	if a.Command != "" {
		s += ", running " + one(a.Command)
	}
	if a.Waiting > 0 {
		if a.Waiting == 1 {
			s += fmt.Sprintf(", 1 message waiting, for %s", alerts.Age(p.Now().Sub(a.Oldest)))
		} else {
			s += fmt.Sprintf(", %d messages waiting, the oldest for %s", a.Waiting, alerts.Age(p.Now().Sub(a.Oldest)))
		}
	}
	return s
}

func (p *Plain) sayChange(c agentChange) {
	switch {
	case c.appeared:
		p.say("%s appeared and %s", c.key, stateWords(c.to))
	case c.disappeared:
		p.say("%s is gone: its session ended", c.key)
	case c.detail != "":
		p.say("%s %s (%s)", c.key, stateWords(c.to), one(c.detail))
	default:
		p.say("%s %s", c.key, stateWords(c.to))
	}
}

// stateWords says an agent's state in a sentence: "is in a dialog".
func stateWords(state string) string {
	switch state {
	case "dialog":
		return "is in a dialog"
	case "draft":
		return "has a person's draft in its box"
	case "unknown":
		return "shows no input box agentmsg knows (unknown)"
	case service.Exited:
		return "has exited"
	case noSession:
		return "has no session"
	}
	return "is " + state
}

// eventLine is a sentence for a message event a person cares about; the
// steps inside one delivery (typing, pasted, pressed) are left out.
func eventLine(e eventlog.Event) string {
	if e.Type == eventlog.TypeLost {
		return fmt.Sprintf("%d events could not be written (%s); every inbox was read again", e.Lost, one(e.Reason))
	}
	kind, ok := strings.CutPrefix(string(e.Type), "message.")
	if !ok {
		return ""
	}
	switch kind {
	case "typing", "pasted", "pressed", "unseen":
		return ""
	case "replied":
		return fmt.Sprintf("%s/%s replied to %s with %s", e.Team, e.Agent, one(e.Message), one(e.Detail))
	}
	s := fmt.Sprintf("%s to %s/%s: %s", one(e.Message), e.Team, e.Agent, kind)
	if e.From != "" {
		s = fmt.Sprintf("%s from %s to %s/%s: %s", one(e.Message), one(e.From), e.Team, e.Agent, kind)
	}
	if e.Reason != "" {
		s += " (" + one(e.Reason) + ")"
	}
	return s
}

func (p *Plain) checkAlerts(ctx context.Context, results chan<- string) {
	fired, cleared := p.engine.Observe(p.st.observation(p.Now()))
	for _, a := range fired {
		p.say("alert: %s", one(a.Text))
	}
	for _, a := range cleared {
		p.say("alert cleared: %s", one(a.Text))
	}
	if len(fired) > 0 && p.Notifier != nil && p.Notifier.Enabled() {
		n := p.Notifier
		go func() {
			for _, a := range fired {
				if err := n.Notify(ctx, a); err != nil && ctx.Err() == nil {
					select {
					case results <- one(err.Error()):
					case <-ctx.Done():
					}
				}
			}
		}()
	}
}

// command runs one line the person typed; true means quit.
func (p *Plain) command(ctx context.Context, line string, results chan<- string) bool {
	word, rest, _ := strings.Cut(line, " ")
	rest = strings.TrimSpace(rest)
	run := func(f func() string) {
		go func() {
			select {
			case results <- f():
			case <-ctx.Done():
			}
		}()
	}
	switch word {
	case "":
	case "quit", "q", "exit":
		return true
	case "help", "?":
		p.say("%s", plainHelp)
	case "agents":
		p.sayAgents(true)
	case "messages":
		p.sayMessages()
	case "alerts":
		active := p.engine.Active()
		p.say("%d alerts", len(active))
		for _, a := range active {
			p.say("alert: %s", one(a.Text))
		}
	case "deliver":
		team := rest
		p.say("delivering…")
		run(func() string {
			res, err := p.Actions.Deliver(ctx, team)
			label := team
			if team == "" {
				label = "to every team"
			}
			return deliverWords(label, res, err)
		})
	case "open":
		k, ok := parseKey(rest)
		if !ok {
			p.say("open TEAM/AGENT: which agent?")
			break
		}
		run(func() string {
			res, err := p.Actions.OpenPane(ctx, k.Team, k.Agent)
			return openWords(k, res, err)
		})
	case "show", "retry", "handled":
		row, err := p.find(rest)
		if err != "" {
			p.say("%s", err)
			break
		}
		ref := row.ref()
		switch word {
		case "show":
			p.sayMessage(row)
			run(func() string { return historyText(p.Actions.History(ctx, ref)) })
		case "retry":
			run(func() string {
				res, err := p.Actions.Retry(ctx, ref)
				return retryWords(ref, res, err)
			})
		case "handled":
			run(func() string {
				_, err := p.Actions.Handle(ctx, ref)
				return handleWords(ref, err)
			})
		}
	default:
		p.say("no command %q; %s", one(word), plainHelp)
	}
	return false
}

// parseKey reads TEAM/AGENT.
func parseKey(s string) (inboxKey, bool) {
	t, a, ok := strings.Cut(s, "/")
	return inboxKey{t, a}, ok && t != "" && a != ""
}

// find is the one copy of message ID [TEAM/AGENT], or why there is none.
func (p *Plain) find(args string) (msgRow, string) {
	fields := strings.Fields(args)
	if len(fields) == 0 {
		return msgRow{}, "which message? give its id"
	}
	var in *inboxKey
	if len(fields) > 1 {
		k, ok := parseKey(fields[1])
		if !ok {
			return msgRow{}, "after the id, TEAM/AGENT names the inbox"
		}
		in = &k
	}
	p.st.build()
	var found []msgRow
	for _, r := range p.st.msgs {
		if strings.EqualFold(string(r.env.ID), fields[0]) && (in == nil || r.key == *in) {
			found = append(found, r)
		}
	}
	switch len(found) {
	case 0:
		return msgRow{}, "no message " + one(fields[0]) + " is kept here"
	case 1:
		return found[0], ""
	}
	var where []string
	for _, r := range found {
		where = append(where, r.key.String())
	}
	return msgRow{}, fmt.Sprintf("%s is in %d inboxes (%s): add TEAM/AGENT", one(fields[0]), len(found), strings.Join(where, ", "))
}

func (p *Plain) sayMessages() {
	p.st.build()
	p.say("%d messages are open, of %d kept", p.st.nOpen, len(p.st.msgs))
	for _, r := range p.st.msgs[:p.st.nOpen] {
		p.say("%s", p.messageSentence(r))
	}
}

func (p *Plain) messageSentence(r msgRow) string {
	s := fmt.Sprintf("%s from %s to %s: %s", one(string(r.env.ID)), one(r.env.From), r.key, r.state())
	if r.reason() != "" {
		s += " (" + one(r.reason()) + ")"
	}
	return s + ", sent " + alerts.Age(p.Now().Sub(r.env.Timestamp)) + " ago"
}

func (p *Plain) sayMessage(r msgRow) {
	p.say("%s", p.messageSentence(r))
	p.say("text: %s", one(r.env.Content))
}

// historyText words a message's delivery records, one sentence each.
func historyText(copies []service.HistoryCopy, err error) string {
	if err != nil {
		return "history: " + one(err.Error())
	}
	var b strings.Builder
	for _, c := range copies {
		if c.Unrecorded {
			fmt.Fprintf(&b, "history in %s/%s: not recorded there yet; the next deliver records it\n", c.Team, c.Inbox)
			continue
		}
		fmt.Fprintf(&b, "history in %s/%s: recorded %s", c.Team, c.Inbox, c.Message.Timestamp.Local().Format(time.TimeOnly))
		for _, d := range c.Delivery {
			fmt.Fprintf(&b, "; %s %s, attempt %d", d.Updated.Local().Format(time.TimeOnly), d.State, d.Attempts)
			if d.LastVerdict != "" {
				b.WriteString(", " + message.PrintableLine(d.LastVerdict))
			}
		}
		b.WriteString("\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}
