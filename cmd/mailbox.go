package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
	"github.com/agentmsg/agentmsg/target"
)

// mailboxCommands are the commands over the durable mailbox, for agents
// (run as a tool) and for scripts.
func mailboxCommands(f *Factory) []*cobra.Command {
	return []*cobra.Command{
		NewCmdInbox(f, nil),
		NewCmdWait(f, nil),
		NewCmdRequest(f, nil),
		NewCmdClaim(f, nil),
		NewCmdRequests(f, nil),
		NewCmdStatus(f, nil),
		NewCmdBoard(f, nil),
		NewCmdTeam(f, nil),
		NewCmdLog(f, nil),
	}
}

// MailboxDeps are what every mailbox command needs: the store, who the
// caller is, and where to print.
type MailboxDeps struct {
	IO       *IOStreams
	Mailbox  func() (*mailbox.Store, error)
	Identity func(ctx context.Context) (Identity, error)
	JSON     func() bool
	Now      func() time.Time
	// LiveAgents lists the agents of a team that run on the tmux server
	// now (nil, or an error: only inboxes count).
	LiveAgents func(ctx context.Context, team string) ([]string, error)
	// LiveTeams lists the teams with agent sessions on the tmux server
	// (nil, or an error: only the mailbox says which teams exist).
	LiveTeams func(ctx context.Context) ([]string, error)
}

// mailboxDeps reads the factory lazily: NewCmdRoot fills it in after
// the commands are built in some tests.
func mailboxDeps(f *Factory) MailboxDeps {
	return MailboxDeps{
		IO:       f.IO,
		Mailbox:  func() (*mailbox.Store, error) { return f.Mailbox() },
		Identity: func(ctx context.Context) (Identity, error) { return f.Identity(ctx) },
		JSON:     func() bool { return f.JSON },
		Now:      time.Now,
		LiveAgents: func(ctx context.Context, team string) ([]string, error) {
			d, err := f.Dispatcher()
			if err != nil {
				return nil, err
			}
			ts, err := d.Targets(ctx, team)
			names := make([]string, len(ts))
			for i, t := range ts {
				names[i] = t.Agent()
			}
			return names, err
		},
		LiveTeams: factoryLiveTeams(f),
	}
}

// knownTeam is nil when team exists (see knownTeam), else exit 3. Only
// a team named on the command line (named: a TEAM argument, or --team) is
// checked: the caller's own team, from the environment, the config file
// or its session, may have nothing stored yet.
func (d MailboxDeps) knownTeam(ctx context.Context, s *mailbox.Store, team string, named bool) error {
	if !named {
		return nil
	}
	return knownTeam(ctx, s, d.LiveTeams, team)
}

// jsonOut is a Factory that writeJSON can print through.
func (d MailboxDeps) jsonOut() *Factory { return &Factory{IO: d.IO} }

// jsonLine prints v as one line of a JSON-lines stream.
func (d MailboxDeps) jsonLine(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(d.IO.Out, "%s\n", jsonSafe(b))
	return err
}

// teamArg checks a team given on the command line.
func teamArg(team string) (string, error) {
	if err := target.ValidateTeam(team); err != nil {
		return "", err
	}
	return team, nil
}

// teamOrOwn is the team given in args[i], else the caller's; named says
// whether it was named on the command line (see knownTeam).
func teamOrOwn(ctx context.Context, d MailboxDeps, args []string, i int) (team string, named bool, err error) {
	if len(args) > i {
		team, err = teamArg(args[i])
		return team, true, err
	}
	id, err := d.Identity(ctx)
	if err != nil {
		return "", false, err
	}
	team, err = id.NeedTeam()
	return team, id.TeamNamed, err
}

// newEnvelope is a message from the caller, with a fresh id.
func newEnvelope(id Identity, to string, typ mailbox.Type, content string) (mailbox.Envelope, error) {
	mid, err := message.NewID(id.Sender, nil)
	if err != nil {
		return mailbox.Envelope{}, err
	}
	// Pending: the agents see it in their inbox, and deliver (--watch, or
	// the Stop hook) types it into their panes when they are ready.
	return mailbox.Envelope{ID: mid, From: id.Name, To: to, Type: typ, Content: content,
		Delivery: &mailbox.Delivery{State: mailbox.StatePending}}, nil
}

// msgFilter selects messages by sender, type and the message they answer;
// an empty field matches anything.
type msgFilter struct {
	Sender  string
	Type    string
	ReplyTo string
}

func (fl msgFilter) match(e mailbox.Envelope) bool {
	return (fl.Sender == "" || e.From == fl.Sender) &&
		(fl.Type == "" || string(e.Type) == fl.Type) &&
		(fl.ReplyTo == "" || string(e.ReplyTo) == fl.ReplyTo)
}

