package service

import (
	"context"
	"fmt"

	"github.com/agentmsg/agentmsg/courier"
	"github.com/agentmsg/agentmsg/message"
)

// BroadcastRequest is one message to every agent of a team, or with All
// to every agent session on the server.
type BroadcastRequest struct {
	Team string // "" only with All
	All  bool
	Draft
	Delivery
}

// BroadcastResult is the one verdict of a broadcast (Summary.Verdict), the
// same for every front end, and each target's result.
type BroadcastResult struct {
	ID      message.ID
	From    string
	Results []courier.Result // by session name
	courier.Summary
}

// Broadcast records a message in the inbox of every agent of the team and
// types it into each, in parallel; one target's failure never stops the
// others. Older messages waiting for an agent go first (courier's one
// enqueue rule, as for Send).
func (s *Service) Broadcast(ctx context.Context, req BroadcastRequest) (BroadcastResult, error) {
	out := BroadcastResult{From: s.Name}
	if req.Team == "" && !req.All {
		return out, fmt.Errorf("%w: name a team to broadcast to, or all agent sessions", ErrNoCallerTeam)
	}
	if req.All {
		req.Team = ""
	}
	env, err := Envelope(req.Draft)
	if err != nil {
		return out, err
	}
	// Even a broadcast only recorded lists the server's agents.
	d, err := s.Dispatcher()
	if err != nil {
		return out, err
	}
	if err := s.stamp(d, &env); err != nil {
		return out, err
	}
	if req.Draft.ID != "" {
		inboxes, err := s.Store.Inboxes(req.Team)
		if err != nil {
			return out, err
		}
		for _, in := range inboxes {
			if s.Store.Holds(in.Team, in.Agent, env.ID) {
				return out, fmt.Errorf("%w: %s in %s/%s's inbox", ErrDuplicateID, env.ID, in.Team, in.Agent)
			}
		}
	}
	out.ID = env.ID
	c, err := s.carrier(d)
	if err != nil {
		return out, err
	}
	if out.Results, err = c.Broadcast(ctx, req.Team, env, courier.Mode(req.Delivery)); err != nil {
		return out, err
	}
	out.Summary = courier.Summarize(out.Results)
	return out, nil
}
