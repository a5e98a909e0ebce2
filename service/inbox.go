package service

// The mailbox reading operations: Wait, Inbox (and Follow), Read, Log and
// History. They read the durable inboxes only; none needs tmux.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/agentmsg/agentmsg/hosts"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
	"github.com/agentmsg/agentmsg/target"
)

var (
	// ErrInterrupted: the caller's context ended a wait before its
	// own timeout did; it wraps the context's error.
	ErrInterrupted = errors.New("interrupted")
	// ErrNotMessageID: a value given as a message id is not one
	// (MSG_<SENDER>_<8 hex>).
	ErrNotMessageID = errors.New("not a message id (MSG_<SENDER>_<8 hex>)")
	// ErrBadType: a message type that no message can have.
	ErrBadType = errors.New("types are lower-case words such as text, status, request, claim, task")
)

// FilterError is a filter field no message can match: Field is "sender",
// "type" or "reply_to"; Err says why (target.ErrInvalid, ErrBadType or
// ErrNotMessageID, wrapped).
type FilterError struct {
	Field, Value string
	Err          error
}

func (e *FilterError) Error() string { return fmt.Sprintf("%s %q: %v", e.Field, e.Value, e.Err) }
func (e *FilterError) Unwrap() error { return e.Err }

// Filter selects messages by sender, type and the message they answer; a
// zero field matches anything.
type Filter struct {
	Sender  string
	Type    mailbox.Type
	ReplyTo message.ID
}

// Check returns the filter with its sender spelled the one way senders
// are stored (target.ParseName: "LEAD" is lead), or a *FilterError for a
// value no message can have. Every operation that takes a Filter checks
// it; a front end may call Check early to report a bad flag at once.
func (fl Filter) Check() (Filter, error) {
	if fl.Sender != "" {
		name, err := target.ParseName(fl.Sender)
		if err != nil {
			return fl, &FilterError{"sender", fl.Sender, err}
		}
		fl.Sender = name
	}
	if fl.Type != "" && strings.TrimLeft(string(fl.Type), "abcdefghijklmnopqrstuvwxyz-") != "" {
		return fl, &FilterError{"type", string(fl.Type), ErrBadType}
	}
	if fl.ReplyTo != "" && !message.Valid(string(fl.ReplyTo)) {
		return fl, &FilterError{"reply_to", string(fl.ReplyTo), ErrNotMessageID}
	}
	return fl, nil
}

// Match reports whether e passes the filter.
func (fl Filter) Match(e mailbox.Envelope) bool {
	return (fl.Sender == "" || e.From == fl.Sender) &&
		(fl.Type == "" || e.Type == fl.Type) &&
		(fl.ReplyTo == "" || e.ReplyTo == fl.ReplyTo)
}

// Empty reports whether the filter matches every message.
func (fl Filter) Empty() bool { return fl == Filter{} }

// ownInbox is the caller's team and inbox name.
func (s *Service) ownInbox() (team, agent string, err error) {
	if s.Team == "" {
		return "", "", ErrTeamNeeded
	}
	return s.Team, s.Name, nil
}

// namedTeam is team, checked to exist (CheckTeam: a mistyped team is
// never read as an empty one), or the caller's own for "".
func (s *Service) namedTeam(ctx context.Context, team string) (string, error) {
	if team == "" {
		t, _, err := s.ownInbox()
		return t, err
	}
	return team, s.CheckTeam(ctx, team)
}

// mailboxNow is the service's clock (wall time when none is wired).
func (s *Service) mailboxNow() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// WaitRequest is what Wait waits for.
type WaitRequest struct {
	Filter Filter
	// Timeout bounds the wait; 0 waits until ctx ends.
	Timeout time.Duration
}

// WaitResult is the message waited for, or TimedOut.
type WaitResult struct {
	Team, Agent string // the inbox waited on: the caller's
	Message     mailbox.Envelope
	TimedOut    bool
	Waited      time.Duration
	// Left is how many other unread messages wait in the inbox.
	Left int
}

