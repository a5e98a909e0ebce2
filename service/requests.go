package service

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
)

// The requests group: open requests (post, claim, list), the status board
// (set, show) and a team's stored state (clean).

// ErrEmptyDescription: a request must say what needs doing.
var ErrEmptyDescription = errors.New("the request's description is empty")

// ErrBadTimeout: a request's timeout is negative.
var ErrBadTimeout = errors.New("a request's timeout must be 0 (never expires) or more")

// PostRequest is a request to post. Team "" is the caller's own; a team
// named here must exist (ErrNoTeam).
type PostRequest struct {
	Team        string
	Description string        // cleaned (message.Clean) and trimmed before it is stored
	Timeout     time.Duration // 0: never expires; clamped to mailbox.MaxRequestTimeout
}

// Posted is a posted request and who was told of it.
type Posted struct {
	Team    string
	Request mailbox.Request // as stored: ID, From, Description, Timeout, Posted
	Expires time.Time       // zero: never
	// MessageID is the request message put into each agent's inbox.
	MessageID message.ID
	// Notified are the agents whose inbox got it; Failed those it could
	// not be put into, with why. The request is posted either way.
	Notified []string
	Failed   map[string]error
}

// Request posts an open request in a team and puts a message of type
// request, addressed to everyone and pending (deliver types it), into the
// inbox of every other agent of the team: those with an inbox, those on
// the status board and those with a tmux session now (best effort: with
// no tmux, the mailbox alone says who is there). The description is
// cleaned as every text that may be typed into a pane is.
//
// The CLI used to store the description raw and tell only inboxes and
// sessions, the MCP tool cleaned it and told the board too: both now do
// what the MCP tool did, as the text is typed into panes and an agent on
// the board is one of the team.
func (s *Service) Request(ctx context.Context, req PostRequest) (Posted, error) {
	team, err := s.team(ctx, req.Team)
	if err != nil {
		return Posted{}, err
	}
	desc := strings.TrimSpace(message.Clean(req.Description))
	if desc == "" {
		return Posted{}, ErrEmptyDescription
	}
	if req.Timeout < 0 {
		return Posted{}, ErrBadTimeout
	}
	reqID, err := message.NewRequestID()
	if err != nil {
		return Posted{}, err
	}
	r := mailbox.Request{ID: reqID, From: s.Name, Description: desc, Timeout: min(req.Timeout, mailbox.MaxRequestTimeout),
		Posted: s.clockUTC()}
	id, err := message.NewID(s.Sender, nil)
	if err != nil {
		return Posted{}, err
	}
	out := Posted{Team: team, Request: r, Notified: []string{}, MessageID: id}
	// Pending: the agents see it in their inbox, and deliver types it
	// (with its REQ_ id) into their panes while it is still open.
	env := mailbox.Envelope{ID: id, From: s.Name, To: mailbox.Broadcast, Type: mailbox.TypeRequest, Content: desc,
		RequestID: reqID, Timestamp: r.Posted, Delivery: &mailbox.Delivery{State: mailbox.StatePending}}
	if r.Timeout > 0 {
		out.Expires = r.Posted.Add(r.Timeout)
		env.Metadata = map[string]string{"expires": out.Expires.Format(time.RFC3339)}
	}
	others := slices.DeleteFunc(s.teamNames(ctx, team), func(a string) bool { return a == s.Name })
	// Posted and told in one step: a request is never posted with only
	// part of its team told (a process killed between two inboxes).
	err = s.Store.PostTelling(team, r, env, others)
	var be *mailbox.BroadcastError
	switch {
	case errors.As(err, &be):
		// Posted; the inboxes not told now are told by the next deliver.
		out.Notified, out.Failed = append(out.Notified, be.Delivered...), be.Failed
		return out, nil
	case err != nil:
		return Posted{}, err
	}
	out.Notified = append(out.Notified, others...)
	return out, nil
}

