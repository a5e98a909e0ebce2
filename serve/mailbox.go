package serve

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
	"github.com/agentmsg/agentmsg/service"
	"github.com/agentmsg/agentmsg/target"
	"github.com/agentmsg/agentmsg/wire"
)

// The mailbox: the log, waiting for a message, and a person's settling of
// a message (handled, retry). read is GET /v1/messages/{id}, whose
// message is read's --json document.

// defaultWait is how long wait waits when the request does not say (as
// wait --timeout).
const defaultWait = 30 * time.Second

// messageLog is GET /v1/log?team=&agent=&id=: the messages kept in the inboxes
// and how far each got (log), or with id one message's history (log --id).
func (d *Daemon) messageLog(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	req := service.LogRequest{Team: q.Get("team"), Agent: q.Get("agent")}
	id := q.Get("id")
	switch {
	case req.Agent != "" && req.Team == "":
		fail(w, http.StatusBadRequest, errors.New("agent needs its team"))
		return
	case req.Agent != "":
		if _, err := target.New(req.Team, req.Agent); err != nil {
			fail(w, http.StatusBadRequest, err)
			return
		}
	case req.Team != "":
		if err := target.ValidateTeam(req.Team); err != nil {
			fail(w, http.StatusBadRequest, err)
			return
		}
	}
	if id != "" && !message.Valid(id) {
		fail(w, http.StatusBadRequest, fmt.Errorf("id %q is not a message id (MSG_<SENDER>_<8 hex>)", id))
		return
	}
	svc, ok := d.serviceFor(w, Caller{Socket: q.Get("socket"), SocketName: q.Get("socket_name")})
	if !ok {
		return
	}
	if id != "" {
		copies, err := svc.History(r.Context(), req, message.ID(id))
		if err != nil {
			fail(w, 0, err)
			return
		}
		respondCoded(w, wire.History{ID: message.ID(id), Copies: copies}, wire.ExitOK, nil)
		return
	}
	res, err := svc.Log(r.Context(), req)
	if err != nil {
		fail(w, 0, err)
		return
	}
	respondCoded(w, wire.Log{Messages: res.Entries}, wire.ExitOK, nil)
}

type waitBody struct {
	Team    string    `json:"team,omitempty"` // the caller's; "": the daemon's
	From    string    `json:"from,omitempty"`
	Sender  string    `json:"sender,omitempty"`
	Type    string    `json:"type,omitempty"`
	ReplyTo string    `json:"reply_to,omitempty"`
	Timeout *duration `json:"timeout,omitempty"` // 30s by default, at most maxWait
	server
}

// wait is POST /v1/wait: a long poll for a message in the caller's inbox
// that matches the filters (wait). It answers the message, moving the
// read cursor past it; none within timeout is exit_code 7. A client that
// goes away ends the wait, and no message is marked read for it.
func (d *Daemon) wait(w http.ResponseWriter, r *http.Request) {
	var b waitBody
	if !decode(w, r, &b) {
		return
	}
	timeout := duration(defaultWait)
	if b.Timeout != nil {
		timeout = *b.Timeout
	}
	if err := bounded("timeout", timeout); err != nil {
		fail(w, http.StatusBadRequest, err)
		return
	}
	svc, ok := d.serviceFor(w, Caller{From: b.From, Team: b.Team, Socket: b.Socket, SocketName: b.SocketName})
	if !ok {
		return
	}
	fl := service.Filter{Sender: b.Sender, Type: mailbox.Type(b.Type), ReplyTo: message.ID(b.ReplyTo)}
	res, err := svc.Wait(r.Context(), service.WaitRequest{Filter: fl, Timeout: time.Duration(timeout)})
	switch {
	case errors.Is(err, service.ErrInterrupted):
		return // the client is gone
	case err != nil:
		fail(w, 0, err)
		return
	case res.TimedOut:
		respond(w, wire.ExitTimeout, wire.Error{Error: "timed out: " + wire.WaitTimedOut(fl, time.Duration(timeout)), ExitCode: wire.ExitTimeout})
		return
	}
	respondCoded(w, res.Message, wire.ExitOK, nil)
}

// inboxBody names the inbox that holds a copy of a message (a message to
// a whole team is in each of its inboxes).
type inboxBody struct {
	Team  string `json:"team"`
	Agent string `json:"agent"`
	server
}

// ref is the copy of message id that b names, or false after a 400
// answer.
func (b inboxBody) ref(w http.ResponseWriter, id string) (service.MessageRef, bool) {
	if b.Team == "" || b.Agent == "" {
		fail(w, http.StatusBadRequest, errors.New("name the inbox that holds the message: team and agent"))
		return service.MessageRef{}, false
	}
	if !message.Valid(id) {
		fail(w, http.StatusBadRequest, fmt.Errorf("%q is not a message id (MSG_<SENDER>_<8 hex>)", id))
		return service.MessageRef{}, false
	}
	return service.MessageRef{Team: b.Team, Agent: b.Agent, ID: message.ID(id)}, true
}

// handled is POST /v1/messages/{id}/handled: a person dealt with the
// message by hand; it is never typed again. A message taken already, or
// being typed now, is 409.
func (d *Daemon) handled(w http.ResponseWriter, r *http.Request) {
	var b inboxBody
	if !decode(w, r, &b) {
		return
	}
	ref, ok := b.ref(w, r.PathValue("id"))
	if !ok {
		return
	}
	svc, ok := d.serviceFor(w, Caller{Socket: b.Socket, SocketName: b.SocketName})
	if !ok {
		return
	}
	rec, err := svc.Handle(d.requestContext(r), ref)
	if err != nil {
		fail(w, 0, err)
		return
	}
	respondCoded(w, wire.Settled{ID: string(ref.ID), Team: ref.Team, Agent: ref.Agent, Delivery: rec}, wire.ExitOK, nil)
}

type retryBody struct {
	inboxBody
	ReadyTimeout duration `json:"ready_timeout,omitempty"`
}

// retry is POST /v1/messages/{id}/retry: a message whose delivery ended
// typed or failed goes back to deliver, after a person has looked at the
// pane, and a deliver pass over its team follows at once. Its document
// holds the new record and the pass; a pass that could not run leaves
// the message pending, and says why in error.
func (d *Daemon) retry(w http.ResponseWriter, r *http.Request) {
	var b retryBody
	if !decode(w, r, &b) {
		return
	}
	ref, ok := b.ref(w, r.PathValue("id"))
	if !ok {
		return
	}
	svc, ok := d.serviceFor(w, Caller{Socket: b.Socket, SocketName: b.SocketName})
	if !ok {
		return
	}
	res, err := svc.Retry(d.requestContext(r), ref, service.DeliverRequest{ReadyTimeout: time.Duration(b.ReadyTimeout), LeaveSelf: true})
	if err != nil && res.Delivery.State == "" {
		fail(w, 0, err)
		return
	}
	pass := wire.NewDeliver(res.Pass.Typed, wire.Plain)
	respondCoded(w, wire.Settled{ID: string(ref.ID), Team: ref.Team, Agent: ref.Agent, Delivery: res.Delivery, Pass: &pass},
		wire.ErrorCode(err), err)
}
