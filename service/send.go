package service

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/agentmsg/agentmsg/courier"
	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
	"github.com/agentmsg/agentmsg/target"
	"github.com/agentmsg/agentmsg/tmux"
)

// ErrNoCallerTeam: the operation needs the caller's team, and the caller
// has none (no --team, AGENTMSG_TEAM or agent session said).
var ErrNoCallerTeam = errors.New("the caller's team is not known")

// Draft is a message as its writer gives it: not yet cleaned or checked.
type Draft struct {
	Text string
	Type string            // "" is text
	Meta map[string]string // checked against mailbox.Protocol once cleaned
	// ID, when set, is the message's id as its writer chose it (an app
	// that must learn the message's fate even if it never gets an
	// answer): MSG_<the caller's sender>_<8 hex>, new to every inbox it
	// goes to. "" is a fresh one.
	ID message.ID
}

// ErrDuplicateID: a message with the id the writer chose is recorded
// already (a retry of a send that went through: its fate is in the
// mailbox, GET /v1/messages/{id}, agentmsg log --id).
var ErrDuplicateID = errors.New("a message with that id is recorded already")

// Delivery is how far a message goes, chosen per call.
type Delivery struct {
	// Queue: an agent not ready in time keeps the message in its inbox for
	// deliver (verdict deferred, a success); without it that is a failure.
	Queue bool
	// MailboxOnly records the message without typing it.
	MailboxOnly bool
	// Call: a profile chosen by hand, wait-idle, force, who hears of waits.
	Call dispatch.Call
	// Recorded, when set, hears that the message is recorded in its
	// inbox, and in which state, before it is typed.
	Recorded func(id message.ID, state mailbox.DeliveryState)
}

// SendRequest is one message to one agent.
type SendRequest struct {
	To target.Target
	Draft
	// ReplyTo, when set, is the message this one answers; when that is in
	// the caller's inbox, the request it was about carries over.
	ReplyTo message.ID
	Delivery
	// InboxIfAbsent: when To has no session on the server (or there is no
	// server), the message is recorded in its inbox only, provided
	// agentmsg knows the name (an inbox or a status-board entry); else
	// the error is an *UnknownAgentError. Without it, no session is the
	// verdict not_found.
	InboxIfAbsent bool
	// RefuseUnknown: a MailboxOnly message to a name with no session, no
	// inbox and no board entry is an *UnknownAgentError, not a new inbox
	// (a typo would make one, and be listed as an agent of the team).
	RefuseUnknown bool
	// Host is the host the agent is on; "" (or this host's name) is this
	// one. Another host's agent gets the message through the daemon's
	// link (Service.Hosts).
	Host string
	// fresh: Draft.ID was made just now (AssignTask), so no inbox holds
	// it, and the inbox is not read to make sure.
	fresh bool
}

// SendResult is what a message to one agent became.
type SendResult struct {
	courier.Result
	// From is the caller's name as the message carries it.
	From string
	// Socket is the tmux server's, when one was used ("" otherwise).
	Socket string
	// Replayed: the message was sent before under the id its writer
	// chose, and this is what its inbox records (nothing was sent again).
	Replayed bool
}

// UnknownAgentError: a message to a name with no session and no inbox.
type UnknownAgentError struct {
	Target target.Target
	Known  []string // the agents of its team agentmsg knows of
}

func (e *UnknownAgentError) Error() string {
	known := "none"
	if len(e.Known) > 0 {
		known = strings.Join(e.Known, ", ")
	}
	team, _ := target.Inbox(e.Target)
	return fmt.Sprintf("%v: %s has no tmux session %s and no inbox (agents of team %s: %s)",
		dispatch.ErrTargetNotFound, e.Target, e.Target.Session, team, known)
}

func (e *UnknownAgentError) Is(err error) bool { return err == dispatch.ErrTargetNotFound }

