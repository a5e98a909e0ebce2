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

// logCall is a log as its check made it: the whole log a page at a
// time, or with id one message's history.
type logCall struct {
	req    service.LogRequest
	id     message.ID
	limit  int
	cursor string
}

func (*Daemon) checkLog(_ *http.Request, q *wire.LogQuery) (Caller, logCall, error) {
	c := onServerQ(q.ServerQuery)
	req := service.LogRequest{Team: q.Team, Agent: q.Agent}
	switch {
	case req.Agent != "" && req.Team == "":
		return c, logCall{}, badRequest("agent", errors.New("agent needs its team"))
	case req.Agent != "":
		if _, err := target.New(req.Team, req.Agent); err != nil {
			return c, logCall{}, badRequest("", err)
		}
	case req.Team != "":
		if err := target.ValidateTeam(req.Team); err != nil {
			return c, logCall{}, badRequest("", err)
		}
	}
	if q.ID != "" && !message.Valid(q.ID) {
		return c, logCall{}, badRequest("id", fmt.Errorf("id %q is not a message id (MSG_<SENDER>_<8 hex>)", q.ID))
	}
	return c, logCall{req: req, id: message.ID(q.ID), limit: q.Limit, cursor: q.Cursor}, nil
}

// messageLog is GET /v1/log?team=&agent=&id=&limit=&cursor=: the
// messages kept in the inboxes and how far each got (log), a page at a
// time, or with id one message's history (log --id).
func (d *Daemon) messageLog(r *http.Request, svc *service.Service, l logCall) (answer, error) {
	at := d.asOf()
	if l.id != "" {
		copies, err := svc.History(r.Context(), l.req, l.id)
		if err != nil {
			return answer{}, err
		}
		return answerOf(wire.ExitOK, wire.HistoryAnswer{History: wire.History{ID: l.id, Copies: copies}, Snapshot: at}), nil
	}
	res, err := svc.Log(r.Context(), l.req)
	if err != nil {
		return answer{}, err
	}
	page, next, err := pageOf(res.Entries, l.limit, l.cursor, func(e service.LogEntry) string { return e.Team + "/" + e.Inbox + "/" + string(e.ID) })
	if err != nil {
		return answer{}, badRequest("cursor", err)
	}
	return answerOf(wire.ExitOK, wire.LogAnswer{Messages: page, NextCursor: next, Snapshot: at}), nil
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

// inboxCall is a look at an inbox, or a read of it, as its check made
// it.
type inboxCall struct {
	req    service.InboxRequest
	limit  int
	cursor string
}

// checkPeek is GET /v1/inbox/{team}/{name}'s: what the inbox's reader
// has not read (all: every message kept), a page at a time. A GET changes
// nothing: the messages stay unread (a dashboard's refresh took an
// agent's mail before); POST .../read reads them.
func (*Daemon) checkPeek(r *http.Request, q *wire.InboxQuery) (Caller, inboxCall, error) {
	c, req := inboxOf(r, q.Reader, onServerQ(q.ServerQuery))
	req.All, req.Peek = q.All, true
	return c, inboxCall{req: req, limit: q.Limit, cursor: q.Cursor}, nil
}

// checkRead is POST /v1/inbox/{team}/{name}/read's: the reader reads its
// messages, and its cursor moves past them.
func (*Daemon) checkRead(r *http.Request, b *wire.ReadBody) (Caller, inboxCall, error) {
	c, req := inboxOf(r, b.Reader, onServer(b.Server))
	req.All = b.All
	return c, inboxCall{req: req}, nil
}

// inboxOf is the inbox the path names, and its reader as the caller
// (the inbox's own agent when reader is "").
func inboxOf(r *http.Request, reader string, c Caller) (Caller, service.InboxRequest) {
	team, name := r.PathValue("team"), r.PathValue("name")
	if reader == "" {
		reader = name
	}
	c.From, c.Team = reader, team
	return c, service.InboxRequest{Team: team, Agent: name}
}

func (d *Daemon) inbox(r *http.Request, svc *service.Service, in inboxCall) (answer, error) {
	at := d.asOf()
	res, err := svc.Inbox(r.Context(), in.req)
	if err != nil {
		return answer{}, err
	}
	page, next, err := pageOf(res.Messages, in.limit, in.cursor, func(e mailbox.Envelope) string { return string(e.ID) })
	if err != nil {
		return answer{}, badRequest("cursor", err)
	}
	return answerOf(wire.ExitOK, wire.InboxAnswer{Inbox: wire.Inbox{Team: res.Team, Agent: res.Agent, Reader: res.Reader, Messages: page},
		NextCursor: next, Snapshot: at}), nil
}

func (*Daemon) checkWait(_ *http.Request, b *wire.WaitBody) (Caller, service.WaitRequest, error) {
	c := asking(b.From, b.Team, b.Server)
	timeout := wire.Duration(defaultWait)
	if b.Timeout != nil {
		timeout = *b.Timeout
	}
	if err := bounded("timeout", timeout); err != nil {
		return c, service.WaitRequest{}, badRequest("", err)
	}
	fl := service.Filter{Sender: b.Sender, Type: mailbox.Type(b.Type), ReplyTo: message.ID(b.ReplyTo)}
	return c, service.WaitRequest{Filter: fl, Timeout: time.Duration(timeout)}, nil
}

// wait is POST /v1/wait: a long poll for a message in the caller's inbox
// that matches the filters (wait). It answers the message, moving the
// read cursor past it; none within timeout is exit_code 7. A client that
// goes away ends the wait, and no message is marked read for it.
func (d *Daemon) wait(r *http.Request, svc *service.Service, req service.WaitRequest) (answer, error) {
	res, err := svc.Wait(r.Context(), req)
	switch {
	case errors.Is(err, service.ErrInterrupted):
		return answer{}, errClientGone
	case err != nil:
		return answer{}, err
	case res.TimedOut:
		return answerOf(wire.ExitTimeout, wire.Error{Error: "timed out: " + wire.WaitTimedOut(req.Filter, req.Timeout), ExitCode: wire.ExitTimeout, Code: wire.CodeTimeout}), nil
	}
	return answerOf(wire.ExitOK, wire.WaitAnswer{Envelope: res.Message}), nil
}

// ref is the copy of message id that b names.
func ref(b wire.InboxBody, id string) (service.MessageRef, error) {
	if b.Team == "" || b.Agent == "" {
		return service.MessageRef{}, badRequest("agent", errors.New("name the inbox that holds the message: team and agent"))
	}
	if !message.Valid(id) {
		return service.MessageRef{}, badRequest("id", fmt.Errorf("%q is not a message id (MSG_<SENDER>_<8 hex>)", id))
	}
	return service.MessageRef{Team: b.Team, Agent: b.Agent, ID: message.ID(id)}, nil
}

func (*Daemon) checkHandled(r *http.Request, b *wire.InboxBody) (Caller, service.MessageRef, error) {
	ref, err := ref(*b, r.PathValue("id"))
	return onServer(b.Server), ref, err
}

// handled is POST /v1/messages/{id}/handled: a person dealt with the
// message by hand; it is never typed again. A message taken already, or
// being typed now, is 409.
func (d *Daemon) handled(r *http.Request, svc *service.Service, ref service.MessageRef) (answer, error) {
	rec, err := svc.Handle(d.requestContext(r), ref)
	if err != nil {
		return answer{}, err
	}
	return answerOf(wire.ExitOK, wire.SettledAnswer{Settled: wire.Settled{ID: string(ref.ID), Team: ref.Team, Agent: ref.Agent, Delivery: rec}}), nil
}

// retryCall is a retry as its check made it.
type retryCall struct {
	ref  service.MessageRef
	pass service.DeliverRequest
}

func (*Daemon) checkRetry(r *http.Request, b *wire.RetryBody) (Caller, retryCall, error) {
	ref, err := ref(b.InboxBody, r.PathValue("id"))
	return onServer(b.Server), retryCall{ref, service.DeliverRequest{ReadyTimeout: time.Duration(b.ReadyTimeout), LeaveSelf: true}}, err
}

// retry is POST /v1/messages/{id}/retry: a message whose delivery ended
// typed or failed goes back to deliver, after a person has looked at the
// pane, and a deliver pass over its team follows at once. Its document
// holds the new record and the pass; a pass that could not run leaves
// the message pending, and says why in error.
func (d *Daemon) retry(r *http.Request, svc *service.Service, rc retryCall) (answer, error) {
	ref := rc.ref
	res, err := svc.Retry(d.requestContext(r), ref, rc.pass)
	if err != nil && res.Delivery.State == "" {
		return answer{}, err
	}
	pass := wire.NewDeliver(res.Pass.Typed, wire.Plain)
	code := wire.ErrorCode(err)
	return answerOf(code, wire.SettledAnswer{Settled: wire.Settled{ID: string(ref.ID), Team: ref.Team, Agent: ref.Agent, Delivery: res.Delivery, Pass: &pass},
		Exit: exit(code, err)}), nil
}