// teamNames are the agents of team, sorted: those with an inbox or a
// board entry, and those with a tmux session now (when the server can be
// reached).
func (s *Service) teamNames(ctx context.Context, team string) []string {
	names, _ := s.Store.Agents(team)
	if board, err := s.Store.Board(team); err == nil {
		for _, st := range board {
			names = append(names, st.Agent)
		}
	}
	if live, err := s.liveAgents(ctx, team); err == nil {
		names = append(names, live...)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// ClaimRequest is a claim of RequestID in Team ("" the caller's own; a
// team named here must exist).
type ClaimRequest struct {
	Team      string
	RequestID string
}

// ClaimResult is who has the request. A lost claim is also an error: a
// *mailbox.ClaimedError (ClaimedBy, ClaimedAt set) or mailbox.ErrExpired
// (Expires set); the result says what is known either way.
type ClaimResult struct {
	Team      string
	Request   mailbox.Request // as posted, as far as it could be read
	Claimed   bool            // the caller got it
	ClaimedBy string
	ClaimedAt time.Time
	Expires   time.Time
	// TellErr: the claim stands, but the requester's claim message could
	// not be stored.
	TellErr error
}

// Claim takes an open request for the caller; however many claim it at
// once, exactly one gets it. The requester (unless it is the caller) gets
// a message of type claim naming the claimant.
func (s *Service) Claim(ctx context.Context, req ClaimRequest) (ClaimResult, error) {
	team, err := s.team(ctx, req.Team)
	if err != nil {
		return ClaimResult{}, err
	}
	id := strings.TrimSpace(req.RequestID)
	// Claimed and the requester told in one step: a claimant killed
	// between the two never leaves the requester untold for good.
	r, err := s.Store.ClaimTelling(team, id, s.Name, s.claimMessage)
	var untold *mailbox.BroadcastError
	if errors.As(err, &untold) {
		err = nil // the claim stands; the next deliver records the message
	}
	out := ClaimResult{Team: team, Request: r}
	if out.Request.ID == "" {
		out.Request.ID = id
	}
	var ce *mailbox.ClaimedError
	switch {
	case errors.As(err, &ce):
		out.ClaimedBy, out.ClaimedAt = ce.By, ce.At
		return out, err
	case errors.Is(err, mailbox.ErrExpired):
		out.Expires = r.Posted.Add(r.Timeout)
		return out, err
	case err != nil:
		return out, err
	}
	out.Claimed, out.ClaimedBy, out.ClaimedAt = true, s.Name, s.clockUTC()
	if untold != nil {
		out.TellErr = untold
	}
	return out, nil
}

// claimMessage is the claim message for r's requester.
func (s *Service) claimMessage(r mailbox.Request) (mailbox.Envelope, error) {
	id, err := message.NewID(s.Sender, nil)
	if err != nil {
		return mailbox.Envelope{}, err
	}
	return mailbox.Envelope{ID: id, From: s.Name, To: r.From, Type: mailbox.TypeClaim, RequestID: r.ID,
		Content:  fmt.Sprintf("%s claimed by %s: %s", r.ID, s.Name, r.Description),
		Delivery: &mailbox.Delivery{State: mailbox.StatePending}}, nil
}

// ListRequests asks for a team's requests ("" the caller's own; a team
// named here must exist). Nudge first tells the team, once per request,
// about each request that expired unclaimed.
type ListRequests struct {
	Team  string
	Nudge bool
}

// RequestEntry is one request, its state, and its expiry (zero: never).
type RequestEntry struct {
	mailbox.RequestInfo
	Expires time.Time
	Nudged  bool // expired, and the team was told
}

// RequestList is a team's requests, oldest first.
type RequestList struct {
	Team     string
	Requests []RequestEntry
	// Nudged are the requests this call told the team about.
	Nudged []mailbox.RequestInfo
	// Unreadable: some requests could not be read (the rest are listed).
	Unreadable error
}

// Requests lists a team's requests, open, claimed or expired. An error
// from nudging comes back with the requests nudged before it.
func (s *Service) Requests(ctx context.Context, req ListRequests) (RequestList, error) {
	team, err := s.team(ctx, req.Team)
	if err != nil {
		return RequestList{}, err
	}
	out := RequestList{Team: team, Requests: []RequestEntry{}}
	if req.Nudge {
		done, err := s.Store.NudgeExpired(team, s.ExpiredNotice)
		out.Nudged = done
		if err != nil {
			return out, err
		}
	}
	reqs, err := s.Store.Requests(team)
	if err != nil && len(reqs) == 0 {
		return out, err
	}
	out.Unreadable = err
	for _, r := range reqs {
		e := RequestEntry{RequestInfo: r}
		if r.Timeout > 0 {
			e.Expires = r.Posted.Add(r.Timeout)
		}
		if r.State == mailbox.RequestExpired {
			e.Nudged, _ = s.Store.Nudged(team, r.ID)
		}
		out.Requests = append(out.Requests, e)
	}
	return out, nil
}

// ExpiredNotice is the reminder a team gets, from the caller, for a
// request whose time ran out unclaimed (for mailbox.Store.NudgeExpired).
func (s *Service) ExpiredNotice(r mailbox.RequestInfo) (mailbox.Envelope, error) {
	id, err := message.NewID(s.Sender, nil)
	if err != nil {
		return mailbox.Envelope{}, err
	}
	return mailbox.Envelope{ID: id, From: s.Name, To: mailbox.Broadcast, Type: mailbox.TypeRequest, RequestID: r.ID,
		Content:  fmt.Sprintf("Reminder: request %s from %s expired unclaimed after %s: %s", r.ID, r.From, r.Timeout, r.Description),
		Metadata: map[string]string{mailbox.MetaNudge: "expired"}, Delivery: &mailbox.Delivery{State: mailbox.StatePending}}, nil
}

// ErrBadState: a status state that is not one of mailbox.StatusStates.
var ErrBadState = errors.New("not a status state")

// StatusUpdate changes the caller's entry on its team's board: only the
// fields given (non-nil) change; an empty list clears one.
type StatusUpdate struct {
	Mission, WorkingOn, State *string
	Done, Next                *[]string
}

// StatusResult is the caller's entry as now stored. BoardErr: the board
// could not be read, so fields not given start empty.
type StatusResult struct {
	Team     string
	Status   mailbox.Status
	BoardErr error
}

// SetStatus updates the caller's entry on its own team's board.
func (s *Service) SetStatus(ctx context.Context, up StatusUpdate) (StatusResult, error) {
	team, err := s.team(ctx, "")
	if err != nil {
		return StatusResult{}, err
	}
	if up.State != nil && !slices.Contains(mailbox.StatusStates(), *up.State) {
		return StatusResult{}, fmt.Errorf("%w: %q (want one of %s)", ErrBadState, *up.State, strings.Join(mailbox.StatusStates(), ", "))
	}
	out := StatusResult{Team: team}
	board, err := s.Store.Board(team)
	if err != nil && len(board) == 0 {
		out.BoardErr = err // an unreadable board still lets an agent say what it does
	}
	st := mailbox.Status{}
	for _, b := range board {
		if b.Agent == s.Name {
			st = b
		}
	}
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = *v
		}
	}
	set(&st.Mission, up.Mission)
	set(&st.WorkingOn, up.WorkingOn)
	set(&st.State, up.State)
	if up.Done != nil {
		st.Done = *up.Done
	}
	if up.Next != nil {
		st.Next = *up.Next
	}
	st.Updated = s.clockUTC()
	if err := s.Store.SetStatus(team, s.Name, st); err != nil {
		return out, err
	}
	st.Agent = s.Name
	out.Status = st
	return out, nil
}

