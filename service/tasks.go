package service

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentmsg/agentmsg/courier"
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
func (s *Service) AssignTask(ctx context.Context, req AssignRequest) (AssignResult, error) {
	out := AssignResult{SendResult: SendResult{From: s.Name}}
	task := strings.TrimSpace(req.Task)
	if task == "" {
		return out, fmt.Errorf("%w: say what %s is to do", ErrEmptyTask, req.To.Agent())
	}
	team, agent := courier.Inbox(req.To)
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
	// task is refused.
	var carried []mailbox.Envelope
	for _, e := range notSeen {
		if e.Delivery != nil && e.Delivery.State.Outstanding() {
			rec := mailbox.Delivery{State: mailbox.StateRead, Attempts: e.Delivery.Attempts, LastVerdict: "read: inside a task"}
			if err := box.SetDelivery(e.ID, rec); err != nil {
				return out, fmt.Errorf("recording that the task carries %s: %w", e.ID, err)
			}
			carried = append(carried, e)
		}
	}
	dr := Draft{Text: withContext(notSeen, task), Type: string(mailbox.TypeTask)}
	if req.TaskID != "" {
		dr.Meta = map[string]string{"task_id": req.TaskID}
	}
	out.SendResult, err = s.Send(ctx, SendRequest{To: req.To, Draft: dr, InboxIfAbsent: true, Delivery: Delivery{Queue: true}})
	if err != nil || !out.OK() {
		// The task was not kept anywhere: the messages wait on their own.
		// One that cannot be put back (a full disk) stays marked read and
		// is never typed: said with the task's outcome, not dropped.
		for _, e := range carried {
			if perr := box.SetDelivery(e.ID, *e.Delivery); perr != nil {
				out.Err = errors.Join(out.Err, fmt.Errorf("%s stays marked read though the task did not carry it (putting it back to wait failed): %w", e.ID, perr))
			}
		}
		return out, err
	}
	// The agent has these now, in the task or typed earlier: they are read.
	shown := map[message.ID]bool{}
	for _, e := range unread.Envelopes {
		shown[e.ID] = true
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
// typed into its pane (submitted, queued) reached it; of the others, no
// request that is claimed or expired goes in front of a task: as deliver
// does, that is recorded as skipped, not typed.
func (s *Service) notSeen(team string, box *mailbox.Box, unread []mailbox.Envelope) ([]mailbox.Envelope, error) {
	var out []mailbox.Envelope
	for _, e := range unread {
		d := e.Delivery
		if d != nil && (d.State == mailbox.StateSubmitted || d.State == mailbox.StateQueued) {
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
