package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
)

// RequestInput is request_task's input.
type RequestInput struct {
	Description    string  `json:"description" jsonschema:"what needs doing"`
	TimeoutSeconds float64 `json:"timeout_seconds,omitempty" jsonschema:"the request expires unclaimed after this many seconds (0: never; at most 31536000, a year)"`
}

// RequestOutput is the posted request.
type RequestOutput struct {
	RequestID string    `json:"request_id"`
	MessageID string    `json:"message_id" jsonschema:"the request message put into each agent's inbox"`
	Notified  []string  `json:"notified" jsonschema:"the agents whose inbox got it"`
	Expires   time.Time `json:"expires,omitzero"`
}

func (s *server) requestTask(ctx context.Context, in RequestInput) (RequestOutput, error) {
	team, err := s.team()
	if err != nil {
		return RequestOutput{}, err
	}
	desc := strings.TrimSpace(message.Clean(in.Description))
	if desc == "" {
		return RequestOutput{}, errors.New("description is empty: say what needs doing")
	}
	timeout, err := seconds(in.TimeoutSeconds, 0, mailbox.MaxRequestTimeout)
	if err != nil {
		return RequestOutput{}, fmt.Errorf("timeout_seconds: %w", err)
	}
	reqID, err := message.NewRequestID()
	if err != nil {
		return RequestOutput{}, err
	}
	posted := s.deps.Now().UTC()
	store := s.deps.Store
	if err := store.Post(team, mailbox.Request{ID: reqID, From: s.deps.Name, Description: desc, Timeout: timeout, Posted: posted}); err != nil {
		return RequestOutput{}, err
	}
	id, err := message.NewID(s.deps.Sender, nil)
	if err != nil {
		return RequestOutput{}, err
	}
	// Pending, as agentmsg request leaves it: deliver types it (with its
	// REQ_ id) into the panes of agents in tmux while it is still open.
	env := mailbox.Envelope{ID: id, From: s.deps.Name, To: mailbox.Broadcast, Type: mailbox.TypeRequest,
		Content: desc, RequestID: reqID, Timestamp: posted, Delivery: &mailbox.Delivery{State: mailbox.StatePending}}
	out := RequestOutput{RequestID: reqID, MessageID: string(id)}
	if timeout > 0 {
		out.Expires = posted.Add(timeout)
		env.Metadata = map[string]string{"expires": out.Expires.Format(time.RFC3339)}
	}
	others := slices.DeleteFunc(s.teamNames(ctx, team), func(a string) bool { return a == s.deps.Name })
	out.Notified = others
	if err := store.AppendMany(team, others, env); err != nil {
		var be *mailbox.BroadcastError
		if !errors.As(err, &be) {
			return out, fmt.Errorf("request %s is posted, but telling the team failed: %w", reqID, err)
		}
		out.Notified = be.Delivered
		return out, fmt.Errorf("request %s is posted and %s were told, but not %s: %w",
			reqID, orNone(be.Delivered), orNone(keys(be.Failed)), err)
	}
	if out.Notified == nil {
		out.Notified = []string{}
	}
	return out, nil
}

// teamNames are the agents of team: those with an inbox or a board entry,
// and those with a tmux session now (when the server can be reached).
func (s *server) teamNames(ctx context.Context, team string) []string {
	names, _ := s.deps.Store.Agents(team)
	if board, err := s.deps.Store.Board(team); err == nil {
		for _, st := range board {
			names = append(names, st.Agent)
		}
	}
	if d, err := s.dispatcher(); err == nil {
		if targets, err := d.Targets(ctx, team); err == nil {
			for _, t := range targets {
				names = append(names, t.Agent())
			}
		}
	}
	sort.Strings(names)
	return slices.Compact(names)
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ClaimInput is claim_request's input.
type ClaimInput struct {
	RequestID string `json:"request_id" jsonschema:"the REQ_... id from the request message"`
}

// ClaimOutput says who has the request.
type ClaimOutput struct {
	RequestID   string    `json:"request_id"`
	Claimed     bool      `json:"claimed" jsonschema:"true when you got it"`
	ClaimedBy   string    `json:"claimed_by,omitempty"`
	ClaimedAt   time.Time `json:"claimed_at,omitzero"`
	From        string    `json:"from,omitempty" jsonschema:"who posted the request"`
	Description string    `json:"description,omitempty"`
	Reason      string    `json:"reason,omitempty" jsonschema:"why you did not get it"`
}

func (s *server) claimRequest(ctx context.Context, in ClaimInput) (ClaimOutput, error) {
	team, err := s.team()
	if err != nil {
		return ClaimOutput{}, err
	}
	id := strings.TrimSpace(in.RequestID)
	r, err := s.deps.Store.Claim(team, id, s.deps.Name)
	out := ClaimOutput{RequestID: id, From: r.From, Description: r.Description}
	var ce *mailbox.ClaimedError
	switch {
	case errors.As(err, &ce):
		out.ClaimedBy, out.ClaimedAt = ce.By, ce.At
		out.Reason = fmt.Sprintf("already claimed by %s at %s", ce.By, ce.At.Format(time.RFC3339))
		return out, nil
	case errors.Is(err, mailbox.ErrExpired):
		out.Reason = fmt.Sprintf("expired unclaimed at %s; ask %s", r.Posted.Add(r.Timeout).Format(time.RFC3339), r.From)
		return out, nil
	case errors.Is(err, mailbox.ErrNoRequest):
		return out, fmt.Errorf("no request %q in team %s (request ids look like REQ_1a2b3c4d)", id, team)
	case err != nil:
		return out, err
	}
	out.Claimed, out.ClaimedBy, out.ClaimedAt = true, s.deps.Name, s.deps.Now().UTC()
	if r.From != s.deps.Name {
		if err := s.tellClaimed(team, r); err != nil {
			out.Reason = fmt.Sprintf("claimed, but %s could not be told: %v", r.From, err)
		}
	}
	return out, nil
}

// tellClaimed puts a claim message into the requester's inbox.
func (s *server) tellClaimed(team string, r mailbox.Request) error {
	b, err := s.deps.Store.Box(team, r.From)
	if err != nil {
		return err
	}
	id, err := message.NewID(s.deps.Sender, nil)
	if err != nil {
		return err
	}
	return b.Append(mailbox.Envelope{ID: id, From: s.deps.Name, To: r.From, Type: mailbox.TypeClaim, RequestID: r.ID,
		Content: fmt.Sprintf("%s claimed by %s: %s", r.ID, s.deps.Name, r.Description)})
}