// Send records a message in an agent's inbox and types it into its pane
// (see courier.Send). A result that is not OK is still a result: the
// error is for a message that never got that far (a bad type, no server).
func (s *Service) Send(ctx context.Context, req SendRequest) (SendResult, error) {
	if !s.local(req.Host) {
		return s.sendRemote(ctx, req)
	}
	out := SendResult{From: s.Name}
	t := req.To
	// A session is refused when it is the caller's own pane (dispatch
	// says so); a name that may be only an inbox, when it is the caller's.
	if req.InboxIfAbsent && t.Agent() == s.Name && t.Team == s.Team && !t.IsRalph() {
		return out, fmt.Errorf("%w: %s is your own name; send to another agent of team %s", dispatch.ErrSelf, t.Agent(), t.Team)
	}
	env, err := Envelope(req.Draft)
	if err != nil {
		return out, err
	}
	if req.ReplyTo != "" {
		env.ReplyTo = req.ReplyTo
		// An answer to a request's message stays about that request.
		if orig, err := s.ownMessage(req.ReplyTo); err == nil {
			env.RequestID = orig.RequestID
		}
	}
	mode := courier.Mode(req.Delivery)
	// A message only recorded in an inbox needs no tmux (nor tmux
	// installed).
	var d *dispatch.Dispatcher
	if mode.MailboxOnly && req.RefuseUnknown {
		if err := s.refuseUnknown(ctx, t); err != nil {
			return out, err
		}
	}
	if !mode.MailboxOnly {
		if d, err = s.Dispatcher(); err != nil && !(req.InboxIfAbsent && noTmux(err)) {
			return out, err
		}
		if req.InboxIfAbsent {
			there, err := present(ctx, d, t)
			if err != nil {
				return out, err
			}
			if !there {
				if known, names := s.known(t); !known {
					return out, &UnknownAgentError{Target: t, Known: names}
				}
				mode.MailboxOnly = true
			}
		}
	}
	if env.ID != "" && !req.fresh {
		return s.sendOnce(ctx, d, t, env, mode)
	}
	// A fresh id (a task's, made just now) is in no inbox, and its own
	// carry intent names it (mailbox.Store.Carry): no check for a message
	// sent before under it, which would take that intent for one.
	return s.sendEnvelope(ctx, d, t, env, mode)
}

// sendOnce is sendEnvelope of a message whose id its writer chose: that
// id is one message on the server, and the same message asked for again
// answers its first result (courier.SendOnce).
func (s *Service) sendOnce(ctx context.Context, d *dispatch.Dispatcher, t target.Target, env mailbox.Envelope, mode courier.Mode) (SendResult, error) {
	out := SendResult{From: s.Name}
	if err := s.stamp(d, &env); err != nil {
		return out, err
	}
	c := s.carrier(d)
	if d != nil && d.Tmux != nil {
		out.Socket = d.Tmux.Server().Socket
	}
	var err error
	out.Result, out.Replayed, err = c.SendOnce(ctx, t, env, mode)
	var taken *courier.IDTakenError
	if errors.As(err, &taken) {
		return out, fmt.Errorf("%w: %w", ErrDuplicateID, err)
	}
	return out, err
}

// sendEnvelope gives env (Type, Content, Metadata, ReplyTo set) an id and
// the caller as sender, and sends it to t.
func (s *Service) sendEnvelope(ctx context.Context, d *dispatch.Dispatcher, t target.Target, env mailbox.Envelope, mode courier.Mode) (SendResult, error) {
	out := SendResult{From: s.Name}
	if err := s.stamp(d, &env); err != nil {
		return out, err
	}
	c := s.carrier(d)
	if d != nil && d.Tmux != nil {
		out.Socket = d.Tmux.Server().Socket
	}
	out.Result = c.Send(ctx, t, env, mode)
	return out, nil
}

// Envelope checks a draft's type and metadata against the protocol and
// returns an envelope with its content, without id or sender. Metadata is
// typed with the message, so its keys and values are cleaned like it,
// each to one line (message.CleanLine), before they are checked.
func Envelope(dr Draft) (mailbox.Envelope, error) {
	var clean map[string]string
	for k, v := range dr.Meta {
		if clean == nil {
			clean = make(map[string]string, len(dr.Meta))
		}
		ck := message.CleanLine(k)
		if _, dup := clean[ck]; dup {
			return mailbox.Envelope{}, fmt.Errorf("%w: two metadata keys are %q once cleaned of control characters", mailbox.ErrProtocol, ck)
		}
		clean[ck] = message.CleanLine(v)
	}
	env, err := mailbox.Check(dr.Type, clean)
	env.Content, env.ID = dr.Text, dr.ID
	return env, err
}

