package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/service"
)

// RequestInput is request_task's input.
type RequestInput struct {
	Description    string  `json:"description" jsonschema:"what needs doing"`
	Team           string  `json:"team,omitempty" jsonschema:"the team to ask: yours when empty; another only for an orchestrator"`
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
	team, err := s.teamOf(in.Team)
	if err != nil {
		return RequestOutput{}, err
	}
	timeout, err := seconds(in.TimeoutSeconds, 0, mailbox.MaxRequestTimeout)
	if err != nil {
		return RequestOutput{}, fmt.Errorf("timeout_seconds: %w", err)
	}
	p, err := (&s.deps).Request(ctx, service.PostRequest{Team: s.other(team), Description: in.Description, Timeout: timeout})
	if errors.Is(err, service.ErrEmptyDescription) {
		return RequestOutput{}, errors.New("description is empty: say what needs doing")
	}
	out := RequestOutput{RequestID: p.Request.ID, MessageID: string(p.MessageID), Notified: p.Notified, Expires: p.Expires}
	if err != nil {
		return out, err
	}
	if len(p.Failed) > 0 {
		return out, fmt.Errorf("request %s is posted and %s were told, but not %s: %w",
			p.Request.ID, orNone(p.Notified), orNone(keys(p.Failed)), &mailbox.BroadcastError{Delivered: p.Notified, Failed: p.Failed})
	}
	return out, nil
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
	Team      string `json:"team,omitempty" jsonschema:"the request's team: yours when empty; another only for an orchestrator"`
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
	team, err := s.teamOf(in.Team)
	if err != nil {
		return ClaimOutput{}, err
	}
	r, err := (&s.deps).Claim(ctx, service.ClaimRequest{Team: s.other(team), RequestID: in.RequestID})
	out := ClaimOutput{RequestID: r.Request.ID, From: r.Request.From, Description: r.Request.Description,
		Claimed: r.Claimed, ClaimedBy: r.ClaimedBy, ClaimedAt: r.ClaimedAt}
	switch {
	case errors.Is(err, mailbox.ErrAlreadyClaimed):
		out.Reason = fmt.Sprintf("already claimed by %s at %s", r.ClaimedBy, r.ClaimedAt.Format(time.RFC3339))
		return out, nil
	case errors.Is(err, mailbox.ErrExpired):
		out.Reason = fmt.Sprintf("expired unclaimed at %s; ask %s", r.Expires.Format(time.RFC3339), r.Request.From)
		return out, nil
	case errors.Is(err, mailbox.ErrNoRequest):
		return out, fmt.Errorf("no request %q in team %s (request ids look like REQ_1a2b3c4d)", r.Request.ID, team)
	case err != nil:
		return out, err
	}
	if r.TellErr != nil {
		out.Reason = fmt.Sprintf("claimed, but %s could not be told: %v", r.Request.From, r.TellErr)
	}
	return out, nil
}

// ListRequestsInput is list_requests' input.
type ListRequestsInput struct {
	Team string `json:"team,omitempty" jsonschema:"yours when empty; another only for an orchestrator"`
}

// RequestEntry is one request and who has it.
type RequestEntry struct {
	RequestID   string    `json:"request_id"`
	From        string    `json:"from"`
	Description string    `json:"description"`
	State       string    `json:"state" jsonschema:"open, claimed or expired"`
	ClaimedBy   string    `json:"claimed_by,omitempty"`
	ClaimedAt   time.Time `json:"claimed_at,omitzero"`
	Posted      time.Time `json:"posted"`
	Expires     time.Time `json:"expires,omitzero"`
}

// ListRequestsOutput is a team's requests, oldest first.
type ListRequestsOutput struct {
	Team     string         `json:"team"`
	Requests []RequestEntry `json:"requests"`
	Note     string         `json:"note,omitempty"`
}

func (s *server) listRequests(ctx context.Context, in ListRequestsInput) (ListRequestsOutput, error) {
	team, err := s.teamOf(in.Team)
	if err != nil {
		return ListRequestsOutput{}, err
	}
	res, err := (&s.deps).Requests(ctx, service.ListRequests{Team: s.other(team)})
	out := ListRequestsOutput{Team: team, Requests: []RequestEntry{}}
	if err != nil {
		return out, s.toolErr("list_requests", err)
	}
	if res.Unreadable != nil {
		out.Note = "some requests could not be read: " + res.Unreadable.Error()
	}
	for _, r := range res.Requests {
		out.Requests = append(out.Requests, RequestEntry{RequestID: r.ID, From: r.From, Description: r.Description,
			State: string(r.State), ClaimedBy: r.ClaimedBy, ClaimedAt: r.ClaimedAt, Posted: r.Posted, Expires: r.Expires})
	}
	return out, nil
}
