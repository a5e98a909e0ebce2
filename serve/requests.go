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

// A team named in Caller is checked with it (backend.service); a team
// named only in a path is checked by the handler.

// request is POST /v1/request: post an open request in a team (request).
func (d *Daemon) request(w http.ResponseWriter, r *http.Request) {
	var b wire.RequestBody
	if !decode(w, r, &b) {
		return
	}
	switch {
	case b.Team == "":
		failCode(w, http.StatusBadRequest, "", "team", errors.New("name the team to post the request in (team)"))
		return
	case strings.TrimSpace(b.Description) == "":
		failCode(w, http.StatusBadRequest, "", "description", service.ErrEmptyDescription)
		return
	}
	svc, ok := d.serviceFor(w, Caller{From: b.From, Team: b.Team, Socket: b.Socket, SocketName: b.SocketName})
	if !ok {
		return
	}
	p, err := svc.Request(d.requestContext(r), service.PostRequest{Team: b.Team, Description: b.Description, Timeout: time.Duration(b.Timeout)})
	if err != nil {
		fail(w, 0, err)
		return
	}
	doc := wire.NewRequest(p)
	respond(w, doc.ExitCode, doc)
}

// claim is POST /v1/claim: claim an open request; exactly one claimant
// gets it, and a lost claim is a verdict (200, exit_code 8), as the CLI's.
func (d *Daemon) claim(w http.ResponseWriter, r *http.Request) {
	var b wire.ClaimBody
	if !decode(w, r, &b) {
		return
	}
	if strings.TrimSpace(b.RequestID) == "" {
		failCode(w, http.StatusBadRequest, "", "request_id", errors.New("name the request to claim (request_id)"))
		return
	}
	svc, ok := d.serviceFor(w, Caller{From: b.From, Team: b.Team, Socket: b.Socket, SocketName: b.SocketName})
	if !ok {
		return
	}
	res, err := svc.Claim(d.requestContext(r), service.ClaimRequest{Team: b.Team, RequestID: b.RequestID})
	if err != nil && wire.ErrorCode(err) != wire.ExitClaimed {
		fail(w, 0, err)
		return
	}
	doc := wire.NewClaim(b.RequestID, res, err)
	respond(w, doc.ExitCode, doc)
}

// requests is GET /v1/requests?team=: a team's requests (requests).
func (d *Daemon) requests(w http.ResponseWriter, r *http.Request) {
	var q wire.TeamQuery
	if decodeQuery(w, r, &q) {
		d.listRequests(w, r, teamCaller(q), false)
	}
}

// bodyCaller is a TeamBody's caller.
func bodyCaller(b wire.TeamBody) Caller {
	return Caller{From: b.From, Team: b.Team, Socket: b.Socket, SocketName: b.SocketName}
}

// nudge is POST /v1/requests/nudge: tell the team, once, about each
// request that expired unclaimed, then list them (requests --nudge).
func (d *Daemon) nudge(w http.ResponseWriter, r *http.Request) {
	var b wire.TeamBody
	if decode(w, r, &b) {
		d.listRequests(w, r, bodyCaller(b), true)
	}
}

func (d *Daemon) listRequests(w http.ResponseWriter, r *http.Request, c Caller, nudge bool) {
	svc, ok := d.serviceFor(w, c)
	if !ok {
		return
	}
	l, err := svc.Requests(d.requestContext(r), service.ListRequests{Team: c.Team, Nudge: nudge})
	if err != nil {
		fail(w, 0, err)
		return
	}
	code := wire.ExitOK
	if l.Unreadable != nil {
		code = wire.ErrorCode(l.Unreadable)
	}
	respond(w, code, wire.RequestsAnswer{Requests: wire.NewRequests(l), Exit: exit(code, l.Unreadable)})
}

// status is POST /v1/status: set the caller's entry on its team's board;
// only the fields given change (status set).
func (d *Daemon) status(w http.ResponseWriter, r *http.Request) {
	var b wire.StatusBody
	if !decode(w, r, &b) {
		return
	}
	up := service.StatusUpdate{Mission: b.Mission, WorkingOn: b.WorkingOn, Done: b.Done, Next: b.Next, State: b.State}
	if up == (service.StatusUpdate{}) {
		fail(w, http.StatusBadRequest, errors.New("nothing to set: give mission, working_on, done, next or state"))
		return
	}
	svc, ok := d.serviceFor(w, Caller{From: b.From, Team: b.Team, Socket: b.Socket, SocketName: b.SocketName})
	if !ok {
		return
	}
	res, err := svc.SetStatus(d.requestContext(r), up)
	if err != nil {
		fail(w, 0, err)
		return
	}
	respond(w, wire.ExitOK, wire.StatusAnswer{Status: wire.NewStatus(res)})
}

// heartbeat is POST /v1/heartbeat: record that the caller is alive now
// (heartbeat).
func (d *Daemon) heartbeat(w http.ResponseWriter, r *http.Request) {
	var b wire.TeamBody
	if !decode(w, r, &b) {
		return
	}
	svc, ok := d.serviceFor(w, bodyCaller(b))
	if !ok {
		return
	}
	res, err := svc.Heartbeat(d.requestContext(r))
	if err != nil {
		fail(w, 0, err)
		return
	}
	respond(w, wire.ExitOK, wire.HeartbeatAnswer{Heartbeat: wire.NewHeartbeat(res)})
}

// board is GET /v1/board?team=: a team's status board (board). Entries
// that could not be read are said in error; the rest are there.
func (d *Daemon) board(w http.ResponseWriter, r *http.Request) {
	var q wire.TeamQuery
	if !decodeQuery(w, r, &q) {
		return
	}
	c := teamCaller(q)
	svc, ok := d.serviceFor(w, c)
	if !ok {
		return
	}
	res, err := svc.Board(d.requestContext(r), c.Team)
	if err != nil {
		fail(w, 0, err)
		return
	}
	respond(w, wire.ExitOK, wire.BoardAnswer{Board: wire.NewBoard(res), Exit: exit(wire.ExitOK, res.ReadErr)})
}

// cleanTeam is POST /v1/teams/{team}/clean: remove what the mailbox keeps
// for a team (team clean). Without yes it only says what that would be,
// refused as the CLI refuses it (400, exit 2).
func (d *Daemon) cleanTeam(w http.ResponseWriter, r *http.Request) {
	var b wire.CleanBody
	team := r.PathValue("team")
	if !decode(w, r, &b) {
		return
	}
	if err := target.ValidateTeam(team); err != nil {
		fail(w, http.StatusBadRequest, err)
		return
	}
	svc, ok := d.serviceFor(w, Caller{Socket: b.Socket, SocketName: b.SocketName})
	if !ok {
		return
	}
	res, err := svc.CleanTeam(d.requestContext(r), service.CleanTeam{Team: team, DryRun: !b.Yes})
	if err != nil {
		fail(w, 0, err)
		return
	}
	if res.Stored && !res.Removed {
		respond(w, wire.ExitUsage, wire.TeamCleanAnswer{TeamClean: wire.NewTeamClean(res),
			Exit: exit(wire.ExitUsage, fmt.Errorf("team clean %s would remove %s; send yes: true to remove it", team, res.Path))})
		return
	}
	respond(w, wire.ExitOK, wire.TeamCleanAnswer{TeamClean: wire.NewTeamClean(res)})
}
