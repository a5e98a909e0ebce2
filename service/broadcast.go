package service

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentmsg/agentmsg/broadcast"
	"github.com/agentmsg/agentmsg/courier"
	"github.com/agentmsg/agentmsg/delivery"
	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
	"github.com/agentmsg/agentmsg/target"
)

// BroadcastRequest is one message to every agent of a team, or with All
// to every agent session on the server.
type BroadcastRequest struct {
	Team string // "" only with All
	All  bool
	// AllHosts: the agents of every host on the bus too (their copies go
	// through the daemon's link, each typed by its own host).
	AllHosts bool
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
// enqueue rule, as for Send). Its copies are recorded in one step, so a
// crash leaves it in every inbox or none; a broadcast with the writer's
// own id that is asked for again (the same message to the same team)
// finishes what the first did not, and answers for every copy
// (courier.BroadcastOnce).
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
	out.ID = env.ID
	c := s.carrier(d)
	if req.AllHosts && s.Hosts == nil {
		return out, fmt.Errorf("%w: --all-hosts reaches other hosts through agentmsg serve; start it (agentmsg serve)", ErrNoLink)
	}
	if req.Draft.ID != "" {
		// The writer's own id: a retry (its client never got the answer)
		// finishes the broadcast it retries, never records it twice.
		out.Results, err = c.BroadcastOnce(ctx, req.Team, env, courier.Mode(req.Delivery))
	} else {
		out.Results, err = c.Broadcast(ctx, req.Team, env, courier.Mode(req.Delivery))
	}
	var taken *courier.IDTakenError
	if errors.As(err, &taken) {
		return out, fmt.Errorf("%w: %w", ErrDuplicateID, err)
	}
	if err != nil && !(req.AllHosts && errors.Is(err, dispatch.ErrNoTargets)) {
		return out, err
	}
	if req.AllHosts {
		remote, err := s.broadcastRemote(ctx, req, env)
		if err != nil {
			return out, err
		}
		out.Results = append(out.Results, remote...)
		if len(out.Results) == 0 {
			return out, fmt.Errorf("%w: no agent of team %s on any host", dispatch.ErrNoTargets, req.Team)
		}
	}
	out.Summary = courier.Summarize(out.Results)
	return out, nil
}

// remoteFanOut bounds the copies of a broadcast in flight to other hosts.
const remoteFanOut = 32

// broadcastRemote sends env to the agents of req.Team (or all) on every
// other host the bus lists, in parallel, each copy typed by its own host.
func (s *Service) broadcastRemote(ctx context.Context, req BroadcastRequest, env mailbox.Envelope) ([]courier.Result, error) {
	list, err := s.Hosts.List(ctx)
	if err != nil && len(list) <= 1 {
		return nil, fmt.Errorf("listing the other hosts: %w", err)
	}
	req.Delivery = s.remoteDelivery(req.Delivery)
	type copyTo struct {
		host string
		t    target.Target
	}
	var copies []copyTo
	for _, h := range list {
		if h.Self {
			continue
		}
		for _, name := range h.Agents {
			t, err := listedTarget(name)
			if err != nil || (!req.All && t.Team != req.Team) {
				continue
			}
			copies = append(copies, copyTo{h.Name, t})
		}
	}
	return broadcast.Each(ctx, copies, remoteFanOut, func(ctx context.Context, c copyTo) courier.Result {
		res, err := s.Hosts.Send(ctx, RemoteRequest{Host: c.host, To: c.t, Env: env, Tag: s.Sender, Delivery: req.Delivery})
		if err != nil {
			res = courier.Result{Outcome: dispatch.Outcome{Target: c.t, ID: env.ID, Verdict: delivery.Failed, Err: err}, Host: c.host}
		}
		return res
	}), nil
}

// listedTarget is the agent a host's presence lists as "team/agent" (or
// "ralph-<id>", team-less): target.Target's String.
func listedTarget(s string) (target.Target, error) {
	team, agent, ok := strings.Cut(s, "/")
	if !ok {
		return target.New("", s)
	}
	return target.New(team, agent)
}