// Wait blocks until a message that matches req.Filter and is news to the
// caller (see news) is in its inbox after its read cursor (an unread one
// already there counts), and moves the cursor past it and past what was
// no news, never past an earlier unread message that did not match. A
// message being typed into the caller's pane counts once its delivery
// ends. No message within req.Timeout is a result (TimedOut), not an
// error; ctx ending first is ErrInterrupted.
func (s *Service) Wait(ctx context.Context, req WaitRequest) (WaitResult, error) {
	fl, err := req.Filter.Check()
	if err != nil {
		return WaitResult{}, err
	}
	if req.Timeout < 0 {
		return WaitResult{}, fmt.Errorf("timeout %s is negative", req.Timeout)
	}
	team, me, err := s.ownInbox()
	if err != nil {
		return WaitResult{}, err
	}
	res := WaitResult{Team: team, Agent: me}
	start := s.mailboxNow()
	from, err := s.Store.Cursor(team, me, me)
	if err != nil {
		return res, fmt.Errorf("reading the inbox of %s/%s: %w", team, me, err)
	}
	shown := map[message.ID]bool{}
	match := func(e mailbox.Envelope) bool {
		if !news(e, true) {
			shown[e.ID] = true // seen already: the cursor may pass it
			return false
		}
		return fl.Match(e)
	}
	wctx := ctx
	if req.Timeout > 0 {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, req.Timeout)
		defer cancel()
	}
	res.Message, err = s.Store.WaitSettled(wctx, team, me, match, from)
	switch {
	case err == nil:
		shown[res.Message.ID] = true
	case ctx.Err() != nil:
		return res, fmt.Errorf("%w: %w", ErrInterrupted, ctx.Err())
	case errors.Is(err, context.DeadlineExceeded):
		res.TimedOut = true
	default:
		return res, err
	}
	if len(shown) > 0 {
		if res.Left, err = s.Store.AdvanceShown(team, me, me, shown); err != nil {
			return res, fmt.Errorf("marking the messages of %s/%s read: %w", team, me, err)
		}
	}
	res.Waited = s.mailboxNow().Sub(start)
	return res, nil
}

// InboxRequest is which inbox Inbox reads, and how.
type InboxRequest struct {
	// Team and Agent name the inbox: "" is the caller's own team, or
	// name. A team named must exist (ErrNoTeam).
	Team, Agent string
	// All returns every message kept, not only the unread ones, and
	// leaves the cursor where it is.
	All bool
	// Peek leaves the messages returned unread.
	Peek   bool
	Filter Filter
}

// InboxResult is one read of an inbox by the caller (the Reader, whose
// cursor it is).
type InboxResult struct {
	Team, Agent, Reader string
	// Messages are those that match the filter, oldest first.
	Messages []mailbox.Envelope
	// Corrupt are lines of the inbox that could not be read; they were
	// skipped.
	Corrupt []mailbox.CorruptLine

	req   InboxRequest
	own   bool                // the reader reads its own inbox
	end   mailbox.Position    // where Follow goes on
	seen  map[message.ID]bool // read, matching or not
	shown map[message.ID]bool // returned: the cursor may pass them
}

// Inbox returns the messages of an inbox that the caller has not read
// and that are news to it (see news; req.All: every kept one) and match
// req.Filter, and moves the caller's
// cursor past them: never past an unread message that did not match, so a
// filtered read skips nothing for good (req.All and req.Peek leave the
// cursor alone).
func (s *Service) Inbox(ctx context.Context, req InboxRequest) (InboxResult, error) {
	fl, err := req.Filter.Check()
	if err != nil {
		return InboxResult{}, err
	}
	req.Filter = fl
	team, agent := req.Team, req.Agent
	if agent == "" {
		agent = s.Name
	}
	if team, err = s.namedTeam(ctx, team); err != nil {
		return InboxResult{}, err
	}
	res := InboxResult{Team: team, Agent: agent, Reader: s.Name, Messages: []mailbox.Envelope{}, req: req,
		seen: map[message.ID]bool{}, shown: map[message.ID]bool{}}
	var batch mailbox.Batch
	if req.All {
		batch, err = s.Store.Read(team, agent)
	} else {
		batch, err = s.Store.Unread(team, agent, s.Name)
	}
	if err != nil {
		return InboxResult{}, fmt.Errorf("reading the inbox of %s/%s: %w", team, agent, err)
	}
	res.Corrupt, res.end, res.own = batch.Corrupt, batch.End, team == s.Team && agent == s.Name
	for _, e := range batch.Envelopes {
		res.seen[e.ID] = true
		if res.shows(e) {
			res.Messages = append(res.Messages, e)
		}
	}
	return res, s.markShown(&res, res.Messages)
}