// BoardResult is a team's status board. ReadErr: some entries could not
// be read (the rest are there).
type BoardResult struct {
	Team    string
	Agents  []mailbox.Status
	ReadErr error
}

// Board reads the status board of team ("" the caller's own; a team named
// here must exist). It is an error only when nothing could be read.
func (s *Service) Board(ctx context.Context, team string) (BoardResult, error) {
	team, err := s.team(ctx, team)
	if err != nil {
		return BoardResult{}, err
	}
	board, err := s.Store.Board(team)
	if board == nil {
		board = []mailbox.Status{}
	}
	out := BoardResult{Team: team, Agents: board, ReadErr: err}
	if err != nil && len(board) == 0 {
		return out, err
	}
	return out, nil
}

// CleanTeam asks to remove what the mailbox keeps for Team; with DryRun
// it only says what that would be.
type CleanTeam struct {
	Team   string
	DryRun bool
}

// CleanResult is what is (or was) stored for a team. Stored is false when
// nothing is: then nothing was removed.
type CleanResult struct {
	Team     string
	Path     string
	Stored   bool
	Removed  bool
	Inboxes  []string
	Requests int
	Statuses int
}

// CleanTeam removes a team's inboxes and read cursors, requests and
// status board. Messages not yet delivered are lost with it.
func (s *Service) CleanTeam(ctx context.Context, req CleanTeam) (CleanResult, error) {
	out := CleanResult{Team: req.Team, Path: s.Store.TeamDir(req.Team)}
	agents, err := s.Store.Agents(req.Team)
	if err != nil {
		return out, err
	}
	reqs, _ := s.Store.Requests(req.Team)
	board, _ := s.Store.Board(req.Team)
	teams, err := s.Store.Teams()
	if err != nil {
		return out, err
	}
	out.Stored = slices.Contains(teams, req.Team)
	out.Inboxes, out.Requests, out.Statuses = append([]string{}, agents...), len(reqs), len(board)
	if !out.Stored || req.DryRun {
		return out, nil
	}
	if err := s.Store.CleanTeam(req.Team); err != nil {
		return out, err
	}
	out.Removed = true
	return out, nil
}

