package serve

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/agentmsg/agentmsg/service"
	"github.com/agentmsg/agentmsg/target"
	"github.com/agentmsg/agentmsg/wire"
)

// The requests group: post, claim and list requests, the status board,
// heartbeats and a team's stored state. Each answers the document of the
// command of the same name's --json.

// teamCaller is the caller a GET's query names: the server, and the team
// when the operation is about one.
func teamCaller(q wire.TeamQuery) Caller {
	return Caller{Team: q.Team, Socket: q.Socket, SocketName: q.SocketName}
}

// bodyCaller is a TeamBody's caller.
func bodyCaller(b wire.TeamBody) Caller {
	return asking(b.From, b.Team, b.Server)
}

// A team named in Caller is checked with it (backend.service); a team
// named only in a path is checked by the operation's check.

func (*Daemon) checkRequest(_ *http.Request, b *wire.RequestBody) (Caller, service.PostRequest, error) {
	c := asking(b.From, b.Team, b.Server)
	switch {
	case b.Team == "":
		return c, service.PostRequest{}, badRequest("team", errors.New("name the team to post the request in (team)"))
	case strings.TrimSpace(b.Description) == "":
		return c, service.PostRequest{}, badRequest("description", service.ErrEmptyDescription)
	}
	return c, service.PostRequest{Team: b.Team, Description: b.Description, Timeout: time.Duration(b.Timeout)}, nil
}

// request is POST /v1/request: post an open request in a team (request).
func (d *Daemon) request(r *http.Request, svc *service.Service, req service.PostRequest) (answer, error) {
	p, err := svc.Request(d.requestContext(r), req)
	if err != nil {
		return answer{}, err
	}
	doc := wire.NewRequest(p)
	return answerOf(doc.ExitCode, doc), nil
}

func (*Daemon) checkClaim(_ *http.Request, b *wire.ClaimBody) (Caller, service.ClaimRequest, error) {
	c := asking(b.From, b.Team, b.Server)
	if strings.TrimSpace(b.RequestID) == "" {
		return c, service.ClaimRequest{}, badRequest("request_id", errors.New("name the request to claim (request_id)"))
	}
	return c, service.ClaimRequest{Team: b.Team, RequestID: b.RequestID}, nil
}

// claim is POST /v1/claim: claim an open request; exactly one claimant
// gets it, and a lost claim is a verdict (200, exit_code 8), as the CLI's.
func (d *Daemon) claim(r *http.Request, svc *service.Service, req service.ClaimRequest) (answer, error) {
	res, err := svc.Claim(d.requestContext(r), req)
	if err != nil && wire.ErrorCode(err) != wire.ExitClaimed {
		return answer{}, err
	}
	doc := wire.NewClaim(req.RequestID, res, err)
	return answerOf(doc.ExitCode, doc), nil
}

// listRequests is GET /v1/requests?team=: a team's requests (requests).
func (d *Daemon) listRequests(r *http.Request, svc *service.Service, q wire.TeamQuery) (answer, error) {
	return d.requests(r, svc, q.Team, false)
}

// nudge is POST /v1/requests/nudge: tell the team, once, about each
// request that expired unclaimed, then list them (requests --nudge).
func (d *Daemon) nudge(r *http.Request, svc *service.Service, b wire.TeamBody) (answer, error) {
	return d.requests(r, svc, b.Team, true)
}

func (d *Daemon) requests(r *http.Request, svc *service.Service, team string, nudge bool) (answer, error) {
	l, err := svc.Requests(d.requestContext(r), service.ListRequests{Team: team, Nudge: nudge})
	if err != nil {
		return answer{}, err
	}
	code := wire.ExitOK
	if l.Unreadable != nil {
		code = wire.ErrorCode(l.Unreadable)
	}
	return answerOf(code, wire.RequestsAnswer{Requests: wire.NewRequests(l), Exit: exit(code, l.Unreadable)}), nil
}

func (*Daemon) checkStatus(_ *http.Request, b *wire.StatusBody) (Caller, service.StatusUpdate, error) {
	c := asking(b.From, b.Team, b.Server)
	up := service.StatusUpdate{Mission: b.Mission, WorkingOn: b.WorkingOn, Done: b.Done, Next: b.Next, State: b.State}
	if up == (service.StatusUpdate{}) {
		return c, up, badRequest("", errors.New("nothing to set: give mission, working_on, done, next or state"))
	}
	return c, up, nil
}

// status is POST /v1/status: set the caller's entry on its team's board;
// only the fields given change (status set).
func (d *Daemon) status(r *http.Request, svc *service.Service, up service.StatusUpdate) (answer, error) {
	res, err := svc.SetStatus(d.requestContext(r), up)
	if err != nil {
		return answer{}, err
	}
	return answerOf(wire.ExitOK, wire.StatusAnswer{Status: wire.NewStatus(res)}), nil
}

// heartbeat is POST /v1/heartbeat: record that the caller is alive now
// (heartbeat).
func (d *Daemon) heartbeat(r *http.Request, svc *service.Service, _ wire.TeamBody) (answer, error) {
	res, err := svc.Heartbeat(d.requestContext(r))
	if err != nil {
		return answer{}, err
	}
	return answerOf(wire.ExitOK, wire.HeartbeatAnswer{Heartbeat: wire.NewHeartbeat(res)}), nil
}

// board is GET /v1/board?team=: a team's status board (board). Entries
// that could not be read are said in error; the rest are there.
func (d *Daemon) board(r *http.Request, svc *service.Service, q wire.TeamQuery) (answer, error) {
	res, err := svc.Board(d.requestContext(r), q.Team)
	if err != nil {
		return answer{}, err
	}
	return answerOf(wire.ExitOK, wire.BoardAnswer{Board: wire.NewBoard(res), Exit: exit(wire.ExitOK, res.ReadErr)}), nil
}

// checkClean reads the team from the path.
func (*Daemon) checkClean(r *http.Request, b *wire.CleanBody) (Caller, service.CleanTeam, error) {
	team := r.PathValue("team")
	if err := target.ValidateTeam(team); err != nil {
		return onServer(b.Server), service.CleanTeam{}, badRequest("", err)
	}
	return onServer(b.Server), service.CleanTeam{Team: team, DryRun: !b.Yes}, nil
}

// cleanTeam is POST /v1/teams/{team}/clean: remove what the mailbox keeps
// for a team (team clean). Without yes it only says what that would be,
// refused as the CLI refuses it (400, exit 2).
func (d *Daemon) cleanTeam(r *http.Request, svc *service.Service, req service.CleanTeam) (answer, error) {
	res, err := svc.CleanTeam(d.requestContext(r), req)
	if err != nil {
		return answer{}, err
	}
	if res.Stored && !res.Removed {
		return answerOf(wire.ExitUsage, wire.TeamCleanAnswer{TeamClean: wire.NewTeamClean(res),
			Exit: exit(wire.ExitUsage, fmt.Errorf("team clean %s would remove %s; send yes: true to remove it", req.Team, res.Path))}), nil
	}
	return answerOf(wire.ExitOK, wire.TeamCleanAnswer{TeamClean: wire.NewTeamClean(res)}), nil
}