// shows reports whether a read shows e: news to the reader (or asked
// for all) and matching the filter. What is no news the cursor may pass.
func (res *InboxResult) shows(e mailbox.Envelope) bool {
	if !res.req.All && !news(e, res.own) {
		res.shown[e.ID] = true // seen already: the cursor may pass it
		return false
	}
	return res.req.Filter.Match(e)
}

// news reports whether e is news to a reader of its inbox (own: the
// inbox's agent). A message the agent has seen (submitted or queued in its
// pane, or pulled) or has in its input box (typed) is on its screen
// already, and one refused or failed (send exited non-zero) is its
// sender's to send again: listing either would show it twice.
func news(e mailbox.Envelope, own bool) bool {
	if e.Delivery == nil {
		return true
	}
	st := e.Delivery.State
	return st != mailbox.StateFailed && !(own && (st.Seen() || st == mailbox.StateTyped))
}

// markShown moves the reader's cursor past what was returned (and what
// was passed over as no news), unless the request leaves it alone.
func (s *Service) markShown(res *InboxResult, shown []mailbox.Envelope) error {
	if res.req.All || res.req.Peek || len(shown)+len(res.shown) == 0 {
		return nil
	}
	for _, e := range shown {
		res.shown[e.ID] = true
	}
	if _, err := s.Store.AdvanceShown(res.Team, res.Agent, res.Reader, res.shown); err != nil {
		return fmt.Errorf("marking the messages of %s/%s read: %w", res.Team, res.Agent, err)
	}
	return nil
}

// Follow goes on from a read: it waits for each message that arrives in
// the inbox after it, and passes each that the read would show to show
// (one being typed into the reader's own pane, once its delivery ends),
// then moves the cursor past it as Inbox does. It ends, with nil, when
// ctx does; or with show's error.
func (s *Service) Follow(ctx context.Context, from InboxResult, show func(mailbox.Envelope) error) error {
	for {
		e, err := s.Store.WaitSettled(ctx, from.Team, from.Agent, func(e mailbox.Envelope) bool { return !from.seen[e.ID] }, from.end)
		if err != nil {
			if ctx.Err() != nil {
				return nil // the normal end of following
			}
			return err
		}
		from.seen[e.ID] = true
		if !from.shows(e) {
			continue
		}
		if err := show(e); err != nil {
			return err
		}
		if err := s.markShown(&from, []mailbox.Envelope{e}); err != nil {
			return err
		}
	}
}

// Read finds message id in any inbox: a message too long for an input box
// is typed as a pointer to this. A broadcast is in many inboxes, with the
// same content, so the first will do. No inbox holding it is
// mailbox.ErrNoMessage.
func (s *Service) Read(ctx context.Context, id message.ID) (mailbox.Envelope, error) {
	if !message.Valid(string(id)) {
		return mailbox.Envelope{}, &FilterError{"id", string(id), ErrNotMessageID}
	}
	inboxes, err := s.Store.Inboxes("")
	if err != nil {
		return mailbox.Envelope{}, err
	}
	for _, in := range inboxes {
		batch, err := s.Store.Read(in.Team, in.Agent)
		if err != nil {
			continue
		}
		for _, e := range batch.Envelopes {
			if e.ID == id {
				return e, nil
			}
		}
	}
	return mailbox.Envelope{}, fmt.Errorf("%w: %s is in no inbox under %s", mailbox.ErrNoMessage, id, s.Store.Root)
}