// stamp cleans env's content and gives it an id (the one its writer chose,
// env.ID, when set, else a fresh one) and the caller as sender; d (nil
// without tmux) gives the randomness.
func (s *Service) stamp(d *dispatch.Dispatcher, env *mailbox.Envelope) error {
	var msg dispatch.Message
	var err error
	if env.ID != "" {
		if !message.Valid(string(env.ID)) || !strings.HasPrefix(string(env.ID), "MSG_"+s.Sender+"_") {
			return fmt.Errorf("%w: id %q is not MSG_%s_<8 hex> (the sender's own prefix)", mailbox.ErrProtocol, env.ID, s.Sender)
		}
		if msg, err = dispatch.NewMessage(s.Sender, env.Content, nil); err != nil {
			return err
		}
		env.From, env.Content = s.Name, msg.Text
		return nil
	}
	if d != nil {
		msg, err = d.NewMessage(s.Sender, env.Content)
	} else {
		msg, err = dispatch.NewMessage(s.Sender, env.Content, nil)
	}
	if err != nil {
		return err
	}
	env.ID, env.From, env.Content = msg.ID, s.Name, msg.Text
	return nil
}

// carrier is the courier over d (nil: only the mailbox).
func (s *Service) carrier(d *dispatch.Dispatcher) *courier.Courier {
	c := *s.Courier
	c.Dispatch = d
	return &c
}

// ownMessage finds id in the caller's inbox.
func (s *Service) ownMessage(id message.ID) (mailbox.Envelope, error) {
	if s.Team == "" {
		return mailbox.Envelope{}, ErrNoCallerTeam
	}
	batch, err := s.Store.Read(s.Team, s.Name)
	if err != nil {
		return mailbox.Envelope{}, err
	}
	for _, e := range batch.Envelopes {
		if e.ID == id {
			return e, nil
		}
	}
	return mailbox.Envelope{}, fmt.Errorf("%w: %s is not in %s/%s's inbox", mailbox.ErrNoMessage, id, s.Team, s.Name)
}

// noTmux: err says there is no tmux server (or no tmux) to find agents on.
func noTmux(err error) bool {
	return errors.Is(err, tmux.ErrNoServer) || errors.Is(err, tmux.ErrNotInstalled)
}

// present reports whether t has a session on d's server; no server (d
// nil, or none running) means no session. Any other failure to look is an
// error: an agent that may be there is never quietly passed over.
func present(ctx context.Context, d *dispatch.Dispatcher, t target.Target) (bool, error) {
	if d == nil {
		return false, nil
	}
	ok, err := d.Exists(ctx, t)
	if noTmux(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("looking for %s's session: %w", t, err)
	}
	return ok, nil
}

// refuseUnknown is an *UnknownAgentError when t has no inbox, no board
// entry and no session; the mailbox is asked first, so a known name needs
// no tmux.
func (s *Service) refuseUnknown(ctx context.Context, t target.Target) error {
	known, names := s.known(t)
	if known {
		return nil
	}
	d, err := s.Dispatcher()
	if err != nil && !noTmux(err) {
		return err
	}
	there, err := present(ctx, d, t)
	if err != nil || there {
		return err
	}
	if d != nil { // the team's sessions, so that a typo's fix is in sight
		sessions, _ := d.Targets(ctx, t.Team)
		for _, a := range sessions {
			if !slices.Contains(names, a.Agent()) {
				names = append(names, a.Agent())
			}
		}
		sort.Strings(names)
	}
	return &UnknownAgentError{Target: t, Known: names}
}

// known reports whether t's name has an inbox or a board entry in its
// team, and lists the names that do.
func (s *Service) known(t target.Target) (bool, []string) {
	team, _ := target.Inbox(t)
	names, _ := s.Store.Agents(team)
	board, _ := s.Store.Board(team)
	for _, st := range board {
		if !slices.Contains(names, st.Agent) {
			names = append(names, st.Agent)
		}
	}
	sort.Strings(names)
	return slices.Contains(names, t.Agent()), names
}