// ErrNoTeam is a team that has never existed: nothing is stored for it and
// no agent session on the tmux server is in it. Errors that wrap it are
// *TeamNotFoundError.
var ErrNoTeam = errors.New("no such team")

// ErrTeamNeeded: the operation needs a team, none was given and the
// caller's own is not known. Each front end says how to give one.
var ErrTeamNeeded = errors.New("the caller's team is not known")

// TeamNotFoundError is ErrNoTeam for Team; Teams are the teams that do
// exist (stored, or with agent sessions now).
type TeamNotFoundError struct {
	Team  string
	Teams []string
}

func (e *TeamNotFoundError) Error() string {
	there := "there are none yet"
	if len(e.Teams) > 0 {
		there = "teams: " + strings.Join(e.Teams, ", ")
	}
	return fmt.Sprintf("%v %q: nothing is stored for it and no agent session on the tmux server is in it (%s)", ErrNoTeam, e.Team, there)
}

func (e *TeamNotFoundError) Is(target error) bool { return target == ErrNoTeam }

// team is the team an operation acts on: named, checked with CheckTeam so
// that a mistyped team is never read as an empty one; or, when named is
// "", the caller's own, which may have nothing stored yet.
func (s *Service) team(ctx context.Context, named string) (string, error) {
	if named == "" {
		if s.Team == "" {
			return "", ErrTeamNeeded
		}
		return s.Team, nil
	}
	return named, s.CheckTeam(ctx, named)
}

// CheckTeam is nil when team exists: something is stored for it (an inbox,
// a status, a request, a registry entry) or an agent session on the tmux
// server is in it. Otherwise it is a *TeamNotFoundError (ErrNoTeam).
// When the store cannot say, it is not for us to refuse: nil.
func (s *Service) CheckTeam(ctx context.Context, team string) error {
	stored, err := s.Store.Teams()
	if err != nil || slices.Contains(stored, team) {
		return nil
	}
	running, _ := s.liveTeams(ctx)
	if slices.Contains(running, team) {
		return nil
	}
	return &TeamNotFoundError{Team: team, Teams: slices.Compact(slices.Sorted(slices.Values(append(stored, running...))))}
}

// errNoDispatcher: the service was built without a tmux side.
var errNoDispatcher = errors.New("no tmux server configured")

// liveTeams lists the teams of the agent sessions on the tmux server (an
// error when there is no server to ask).
func (s *Service) liveTeams(ctx context.Context) ([]string, error) {
	if s.Dispatcher == nil {
		return nil, errNoDispatcher
	}
	d, err := s.Dispatcher()
	if err != nil {
		return nil, err
	}
	ts, err := d.Targets(ctx, "")
	var teams []string
	for _, t := range ts {
		if !t.IsRalph() && !slices.Contains(teams, t.Team) {
			teams = append(teams, t.Team)
		}
	}
	return teams, err
}

// liveAgents lists the agents of team with a session on the tmux server
// now (an error when there is no server to ask).
func (s *Service) liveAgents(ctx context.Context, team string) ([]string, error) {
	if s.Dispatcher == nil {
		return nil, errNoDispatcher
	}
	d, err := s.Dispatcher()
	if err != nil {
		return nil, err
	}
	ts, err := d.Targets(ctx, team)
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.Agent()
	}
	return names, err
}

// clockUTC is the time now, in UTC, by the service's clock.
func (s *Service) clockUTC() time.Time {
	if s.Now == nil {
		return time.Now().UTC()
	}
	return s.Now().UTC()
}