// ReadOwn is Read for an agent that may see only its own mail: the
// message id in its team's inboxes, when it was sent to the caller (its
// own inbox) or by the caller. Any other is no message to it, as if it
// were in no inbox: an agent's MCP token must not read another team's or
// another agent's mail by an id it saw in passing (ids travel in replies,
// pointers and pane text).
func (s *Service) ReadOwn(ctx context.Context, id message.ID) (mailbox.Envelope, error) {
	if !message.Valid(string(id)) {
		return mailbox.Envelope{}, &FilterError{"id", string(id), ErrNotMessageID}
	}
	if s.Team != "" {
		inboxes, err := s.Store.Inboxes(s.Team)
		if err != nil {
			return mailbox.Envelope{}, err
		}
		for _, in := range inboxes {
			batch, err := s.Store.Read(in.Team, in.Agent)
			if err != nil {
				continue
			}
			for _, e := range batch.Envelopes {
				if e.ID == id && (in.Agent == s.Name || e.From == s.Name) {
					return e, nil
				}
			}
		}
	}
	return mailbox.Envelope{}, fmt.Errorf("%w: %s is in no inbox of yours, nor sent by you", mailbox.ErrNoMessage, id)
}

// LogRequest names the inboxes Log and History look in.
type LogRequest struct {
	Team  string // "" for every team; a team named must exist (ErrNoTeam)
	Agent string // "" for every inbox of Team
}

// LogEntry is one message in one inbox, with how far its delivery got.
type LogEntry struct {
	Team  string `json:"team"`
	Inbox string `json:"inbox"`
	// Host is the host the inbox is on, for a copy this host sent to
	// another ("" for an inbox here): its delivery is that host's report.
	Host string `json:"host,omitempty"`
	mailbox.Envelope
}

// DamagedLine is a line of an inbox that could not be read.
type DamagedLine struct {
	Team, Inbox string
	mailbox.CorruptLine
}

// LogResult is every message kept in the inboxes, oldest first; a message
// to a whole team is there once per inbox.
type LogResult struct {
	Entries []LogEntry
	Damaged []DamagedLine
}

// logInboxes lists the inboxes req names; a team named must exist.
func (s *Service) logInboxes(ctx context.Context, req LogRequest) ([]mailbox.Inbox, error) {
	if req.Team != "" {
		if err := s.CheckTeam(ctx, req.Team); err != nil {
			return nil, err
		}
	}
	if req.Agent != "" {
		return []mailbox.Inbox{{Team: req.Team, Agent: req.Agent}}, nil
	}
	return s.Store.Inboxes(req.Team)
}

// Log lists the messages kept in the inboxes req names, oldest first,
// and the copies this host sent to agents on other hosts (with their
// host; a team only there is a team too).
func (s *Service) Log(ctx context.Context, req LogRequest) (LogResult, error) {
	remote, _, err := s.remoteLog(ctx, req, "")
	if err != nil {
		return LogResult{}, err
	}
	boxes, err := s.logInboxes(ctx, req)
	if errors.Is(err, ErrNoTeam) && len(remote) > 0 {
		boxes, err = nil, nil
	}
	if err != nil {
		return LogResult{}, err
	}
	res := LogResult{Entries: append([]LogEntry{}, remote...)}
	for _, b := range boxes {
		batch, err := s.Store.Read(b.Team, b.Agent)
		if err != nil {
			return LogResult{}, err
		}
		for _, c := range batch.Corrupt {
			res.Damaged = append(res.Damaged, DamagedLine{b.Team, b.Agent, c})
		}
		for _, e := range batch.Envelopes {
			res.Entries = append(res.Entries, LogEntry{Team: b.Team, Inbox: b.Agent, Envelope: e})
		}
	}
	sort.SliceStable(res.Entries, func(i, j int) bool { return res.Entries[i].Timestamp.Before(res.Entries[j].Timestamp) })
	return res, nil
}

// unrecorded are the copies of id that its intent names (among the
// inboxes req names) and no inbox holds yet: see HistoryCopy.Unrecorded.
func (s *Service) unrecorded(req LogRequest, id message.ID, held []HistoryCopy) ([]HistoryCopy, error) {
	in, open, err := s.Store.Intent(id)
	if err != nil || !open {
		return nil, err
	}
	var out []HistoryCopy
	for _, to := range in.To {
		if req.Team != "" && to.Team != req.Team || req.Agent != "" && to.Agent != req.Agent {
			continue
		}
		if slices.ContainsFunc(held, func(c HistoryCopy) bool { return c.Team == to.Team && c.Inbox == to.Agent }) {
			continue
		}
		out = append(out, HistoryCopy{Team: to.Team, Inbox: to.Agent, Message: in.Env, Delivery: []mailbox.Delivery{}, Unrecorded: true})
	}
	return out, nil
}

