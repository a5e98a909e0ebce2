package service

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
	"github.com/agentmsg/agentmsg/target"
)

// ErrEmptyTask: a task with no text (blanks only).
var ErrEmptyTask = errors.New("the task is empty")

// AssignRequest is one task for one agent of the caller's team.
type AssignRequest struct {
	To   target.Target
	Task string
	// TaskID, when set, is the caller's name for the task, sent as
	// metadata task_id.
	TaskID string
}

// AssignResult is the task message and what went into it.
type AssignResult struct {
	SendResult
	// Injected are the agent's unread messages put in front of the task.
	Injected []message.ID
}

// AssignTask sends an agent a message of type task whose text first lists
// the agent's unread messages that never reached its pane (the context it
// would otherwise miss), then the task; those messages are read
// afterwards, and not typed on their own. A task that is not delivered
// (a result that is not OK) leaves them waiting as before.
//
// The task and the messages it carries are one step (mailbox.Carry): a
// crash at any moment leaves the task recorded with them read, or them as
// they were, waiting to be typed on their own once the next deliver has
// put them back; never read and in no task.
func (s *Service) AssignTask(ctx context.Context, req AssignRequest) (AssignResult, error) {
	out := AssignResult{SendResult: SendResult{From: s.Name}}
	task := strings.TrimSpace(req.Task)
	if task == "" {
		return out, fmt.Errorf("%w: say what %s is to do", ErrEmptyTask, req.To.Agent())
	}
	team, agent := target.Inbox(req.To)
	// A task assign killed before its task was recorded left what it was
	// to carry marked read: given back first, this task carries it. (What
	// cannot be finished now is a deliver's to report, and to finish.)
	_, _ = s.Store.Complete()
	unread, err := s.Store.Unread(team, agent, agent)
	if err != nil {
		return out, fmt.Errorf("reading %s's unread messages: %w", req.To, err)
	}
	box, err := s.Store.Box(team, agent)
	if err != nil {
		return out, err
	}
	notSeen, err := s.notSeen(team, box, unread.Envelopes)
	if err != nil {
		return out, err
	}
	// The injected ones travel inside the task: marked read before it is
	// sent, so that the send (which types older waiting messages first)
	// and deliver do not type them on their own as well. Put back if the
	// task is refused; and, should this process die before the task is
	// recorded, by the next deliver.
	var waiting []mailbox.Envelope
	for _, e := range notSeen {
		if e.Delivery != nil && e.Delivery.State.Outstanding() {
			waiting = append(waiting, e)
		}
	}
	id, err := message.NewID(s.Sender, nil)
	if err != nil {
		return out, err
	}
	carrying, err := s.Store.Carry(team, agent, id, waiting, "read: inside a task")
	if err != nil {
		return out, err
	}
	dr := Draft{Text: withContext(notSeen, task), Type: string(mailbox.TypeTask), ID: id}
	if req.TaskID != "" {
		dr.Meta = map[string]string{"task_id": req.TaskID}
	}
	out.SendResult, err = s.Send(ctx, SendRequest{To: req.To, Draft: dr, InboxIfAbsent: true, Delivery: Delivery{Queue: true}, fresh: true})
	if err != nil || !out.OK() {
		// The task was not kept anywhere: the messages wait on their own.
		// Those that cannot be put back (a full disk) stay marked read
		// until a deliver can: said with the task's outcome, not dropped.
		if perr := carrying.PutBack(); perr != nil {
			out.Err = errors.Join(out.Err, fmt.Errorf("putting back what the task was to carry failed; the next deliver puts it back unless the task is in the inbox: %w", perr))
		}
		return out, err
	}
	// Recorded: it carries them. An intent left behind names a task in
	// the inbox, and the next Complete only removes it.
	_ = carrying.Done()
	// The agent has these now, in the task or typed earlier: they are
	// read. One on its way to the pane is not, until it gets there.
	shown := map[message.ID]bool{}
	for _, e := range unread.Envelopes {
		if !onItsWay(e) {
			shown[e.ID] = true
		}
	}
	for _, e := range notSeen {
		out.Injected = append(out.Injected, e.ID)
	}
	if len(shown) > 0 {
		if _, err := s.Store.AdvanceShown(team, agent, agent, shown); err != nil {
			return out, fmt.Errorf("the task was sent, but marking %s's messages read failed: %w", req.To, err)
		}
	}
	return out, nil
}

// notSeen are the unread messages an agent has not seen: messages already
// typed into its pane (submitted, queued) reached it, and those marked
// read rode in an earlier task (whose writer died before it moved the
// cursor past them: listed again, they would reach the agent twice); one
// on its way there is a deliverer's (see onItsWay). Of the others, no
// request that is claimed or expired goes in front of a task: as deliver
// does, that is recorded as skipped, not typed.
func (s *Service) notSeen(team string, box *mailbox.Box, unread []mailbox.Envelope) ([]mailbox.Envelope, error) {
	var out []mailbox.Envelope
	for _, e := range unread {
		d := e.Delivery
		if (d != nil && d.State.Seen()) || onItsWay(e) {
			continue
		}
		if why := s.Store.Withdrawn(team, e); why != "" {
			if d != nil && (d.State == mailbox.StatePending || d.State == mailbox.StateDeferred) {
				rec := mailbox.Delivery{State: mailbox.StateSkipped, Attempts: d.Attempts, LastVerdict: "skipped: " + why, Updated: s.mailboxNow()}
				if err := box.SetDelivery(e.ID, rec); err != nil {
					return nil, fmt.Errorf("recording that %s is not typed: %w", e.ID, err)
				}
			}
			continue
		}
		out = append(out, e)
	}
	return out, nil
}

// onItsWay reports whether e is being typed into its agent's pane, or may
// be there already: a typist at work (typing), or one that died and left
// it to a deliverer, which looks for it on the screen before it types it
// again (typing, typed). In a task as well, it could reach the agent twice
// (a task assign killed while it typed its task left it so).
func onItsWay(e mailbox.Envelope) bool {
	return e.Delivery != nil && (e.Delivery.State == mailbox.StateTyping || e.Delivery.State == mailbox.StateTyped)
}

// withContext is a task's text: the agent's unread messages first (the
// context it would otherwise miss), then the task.
func withContext(unread []mailbox.Envelope, task string) string {
	if len(unread) == 0 {
		return task
	}
	var b strings.Builder
	noun := "messages"
	if len(unread) == 1 {
		noun = "message"
	}
	fmt.Fprintf(&b, "You have %d unread %s:\n", len(unread), noun)
	for _, e := range unread {
		label := string(e.Type)
		if e.RequestID != "" {
			label += ", " + e.RequestID
		}
		if e.ReplyTo != "" {
			label += ", reply to " + string(e.ReplyTo)
		}
		fmt.Fprintf(&b, "[%s] from %s (%s): %s\n", e.ID, e.From, label, strings.ReplaceAll(e.Content, "\n", "\n  "))
	}
	b.WriteString("\nYour task:\n")
	b.WriteString(task)
	return b.String()
}
