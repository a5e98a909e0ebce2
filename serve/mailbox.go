package serve

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
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

// messageLog is GET /v1/log?team=&agent=&id=&limit=&cursor=: the
// messages kept in the inboxes and how far each got (log), a page at a
// time, or with id one message's history (log --id).
func (d *Daemon) messageLog(w http.ResponseWriter, r *http.Request) {
	var q wire.LogQuery
	if !decodeQuery(w, r, &q) {
		return
	}
	req := service.LogRequest{Team: q.Team, Agent: q.Agent}
	switch {
	case req.Agent != "" && req.Team == "":
		failCode(w, http.StatusBadRequest, "", "agent", errors.New("agent needs its team"))
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
	if q.ID != "" && !message.Valid(q.ID) {
		failCode(w, http.StatusBadRequest, "", "id", fmt.Errorf("id %q is not a message id (MSG_<SENDER>_<8 hex>)", q.ID))
		return
	}
	svc, ok := d.serviceFor(w, Caller{Socket: q.Socket, SocketName: q.SocketName})
	if !ok {
		return
	}
	at := d.asOf()
	if q.ID != "" {
		copies, err := svc.History(r.Context(), req, message.ID(q.ID))
		if err != nil {
			fail(w, 0, err)
			return
		}
		respond(w, wire.ExitOK, wire.HistoryAnswer{History: wire.History{ID: message.ID(q.ID), Copies: copies}, Snapshot: at})
		return
	}
	res, err := svc.Log(r.Context(), req)
	if err != nil {
		fail(w, 0, err)
		return
	}
	page, next, err := pageOf(res.Entries, q.Limit, q.Cursor, func(e service.LogEntry) string { return e.Team + "/" + e.Inbox + "/" + string(e.ID) })
	if err != nil {
		failCode(w, http.StatusBadRequest, "", "cursor", err)
		return
	}
	respond(w, wire.ExitOK, wire.LogAnswer{Messages: page, NextCursor: next, Snapshot: at})
}

// pageOf is the page of all after cursor (the key of the last item of the
// page before; "" from the start), at most limit long (0: the rest), and
// the cursor of the next page ("" when none follows).
func pageOf[T any](all []T, limit int, cursor string, key func(T) string) ([]T, string, error) {
	if cursor != "" {
		i := slices.IndexFunc(all, func(x T) bool { return key(x) == cursor })
		if i < 0 {
			return nil, "", fmt.Errorf("cursor %q names nothing kept now (it was compacted away): start again without it", cursor)
		}
		all = all[i+1:]
	}
	if limit <= 0 || len(all) <= limit {
		return all, "", nil
	}
	return all[:limit], key(all[limit-1]), nil
}

// peekInbox is GET /v1/inbox/{team}/{name}: what the inbox's reader has
// not read (all: every message kept), a page at a time. A GET changes
// nothing: the messages stay unread (a dashboard's refresh took an
// agent's mail before); POST .../read reads them.
func (d *Daemon) peekInbox(w http.ResponseWriter, r *http.Request) {
	var q wire.InboxQuery
	if !decodeQuery(w, r, &q) {
		return
	}
	d.inbox(w, r, q.Reader, q.All, true, q.Limit, q.Cursor, Caller{Socket: q.Socket, SocketName: q.SocketName})
}

// readInbox is POST /v1/inbox/{team}/{name}/read: the reader reads its
// messages, and its cursor moves past them.
func (d *Daemon) readInbox(w http.ResponseWriter, r *http.Request) {
	var b wire.ReadBody
	if !decode(w, r, &b) {
		return
	}
	d.inbox(w, r, b.Reader, b.All, false, 0, "", Caller{Socket: b.Socket, SocketName: b.SocketName})
}

func (d *Daemon) inbox(w http.ResponseWriter, r *http.Request, reader string, all, peek bool, limit int, cursor string, c Caller) {
	team, name := r.PathValue("team"), r.PathValue("name")
	if reader == "" {
		reader = name
	}
	c.From, c.Team = reader, team
	svc, ok := d.serviceFor(w, c)
	if !ok {
		return
	}
	at := d.asOf()
	res, err := svc.Inbox(r.Context(), service.InboxRequest{Team: team, Agent: name, All: all, Peek: peek})
	if err != nil {
		fail(w, 0, err)
		return
	}
	page, next, err := pageOf(res.Messages, limit, cursor, func(e mailbox.Envelope) string { return string(e.ID) })
	if err != nil {
		failCode(w, http.StatusBadRequest, "", "cursor", err)
		return
	}
	respond(w, wire.ExitOK, wire.InboxAnswer{Inbox: wire.Inbox{Team: res.Team, Agent: res.Agent, Reader: res.Reader, Messages: page},
		NextCursor: next, Snapshot: at})
}

// wait is POST /v1/wait: a long poll for a message in the caller's inbox
// that matches the filters (wait). It answers the message, moving the
// read cursor past it; none within timeout is exit_code 7. A client that
// goes away ends the wait, and no message is marked read for it.
func (d *Daemon) wait(w http.ResponseWriter, r *http.Request) {
	var b wire.WaitBody
	if !decode(w, r, &b) {
		return
	}
	timeout := wire.Duration(defaultWait)
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
		respond(w, wire.ExitTimeout, wire.Error{Error: "timed out: " + wire.WaitTimedOut(fl, time.Duration(timeout)), ExitCode: wire.ExitTimeout, Code: wire.CodeTimeout})
		return
	}
	respond(w, wire.ExitOK, wire.WaitAnswer{Envelope: res.Message})
}

// ref is the copy of message id that b names, or false after a 400
// answer.
func ref(w http.ResponseWriter, b wire.InboxBody, id string) (service.MessageRef, bool) {
	if b.Team == "" || b.Agent == "" {
		failCode(w, http.StatusBadRequest, "", "agent", errors.New("name the inbox that holds the message: team and agent"))
		return service.MessageRef{}, false
	}
	if !message.Valid(id) {
		failCode(w, http.StatusBadRequest, "", "id", fmt.Errorf("%q is not a message id (MSG_<SENDER>_<8 hex>)", id))
		return service.MessageRef{}, false
	}
	return service.MessageRef{Team: b.Team, Agent: b.Agent, ID: message.ID(id)}, true
}

// handled is POST /v1/messages/{id}/handled: a person dealt with the
// message by hand; it is never typed again. A message taken already, or
// being typed now, is 409.
func (d *Daemon) handled(w http.ResponseWriter, r *http.Request) {
	var b wire.InboxBody
	if !decode(w, r, &b) {
		return
	}
	ref, ok := ref(w, b, r.PathValue("id"))
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
	respond(w, wire.ExitOK, wire.SettledAnswer{Settled: wire.Settled{ID: string(ref.ID), Team: ref.Team, Agent: ref.Agent, Delivery: rec}})
}

// retry is POST /v1/messages/{id}/retry: a message whose delivery ended
// typed or failed goes back to deliver, after a person has looked at the
// pane, and a deliver pass over its team follows at once. Its document
// holds the new record and the pass; a pass that could not run leaves
// the message pending, and says why in error.
func (d *Daemon) retry(w http.ResponseWriter, r *http.Request) {
	var b wire.RetryBody
	if !decode(w, r, &b) {
		return
	}
	ref, ok := ref(w, b.InboxBody, r.PathValue("id"))
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
	code := wire.ErrorCode(err)
	respond(w, code, wire.SettledAnswer{Settled: wire.Settled{ID: string(ref.ID), Team: ref.Team, Agent: ref.Agent, Delivery: res.Delivery, Pass: &pass},
		Exit: exit(code, err)})
}
