package wire

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/service"
)

// The documents of the requests group: request, claim, requests, status
// set, heartbeat, board and team clean.

// Request is the report of a posted request (request).
type Request struct {
	RequestID   string    `json:"request_id"`
	Team        string    `json:"team"`
	From        string    `json:"from"`
	Description string    `json:"description"`
	Posted      time.Time `json:"posted"`
	Expires     time.Time `json:"expires,omitzero"`
	MessageID   string    `json:"message_id"`
	Notified    []string  `json:"notified"`
	ExitCode    int       `json:"exit_code"`
	Error       string    `json:"error,omitempty"`
}

// NewRequest is p as a document: partial (ExitPartial) when some agents
// could not be told.
func NewRequest(p service.Posted) Request {
	r := p.Request
	doc := Request{RequestID: r.ID, Team: p.Team, From: r.From, Description: r.Description, Posted: r.Posted,
		Expires: p.Expires, MessageID: string(p.MessageID), Notified: p.Notified, ExitCode: ExitOK}
	if len(p.Failed) > 0 {
		var parts []string
		for _, a := range slices.Sorted(maps.Keys(p.Failed)) {
			parts = append(parts, fmt.Sprintf("could not tell %s about %s: %v", a, r.ID, p.Failed[a]))
		}
		doc.ExitCode, doc.Error = ExitPartial, strings.Join(parts, "; ")
	}
	return doc
}

// Claim is what came of a claim (claim): won, or lost to another
// claimant or to the request's expiry (ExitClaimed).
type Claim struct {
	RequestID   string    `json:"request_id"`
	Team        string    `json:"team"`
	Claimed     bool      `json:"claimed"`
	ClaimedBy   string    `json:"claimed_by,omitempty"`
	ClaimedAt   time.Time `json:"claimed_at,omitzero"`
	From        string    `json:"from,omitempty"`
	Description string    `json:"description,omitempty"`
	Error       string    `json:"error,omitempty"`
	ExitCode    int       `json:"exit_code"`
}

// NewClaim is the claim of request id as a document: r when err is nil,
// else the lost claim err says (ErrorCode(err) is ExitClaimed: a
// *mailbox.ClaimedError or mailbox.ErrExpired).
func NewClaim(id string, r service.ClaimResult, err error) Claim {
	var ce *mailbox.ClaimedError
	switch {
	case errors.As(err, &ce):
		return Claim{RequestID: id, Team: r.Team, ClaimedBy: r.ClaimedBy, ClaimedAt: r.ClaimedAt, Error: err.Error(), ExitCode: ExitClaimed}
	case err != nil:
		return Claim{RequestID: id, Team: r.Team, From: r.Request.From, Description: r.Request.Description,
			Error: err.Error(), ExitCode: ExitClaimed}
	}
	return Claim{RequestID: r.Request.ID, Team: r.Team, Claimed: true, ClaimedBy: r.ClaimedBy, ClaimedAt: r.ClaimedAt,
		From: r.Request.From, Description: r.Request.Description}
}

// RequestInfo is one request of a team and its state.
type RequestInfo struct {
	ID          string               `json:"id"`
	State       mailbox.RequestState `json:"state"`
	From        string               `json:"from"`
	Description string               `json:"description"`
	Posted      time.Time            `json:"posted"`
	Expires     time.Time            `json:"expires,omitzero"`
	ClaimedBy   string               `json:"claimed_by,omitempty"`
	ClaimedAt   time.Time            `json:"claimed_at,omitzero"`
	Nudged      bool                 `json:"nudged,omitempty"`
}

// Requests is a team's requests, oldest first, and those this call
// nudged the team about (requests).
type Requests struct {
	Team     string        `json:"team"`
	Requests []RequestInfo `json:"requests"`
	Nudged   []string      `json:"nudged"`
}

// NewRequests is l as a document.
func NewRequests(l service.RequestList) Requests {
	doc := Requests{Team: l.Team, Requests: make([]RequestInfo, 0, len(l.Requests)), Nudged: []string{}}
	for _, r := range l.Nudged {
		doc.Nudged = append(doc.Nudged, r.ID)
	}
	for _, r := range l.Requests {
		doc.Requests = append(doc.Requests, RequestInfo{ID: r.ID, State: r.State, From: r.From, Description: r.Description,
			Posted: r.Posted, Expires: r.Expires, ClaimedBy: r.ClaimedBy, ClaimedAt: r.ClaimedAt, Nudged: r.Nudged})
	}
	return doc
}

// Status is the caller's entry on its team's board as now stored (status
// set).
type Status struct {
	Team string `json:"team"`
	mailbox.Status
}

// NewStatus is r as a document.
func NewStatus(r service.StatusResult) Status { return Status{r.Team, r.Status} }

// Heartbeat is a heartbeat as recorded (heartbeat).
type Heartbeat struct {
	Team  string    `json:"team"`
	Agent string    `json:"agent"`
	At    time.Time `json:"at"`
}

// NewHeartbeat is r as a document.
func NewHeartbeat(r service.HeartbeatResult) Heartbeat { return Heartbeat{r.Team, r.Agent, r.At.UTC()} }

// Board is a team's status board (board).
type Board struct {
	Team   string           `json:"team"`
	Agents []mailbox.Status `json:"agents"`
}

// NewBoard is b as a document.
func NewBoard(b service.BoardResult) Board { return Board{b.Team, b.Agents} }

// TeamClean is what the mailbox keeps, or kept, for a team (team clean).
type TeamClean struct {
	Team     string   `json:"team"`
	Path     string   `json:"path"`
	Removed  bool     `json:"removed"`
	Inboxes  []string `json:"inboxes,omitempty"`
	Requests int      `json:"requests"`
	Statuses int      `json:"statuses"`
}

// NewTeamClean is r as a document: the team and its path alone when
// nothing is stored for it.
func NewTeamClean(r service.CleanResult) TeamClean {
	if !r.Stored {
		return TeamClean{Team: r.Team, Path: r.Path}
	}
	return TeamClean{Team: r.Team, Path: r.Path, Removed: r.Removed, Inboxes: r.Inboxes, Requests: r.Requests, Statuses: r.Statuses}
}
