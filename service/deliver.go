package service

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentmsg/agentmsg/courier"
	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/profile"
)

// DeliverRequest is one deliver pass and what it chooses.
type DeliverRequest struct {
	// Team, when set, is the only team whose inboxes are delivered (it
	// must exist: see CheckTeam); "" is every team.
	Team string
	// ReadyTimeout, when above 0, bounds each agent's wait for readiness
	// in this pass instead of the configured one: a pass looks, it need
	// not wait long when another comes soon.
	ReadyTimeout time.Duration
	// LeaveSelf leaves the caller's own pane out. By default a pass types
	// into it too: the Stop hook runs deliver inside the agent's own pane,
	// and the messages waiting for that agent are what it is for.
	LeaveSelf bool
	// TakeTurns: this pass runs alone among the passes of its team (Team,
	// or every team) on this server that take turns, and at most one more
	// waits to run after it; a pass that finds one waiting returns
	// *courier.PassAheadError at once, as that one types what waits now
	// (see courier.TakeTurn). A turn-end hook's deliver takes turns: one
	// runs at every agent's turn end.
	TakeTurns bool
	// Limit, when above 0, bounds the pass, and with TakeTurns the wait
	// for the pass at work, each: a hook's deliver ends by itself.
	Limit time.Duration
	// Agent, when set, reads every agent's pane in the pass as this
	// profile (chosen by hand); AgentWhy says so.
	Agent    *profile.Profile
	AgentWhy string
	// Listed is what the caller knows of the agent sessions on the
	// server a moment ago (a receiver of other hosts' messages has
	// looked): the pass lists them only for a session it does not name.
	Listed courier.Listing
}

// DeliverResult is what one pass did.
type DeliverResult struct {
	// Typed are the messages the pass tried, in order, deferrals included.
	Typed []courier.Typing
	// Reminded are the expired, unclaimed requests whose team this pass
	// told (once each); RemindErr, why some could not be (reminders only).
	Reminded  []mailbox.RequestInfo
	RemindErr error
}

// Delivered counts the messages the pass got to their agents (submitted,
// or queued by the agent).
func (r DeliverResult) Delivered() int {
	n := 0
	for _, t := range r.Typed {
		if t.Outcome.OK() {
			n++
		}
	}
	return n
}

// Deliver makes one pass: requests whose time ran out unclaimed are told
// to their team, once (the reminders go out in this same pass), then every
// message waiting in an inbox (of req.Team, or all) is typed into its
// agent once it is ready, oldest first, each exactly once (see
// courier.Deliver). A pass that typed some messages and failed on others
// returns both, the error a *PassError. A watch is a loop of passes run by the front end.
func (s *Service) Deliver(ctx context.Context, req DeliverRequest) (DeliverResult, error) {
	var out DeliverResult
	if s.Dispatcher == nil {
		return out, errNoDispatcher
	}
	d, err := s.Dispatcher()
	if err != nil {
		return out, err
	}
	c := s.carrier(d)
	if req.Team != "" {
		if err := s.CheckTeam(ctx, req.Team); err != nil {
			return out, err
		}
	}
	if req.TakeTurns {
		release, err := c.TakeTurn(ctx, req.Team, req.Limit)
		if err != nil {
			return out, err
		}
		defer release()
	}
	if req.Limit > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, req.Limit)
		defer cancel()
	}
	out.Reminded, out.RemindErr = s.remindExpired(req.Team)
	call := dispatch.Call{ReadyTimeout: req.ReadyTimeout, IntoSelf: !req.LeaveSelf, Agent: req.Agent, AgentWhy: req.AgentWhy}
	if out.Typed, err = c.DeliverListed(ctx, req.Team, call, req.Listed); err != nil {
		return out, &PassError{Err: err}
	}
	return out, nil
}

// PassError: a deliver pass ran, and some inboxes or messages failed in it
// (the rest were delivered); the next pass tries them again. Any other
// error from Deliver means the pass could not start (no tmux server, an
// unknown team).
type PassError struct{ Err error }

func (e *PassError) Error() string { return e.Err.Error() }
func (e *PassError) Unwrap() error { return e.Err }

// remindExpired tells team (or each team) of its expired, unclaimed
// requests, once each, in the caller's name.
func (s *Service) remindExpired(team string) ([]mailbox.RequestInfo, error) {
	teams := []string{team}
	if team == "" {
		var err error
		if teams, err = s.Store.Teams(); err != nil {
			return nil, err
		}
	}
	var (
		done []mailbox.RequestInfo
		errs []error
	)
	for _, tm := range teams {
		told, err := s.Store.NudgeExpired(tm, s.ExpiredNotice)
		done = append(done, told...)
		if err != nil {
			errs = append(errs, fmt.Errorf("team %s: %w", tm, err))
		}
	}
	return done, errors.Join(errs...)
}