// sentLookup is a link to other hosts that keeps what became of the
// messages sent there (the daemon's).
type sentLookup interface {
	LookupSent(ctx context.Context, id string) ([]hosts.Sent, error)
}

// Sent is what another host last reported of each copy of message id sent
// there from here; none where no link keeps it (no daemon).
func (s *Service) Sent(ctx context.Context, id message.ID) ([]hosts.Sent, error) {
	l, ok := s.Hosts.(sentLookup)
	if !ok || l == nil {
		return nil, nil
	}
	return l.LookupSent(ctx, string(id))
}

// HistoryCopy is one inbox's copy of a message, its delivery now, and
// its delivery records in order, the first being the one it was stored
// with (compaction keeps only the latest).
type HistoryCopy struct {
	Team  string `json:"team" jsonschema:"the team of the inbox that holds this copy"`
	Inbox string `json:"inbox" jsonschema:"the inbox (agent) that holds this copy"`
	// Host is the host the inbox is on, for a copy this host sent to
	// another ("" here): its records are that host's reports.
	Host string `json:"host,omitempty" jsonschema:"the host the inbox is on, for a copy sent to another host (its records are that host's reports); absent for this host"`
	// Message is the copy with its delivery now (the last record).
	Message  mailbox.Envelope   `json:"message" jsonschema:"the copy, its delivery as it is now"`
	Delivery []mailbox.Delivery `json:"delivery" jsonschema:"every delivery record of this copy, oldest first: the one it was stored with (when recorded says one), then each change"`
	// Recorded is the state the copy was stored in; "" for a message
	// stored without a delivery record (Delivery then holds only the
	// changes).
	Recorded mailbox.DeliveryState `json:"recorded,omitempty" jsonschema:"the state this copy was stored in (the first of delivery); absent for a message stored without one"`
	// Unrecorded: the message's intent names this inbox, which does not
	// hold it yet: its sender is recording it now, or died before it did
	// (the next deliver pass, or a retry with its id, records it, in the
	// state Message says). A copy is never hidden because it is late.
	Unrecorded bool `json:"unrecorded,omitempty" jsonschema:"its intent names this inbox, which does not hold it yet: its sender is recording it, or died before it did (the next deliver pass records it)"`
}

// History is message id's delivery history in each inbox req names that
// holds it; none is mailbox.ErrNoMessage.
func (s *Service) History(ctx context.Context, req LogRequest, id message.ID) ([]HistoryCopy, error) {
	if !message.Valid(string(id)) {
		return nil, &FilterError{"id", string(id), ErrNotMessageID}
	}
	_, remote, err := s.remoteLog(ctx, req, id)
	if err != nil {
		return nil, err
	}
	boxes, err := s.logInboxes(ctx, req)
	if errors.Is(err, ErrNoTeam) && len(remote) > 0 {
		boxes, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	copies := []HistoryCopy{}
	for _, b := range boxes {
		env, ds, err := s.Store.History(b.Team, b.Agent, id)
		if errors.Is(err, mailbox.ErrNoMessage) {
			continue
		}
		if err != nil {
			return nil, err
		}
		all := make([]mailbox.Delivery, 0, len(ds)+1)
		var recorded mailbox.DeliveryState
		if env.Delivery != nil {
			all, recorded = append(all, *env.Delivery), env.Delivery.State
		}
		all = append(all, ds...)
		if n := len(all); n > 0 {
			// The copy's message says where it is now, not where it
			// started (issue 31: a broadcast's copies read typing for
			// ever).
			now := all[n-1]
			env.Delivery = &now
		}
		copies = append(copies, HistoryCopy{Team: b.Team, Inbox: b.Agent, Message: env, Delivery: all, Recorded: recorded})
	}
	late, err := s.unrecorded(req, id, copies)
	if err != nil {
		return nil, err
	}
	copies = append(copies, late...)
	copies = append(copies, remote...)
	if len(copies) == 0 {
		return nil, fmt.Errorf("%w: %s", mailbox.ErrNoMessage, id)
	}
	return copies, nil
}