func (fl msgFilter) empty() bool { return fl == (msgFilter{}) }

// String says what the filter waits for, for people.
func (fl msgFilter) String() string {
	var parts []string
	if fl.Sender != "" {
		parts = append(parts, "from "+fl.Sender)
	}
	if fl.Type != "" {
		parts = append(parts, "of type "+fl.Type)
	}
	if fl.ReplyTo != "" {
		parts = append(parts, "replying to "+fl.ReplyTo)
	}
	return strings.Join(parts, ", ")
}

// suffix is String after a space, or "" for no filter.
func (fl msgFilter) suffix() string {
	if fl.empty() {
		return ""
	}
	return " " + fl.String()
}

// check rejects values no message can have, and spells the sender the
// one way senders are stored (target.ParseName).
func (fl *msgFilter) check() error {
	if fl.Sender != "" {
		name, err := target.ParseName(fl.Sender)
		if err != nil {
			return usagef("--sender: %v", err)
		}
		fl.Sender = name
	}
	if fl.ReplyTo != "" && !message.Valid(fl.ReplyTo) {
		return usagef("--reply-to %q is not a message id (MSG_<SENDER>_<8 hex>)", fl.ReplyTo)
	}
	if fl.Type != "" && strings.TrimLeft(fl.Type, "abcdefghijklmnopqrstuvwxyz-") != "" {
		return usagef("--type %q: types are lower-case words such as text, status, request, claim, task", fl.Type)
	}
	return nil
}

// msgLabel is what a message is, in brackets after its sender: "text",
// "request REQ_x", "reply to MSG_y".
func msgLabel(e mailbox.Envelope) string {
	parts := []string{string(e.Type)}
	if e.RequestID != "" {
		parts = append(parts, e.RequestID)
	}
	if e.ReplyTo != "" {
		parts = append(parts, "reply to "+string(e.ReplyTo))
	}
	if e.To == mailbox.Broadcast {
		parts = append(parts, "to all")
	}
	// The metadata a receiver dispatches on (state=blocked, accept=false).
	parts = append(parts, e.MetaPairs()...)
	return show(strings.Join(parts, ", "))
}

// indentRest indents every line of s after the first, so that a
// multi-line message stays under its heading.
func indentRest(s, indent string) string {
	return strings.ReplaceAll(s, "\n", "\n"+indent)
}

// writeMessage prints one message for a person: id, time, sender, label,
// then the content.
func writeMessage(w io.Writer, e mailbox.Envelope) {
	fmt.Fprintf(w, "[%s] %s from %s (%s): %s\n", show(string(e.ID)), e.Timestamp.Local().Format("2006-01-02 15:04:05"),
		show(e.From), msgLabel(e), indentRest(showText(e.Content), "  "))
}

// writePrompt prints messages as a block for an agent's next prompt.
func writePrompt(w io.Writer, envs []mailbox.Envelope) {
	if len(envs) == 0 {
		return
	}
	noun := "messages"
	if len(envs) == 1 {
		noun = "message"
	}
	fmt.Fprintf(w, "You have %d new %s:\n", len(envs), noun)
	for _, e := range envs {
		fmt.Fprintf(w, "[%s] from %s (%s): %s\n", show(string(e.ID)), show(e.From), msgLabel(e), indentRest(showText(e.Content), "  "))
	}
	fmt.Fprintln(w, "Answer one with: agentmsg reply <id> <message>")
}

// isTerminal reports whether w is a terminal (for redrawing a screen).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// cell shortens s to n runes for a table cell, on one line, safe to print.
func cell(s string, n int) string {
	s = show(strings.Join(strings.Fields(s), " "))
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// orDash is s, or "-" for an empty table cell.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// sinceText is how long before now t was, for people: "12s", "3m", "2h", "4d".
func sinceText(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := max(now.Sub(t), 0)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	}
	return fmt.Sprintf("%dd ago", int(d.Hours()/24))
}

// completeMailboxTeam completes a team from the teams with a mailbox.
func completeMailboxTeam(f *Factory) cobra.CompletionFunc {
	return completeMailbox(f, 1)
}

// completeMailboxInbox completes TEAM NAME from the stored inboxes.
func completeMailboxInbox(f *Factory) cobra.CompletionFunc {
	return completeMailbox(f, 2)
}

func completeMailbox(f *Factory, words int) cobra.CompletionFunc {
	return func(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) >= words || f.Mailbox == nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		s, err := f.Mailbox()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var names []string
		if len(args) == 0 {
			names, _ = s.Teams()
		} else {
			names, _ = s.Agents(args[0])
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}
