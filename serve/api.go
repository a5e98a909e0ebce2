package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentmsg/agentmsg/app"
	"github.com/agentmsg/agentmsg/courier"
	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/internal/openapi"
	"github.com/agentmsg/agentmsg/lifecycle"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
	"github.com/agentmsg/agentmsg/service"
	"github.com/agentmsg/agentmsg/target"
	"github.com/agentmsg/agentmsg/wire"
)

// The API translates HTTP and JSON into calls on package service and their
// results into package wire's documents: the fields and verdicts of
// --json, each with its exit_code. What each operation takes and answers
// is declared once, in package wire (wire.Operations, the request and
// answer types): the daemon routes by that table, decodes into those
// types, and serves the OpenAPI document generated from them.

// maxBody bounds a request body: a message of a few MiB fits.
const maxBody = 16 << 20

// handlers bind each operation of wire.Operations to its handler
// (TestEveryOperationIsServed holds the two to each other): most are
// handle's, over the operation's check and call; the rest answer in ways
// of their own (a stream, a document, a run's frames).
var handlers = map[string]func(*Daemon, http.ResponseWriter, *http.Request){
	"send":          handle((*Daemon).checkSend, (*Daemon).send),
	"reply":         handle((*Daemon).checkReply, (*Daemon).reply),
	"broadcast":     handle((*Daemon).checkBroadcast, (*Daemon).broadcast),
	"deliver":       handle(as(func(b wire.DeliverBody) Caller { return onServer(b.Server) }), (*Daemon).deliver),
	"getMessage":    handle((*Daemon).checkMessage, (*Daemon).message),
	"markHandled":   handle((*Daemon).checkHandled, (*Daemon).handled),
	"retryMessage":  handle((*Daemon).checkRetry, (*Daemon).retry),
	"getLog":        handle((*Daemon).checkLog, (*Daemon).messageLog),
	"peekInbox":     handle((*Daemon).checkPeek, (*Daemon).inbox),
	"readInbox":     handle((*Daemon).checkRead, (*Daemon).inbox),
	"wait":          handle((*Daemon).checkWait, (*Daemon).wait),
	"postRequest":   handle((*Daemon).checkRequest, (*Daemon).request),
	"claimRequest":  handle((*Daemon).checkClaim, (*Daemon).claim),
	"listRequests":  handle(as(teamCaller), (*Daemon).listRequests),
	"nudgeRequests": handle(as(bodyCaller), (*Daemon).nudge),
	"setStatus":     handle((*Daemon).checkStatus, (*Daemon).status),
	"heartbeat":     handle(as(bodyCaller), (*Daemon).heartbeat),
	"getBoard":      handle(as(teamCaller), (*Daemon).board),
	"cleanTeam":     handle((*Daemon).checkClean, (*Daemon).cleanTeam),
	"listAgents":    handle(as(func(q wire.TeamQuery) Caller { return onServerQ(q.ServerQuery) }), (*Daemon).agents),
	"agentStates":   handle((*Daemon).checkStates, (*Daemon).states),
	"reapAgents":    handle((*Daemon).checkReap, (*Daemon).states),
	"spawn":         handle((*Daemon).checkSpawn, (*Daemon).spawn),
	"shutdown":      handle((*Daemon).checkShutdown, (*Daemon).shutdown),
	"kill":          handle((*Daemon).checkKill, (*Daemon).kill),
	"assignTask":    handle((*Daemon).checkTask, (*Daemon).task),
	"runWorkflow":   handle((*Daemon).checkWorkflow, (*Daemon).workflow),

	"events":       (*Daemon).stream,
	"openapi":      (*Daemon).openapi,
	"version":      (*Daemon).versionInfo,
	"runCLI":       (*Daemon).cli,
	"interruptCLI": (*Daemon).interrupt,
	"stdinCLI":     (*Daemon).stdin,
}

// mcpRoutes are MCP's Streamable HTTP endpoint (not in the OpenAPI
// document: MCP describes itself).
var mcpRoutes = []string{"/mcp"}

// routes registers the operations, each bound to its handler with its
// declaration (a query of a GET is refused when it names a parameter the
// operation does not take); every other method of a known path answers
// 405, and every other path 404, as JSON errors.
func (d *Daemon) routes(mux *http.ServeMux) {
	methods := map[string][]string{}
	for _, op := range wire.Operations() {
		h, ok := handlers[op.ID]
		if !ok {
			panic("serve: no handler for operation " + op.ID)
		}
		mux.HandleFunc(op.Method+" "+op.Path, func(w http.ResponseWriter, r *http.Request) {
			if op.Query == nil && len(r.URL.RawQuery) > 0 && op.ID != "stdinCLI" {
				if name := firstParam(r); name != "" {
					failCode(w, http.StatusBadRequest, wire.CodeUnknownField, name, fmt.Errorf("%s %s takes no query parameter %q", op.Method, op.Path, name))
					return
				}
			}
			h(d, w, r)
		})
		methods[op.Path] = append(methods[op.Path], op.Method)
	}
	for path, allow := range methods {
		allow := strings.Join(allow, ", ")
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", allow)
			failCode(w, http.StatusMethodNotAllowed, wire.CodeNoMethod, "", fmt.Errorf("%s %s: this path takes %s", r.Method, r.URL.Path, allow))
		})
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		failCode(w, http.StatusNotFound, wire.CodeNoRoute, "", fmt.Errorf("no operation at %s (GET /v1/openapi.json lists them)", r.URL.Path))
	})
	for _, p := range mcpRoutes {
		mux.HandleFunc(p, d.mcp)
	}
}

// firstParam is the name of r's first query parameter, "" for none.
func firstParam(r *http.Request) string {
	for name := range r.URL.Query() {
		return name
	}
	return ""
}

// openapi is GET /v1/openapi.json: the document describing every
// operation, generated from their declaration.
func (d *Daemon) openapi(w http.ResponseWriter, _ *http.Request) {
	doc, err := wire.OpenAPI(d.backend.version)
	if err != nil {
		fail(w, http.StatusInternalServerError, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(doc)
}

// decode reads a JSON body into v: one object, none of whose fields v
// lacks (a misspelt option must not be ignored), at most maxBody bytes;
// an empty body is {}. It answers the error and returns false otherwise.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if errors.Is(err, io.EOF) {
		return true
	}
	if err == nil {
		if _, more := dec.Token(); !errors.Is(more, io.EOF) {
			err = errTrailing
		}
	}
	if err == nil {
		return true
	}
	status, code, field, why := bodyError(err)
	failCode(w, status, code, field, why)
	return false
}

var errTrailing = errors.New("the request body holds more than one JSON value")

// bodyError says what is wrong with a body JSON could not decode, in the
// API's words rather than Go's.
func bodyError(err error) (status int, code wire.Code, field string, why error) {
	var (
		big *http.MaxBytesError
		typ *json.UnmarshalTypeError
		syn *json.SyntaxError
		fe  *wire.FieldError
	)
	switch {
	case errors.As(err, &big):
		return http.StatusRequestEntityTooLarge, wire.CodeTooLarge, "", fmt.Errorf("the request body is larger than %d MiB", maxBody>>20)
	case errors.As(err, &typ):
		name := typ.Field
		if i := strings.LastIndexByte(name, '.'); i >= 0 {
			name = name[i+1:]
		}
		return http.StatusBadRequest, wire.CodeWrongType, name, fmt.Errorf("%s: want %s, not %s", name, jsonKind(typ.Type), typ.Value)
	case errors.As(err, &fe):
		return http.StatusBadRequest, wire.CodeWrongType, fe.Field, err
	case errors.As(err, &syn), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, errTrailing):
		return http.StatusBadRequest, wire.CodeBadJSON, "", fmt.Errorf("the request body is not one JSON object: %w", err)
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		name = strings.Trim(name, `"`)
		return http.StatusBadRequest, wire.CodeUnknownField, name, fmt.Errorf("unknown field %q in the request body: this operation does not take it", name)
	}
	return http.StatusBadRequest, wire.CodeBadJSON, "", fmt.Errorf("the request body: %w", err)
}

// jsonKind is what JSON calls a value of Go type t.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "another kind of value"
}

// decodeQuery reads r's query parameters into the struct v points to,
// by the fields' JSON names (wire's query types): a parameter it does not
// take, or a value of the wrong kind, is answered 400.
func decodeQuery(w http.ResponseWriter, r *http.Request, v any) bool {
	rv := reflect.ValueOf(v).Elem()
	fields := map[string]openapi.Field{}
	for _, f := range openapi.Fields(rv.Type()) {
		fields[f.Name] = f
	}
	for name, vals := range r.URL.Query() {
		f, ok := fields[name]
		if !ok {
			failCode(w, http.StatusBadRequest, wire.CodeUnknownField, name, fmt.Errorf("%s %s takes no query parameter %q", r.Method, r.URL.Path, name))
			return false
		}
		if err := setQuery(rv.FieldByIndex(f.Index), vals); err != nil {
			failCode(w, http.StatusBadRequest, wire.CodeWrongType, name, fmt.Errorf("%s: %w", name, err))
			return false
		}
	}
	return true
}

// setQuery sets field to the query values vals.
func setQuery(field reflect.Value, vals []string) error {
	last := vals[len(vals)-1]
	if d, ok := field.Addr().Interface().(*wire.Duration); ok {
		return d.Parse(last)
	}
	switch field.Kind() {
	case reflect.String:
		field.SetString(last)
	case reflect.Bool:
		b, err := strconv.ParseBool(last)
		if err != nil {
			return errors.New("want true or false")
		}
		field.SetBool(b)
	case reflect.Int, reflect.Int64:
		n, err := strconv.ParseInt(last, 10, 64)
		if err != nil || n < 0 {
			return errors.New("want a whole number, 0 or more")
		}
		field.SetInt(n)
	case reflect.Slice:
		var all []string
		for _, v := range vals {
			for _, part := range strings.Split(v, ",") {
				if part = strings.TrimSpace(part); part != "" {
					all = append(all, part)
				}
			}
		}
		field.Set(reflect.ValueOf(all))
	default:
		return fmt.Errorf("cannot take a %s", field.Kind())
	}
	return nil
}

// respond writes doc with the HTTP status of its exit code.
func respond(w http.ResponseWriter, code int, doc any) {
	respondStatus(w, statusOf(code), doc)
}

// respondStatus writes doc with status.
func respondStatus(w http.ResponseWriter, status int, doc any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = wire.Encode(w, doc)
}

// statusOf is the HTTP status of an exit code: a verdict is a result, not
// an HTTP error, except for a request that could not be understood (exit
// 2) or names nothing that exists (exit 3).
func statusOf(code int) int {
	switch code {
	case wire.ExitUsage:
		return http.StatusBadRequest
	case wire.ExitNotFound:
		return http.StatusNotFound
	}
	return http.StatusOK
}

// exit is the Exit of an answer: its exit code, and err's words.
func exit(code int, err error) wire.Exit { return wire.Exit{Error: errText(err), ExitCode: code} }

// fail answers an error as wire.Error with the exit code and the code it
// maps to: a request the service refuses as it stands is bad usage (400,
// exit 2), a change that conflicts with a message's record 409.
func fail(w http.ResponseWriter, status int, err error) {
	failCode(w, status, "", "", err)
}

// failCode is fail with the error's code (and the field it is about) when
// the caller knows them better than the error does.
func failCode(w http.ResponseWriter, status int, code wire.Code, field string, err error) {
	exitCode := wire.ErrorCode(err)
	if errors.Is(err, errCaller) || status == http.StatusBadRequest || refused(err) {
		exitCode = wire.ExitUsage
	}
	if status == http.StatusNotFound || status == http.StatusMethodNotAllowed {
		exitCode = wire.ExitNotFound
	}
	if status == http.StatusMethodNotAllowed || code == wire.CodeNoRoute || status == http.StatusRequestEntityTooLarge {
		exitCode = wire.ExitUsage
	}
	if status == 0 {
		status = statusOf(exitCode)
		var se *courier.StateError
		if errors.Is(err, service.ErrDuplicateID) || errors.As(err, &se) || errors.Is(err, courier.ErrBeingTyped) {
			status = http.StatusConflict
		}
	}
	if code == "" {
		code = wire.ErrorWord(err)
		if code == wire.CodeError && exitCode == wire.ExitUsage {
			code = wire.CodeBadRequest
		}
		if status == http.StatusUnauthorized {
			code = wire.CodeUnauthorized
		}
	}
	var fe *service.FilterError
	if field == "" && errors.As(err, &fe) {
		field = fe.Field
	}
	respondStatus(w, status, wire.Error{Error: words(err), ExitCode: exitCode, Code: code, Field: field})
}

// refused reports whether err is the service refusing the request as it
// stands: what the CLI reports as bad usage.
func refused(err error) bool {
	var fe *service.FilterError
	var np *app.ErrNoProfile
	for _, e := range []error{service.ErrTeamNeeded, service.ErrNoCallerTeam, service.ErrEmptyDescription, service.ErrBadTimeout,
		service.ErrBadState, service.ErrEmptyTask, service.ErrNoSteps, service.ErrBadWorkflow, lifecycle.ErrNoCommand, lifecycle.ErrNoTeam} {
		if errors.Is(err, e) {
			return true
		}
	}
	return errors.As(err, &fe) || errors.As(err, &np)
}

// words is an error as the API says it: the engine's words, and the
// field that helps where the engine cannot know it.
func words(err error) string {
	if errors.Is(err, service.ErrTeamNeeded) || errors.Is(err, lifecycle.ErrNoTeam) {
		return err.Error() + `: name it in "team"`
	}
	return err.Error()
}

// serviceFor is the service of a request's caller, or false after an
// error answer.
func (d *Daemon) serviceFor(w http.ResponseWriter, c Caller) (*service.Service, bool) {
	svc, err := d.backend.service(c)
	if err != nil {
		fail(w, 0, err)
		return nil, false
	}
	return svc, true
}

// call is the per-call choices of a delivering request.
func (d *Daemon) call(o wire.Delivering, pane string) (service.Delivery, error) {
	call := dispatch.Call{WhileBusy: o.WhileBusy, Force: o.Force, Pane: pane, ReadyTimeout: time.Duration(o.ReadyTimeout)}
	if o.Profile != "" {
		profiles, err := app.Profiles(d.backend.env.Config)
		if err != nil {
			return service.Delivery{}, err
		}
		p, err := app.Lookup(profiles, o.Profile)
		if err != nil {
			return service.Delivery{}, fmt.Errorf("%w: profile: %w", errCaller, err)
		}
		call.Agent, call.AgentWhy = &p, "profile "+o.Profile
	}
	return service.Delivery{Queue: !o.NoQueue, MailboxOnly: o.MailboxOnly, Call: call}, nil
}

// draft is a request's message as the service takes it.
func draft(d wire.Draft) service.Draft {
	return service.Draft{ID: message.ID(d.ID), Text: d.Text, Type: d.Type, Meta: d.Meta}
}

// asking is the caller a body names: from, in team, on its server.
func asking(from, team string, s wire.Server) Caller {
	return Caller{From: from, Team: team, Socket: s.Socket, SocketName: s.SocketName}
}

// onServer is the caller of a request that names only a tmux server.
func onServer(s wire.Server) Caller { return asking("", "", s) }

// onServerQ is onServer of a GET's query.
func onServerQ(q wire.ServerQuery) Caller { return Caller{Socket: q.Socket, SocketName: q.SocketName} }

// sendCall is a send as its check made it.
type sendCall struct {
	req   service.SendRequest
	async bool // wait false: answer 202 once recorded
}

func (d *Daemon) checkSend(_ *http.Request, b *wire.SendBody) (Caller, sendCall, error) {
	c := asking(b.From, b.Team, b.Server)
	t, err := target.New(b.Team, b.Agent)
	if err != nil {
		return c, sendCall{}, badRequest("", err)
	}
	del, err := d.call(b.Delivering, b.Pane)
	if err != nil {
		return c, sendCall{}, err
	}
	req := service.SendRequest{To: t, Draft: draft(b.Draft), Delivery: del, RefuseUnknown: !b.Create, Host: b.Host}
	return c, sendCall{req: req, async: b.Wait != nil && !*b.Wait}, nil
}

func (d *Daemon) send(r *http.Request, svc *service.Service, s sendCall) (answer, error) {
	if s.async {
		return d.sendAsync(r, svc, s.req)
	}
	res, err := svc.Send(d.requestContext(r), s.req)
	if err != nil {
		return answer{}, err
	}
	doc := wire.NewSend(res, wire.Plain)
	return answerOf(doc.ExitCode, doc), nil
}

// sendAsync is a send with wait false: it answers 202 once the message is
// recorded in its inbox, and the send goes on in the daemon (an app
// follows its events). A send that ends before it records anything (no
// such agent, a retry of a message sent before) is answered as a
// blocking one would be.
func (d *Daemon) sendAsync(r *http.Request, svc *service.Service, req service.SendRequest) (answer, error) {
	type recorded struct {
		id    message.ID
		state mailbox.DeliveryState
	}
	first := make(chan recorded, 1)
	req.Delivery.Recorded = func(id message.ID, state mailbox.DeliveryState) {
		select {
		case first <- recorded{id, state}:
		default:
		}
	}
	type ended struct {
		res service.SendResult
		err error
	}
	done := make(chan ended, 1)
	go func() {
		res, err := svc.Send(d.requestContext(r), req)
		done <- ended{res, err}
	}()
	select {
	case rec := <-first:
		team, agent := target.Inbox(req.To)
		return answer{http.StatusAccepted, wire.SendAccepted{ID: string(rec.id), From: svc.Name, Team: team, Agent: agent,
			Stored: rec.state, Exit: exit(wire.ExitOK, nil)}}, nil
	case e := <-done:
		if e.err != nil {
			return answer{}, e.err
		}
		doc := wire.NewSend(e.res, wire.Plain)
		return answerOf(doc.ExitCode, doc), nil
	}
}

// checkReply finds the replier's team when the body does not name it.
func (d *Daemon) checkReply(_ *http.Request, b *wire.ReplyBody) (Caller, service.ReplyRequest, error) {
	c := asking(b.From, b.Team, b.Server)
	if !message.Valid(b.To) {
		return c, service.ReplyRequest{}, badRequest("reply_to", fmt.Errorf("reply_to %q is not a message id (MSG_<SENDER>_<8 hex>)", b.To))
	}
	del, err := d.call(b.Delivering, "")
	if err != nil {
		return c, service.ReplyRequest{}, err
	}
	if c.Team == "" {
		if c.Team, err = d.replierTeam(c, message.ID(b.To)); err != nil {
			return c, service.ReplyRequest{}, err
		}
	}
	return c, service.ReplyRequest{To: message.ID(b.To), Draft: draft(b.Draft), Queue: del.Queue, Call: del.Call}, nil
}

func (d *Daemon) reply(r *http.Request, svc *service.Service, req service.ReplyRequest) (answer, error) {
	res, err := svc.Reply(d.requestContext(r), req)
	if err != nil {
		return answer{}, err
	}
	doc := wire.NewSend(res, wire.Plain)
	return answerOf(doc.ExitCode, doc), nil
}

// replierTeam is the team of the replier c names whose inbox holds the
// message to: a reply needs no team when its message says it. None is
// the caller's team error (the daemon has none); several, a request to
// name one.
func (d *Daemon) replierTeam(c Caller, to message.ID) (string, error) {
	svc, err := d.backend.service(c)
	if err != nil {
		return "", err
	}
	inboxes, err := svc.Store.Inboxes("")
	if err != nil {
		return "", err
	}
	var teams []string
	for _, in := range inboxes {
		if in.Agent == svc.Name && svc.Store.Holds(in.Team, in.Agent, to) {
			teams = append(teams, in.Team)
		}
	}
	switch len(teams) {
	case 0:
		if svc.Team != "" {
			return svc.Team, nil // the daemon's own: the service says what is missing
		}
		return "", fmt.Errorf("%w: %s is in no inbox of %s", mailbox.ErrNoMessage, to, svc.Name)
	case 1:
		return teams[0], nil
	}
	return "", fmt.Errorf("%w: %s is in the inboxes of %s in teams %s: name one in \"team\"", service.ErrNoCallerTeam, to, svc.Name, strings.Join(teams, ", "))
}

func (d *Daemon) checkBroadcast(_ *http.Request, b *wire.BroadcastBody) (Caller, service.BroadcastRequest, error) {
	c := asking(b.From, b.Team, b.Server)
	if b.Team == "" && !b.All {
		return c, service.BroadcastRequest{}, badRequest("team", errors.New("name a team, or all: true for every agent"))
	}
	del, err := d.call(b.Delivering, "")
	if err != nil {
		return c, service.BroadcastRequest{}, err
	}
	return c, service.BroadcastRequest{Team: b.Team, All: b.All, AllHosts: b.AllHosts, Draft: draft(b.Draft), Delivery: del}, nil
}

func (d *Daemon) broadcast(r *http.Request, svc *service.Service, req service.BroadcastRequest) (answer, error) {
	res, err := svc.Broadcast(d.requestContext(r), req)
	if err != nil {
		return answer{}, err
	}
	doc := wire.NewBroadcast(res, req.Team, req.All, wire.Plain)
	return answerOf(doc.ExitCode, doc), nil
}

// deliver is POST /v1/deliver: one pass; what it could not do is in its
// document, not an error answer.
func (d *Daemon) deliver(r *http.Request, svc *service.Service, b wire.DeliverBody) (answer, error) {
	res, err := svc.Deliver(d.requestContext(r), service.DeliverRequest{Team: b.Team, ReadyTimeout: time.Duration(b.ReadyTimeout), LeaveSelf: true})
	doc := wire.NewDeliver(res.Typed, wire.Plain)
	code := wire.ExitOK
	if err != nil {
		code = wire.ErrorCode(err)
	}
	for _, o := range doc.Results {
		if o.ExitCode != wire.ExitOK && code == wire.ExitOK {
			code = wire.ExitPartial
		}
	}
	return answerOf(code, wire.DeliverAnswer{Deliver: doc, Exit: exit(code, err)}), nil
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// asOf is the id of the newest event now (-1: none): a snapshot read
// after it misses no change an event before it tells.
func (d *Daemon) asOf() wire.Snapshot {
	last := int64(-1)
	if d.log != nil {
		if l, err := d.log.Last(); err == nil {
			last = l
		}
	}
	return wire.Snapshot{AsOf: last}
}

func (d *Daemon) agents(r *http.Request, svc *service.Service, q wire.TeamQuery) (answer, error) {
	disp, err := svc.Dispatcher()
	if err != nil {
		return answer{}, err
	}
	at := d.asOf()
	agents, err := disp.Agents(r.Context(), q.Team, dispatch.Call{})
	if err != nil {
		return answer{}, err
	}
	return answerOf(wire.ExitOK, wire.AgentsAnswer{Agents: wire.NewAgents(disp.Tmux.Server().Socket, agents), Snapshot: at}), nil
}

// checkMessage reads the message's id from the path.
func (*Daemon) checkMessage(r *http.Request, q *wire.ServerQuery) (Caller, string, error) {
	id := r.PathValue("id")
	if !message.Valid(id) {
		return onServerQ(*q), "", badRequest("id", fmt.Errorf("%q is not a message id (MSG_<SENDER>_<8 hex>)", id))
	}
	return onServerQ(*q), id, nil
}

func (d *Daemon) message(r *http.Request, svc *service.Service, id string) (answer, error) {
	at := d.asOf()
	copies, err := svc.History(r.Context(), service.LogRequest{}, message.ID(id))
	if err != nil && !errors.Is(err, mailbox.ErrNoMessage) {
		return answer{}, err
	}
	// The copies sent to other hosts are in Remote, as they always were:
	// what each host last reported, beside the copies here (a broadcast's
	// to every host), or alone (a message sent to one host).
	copies = slices.DeleteFunc(copies, func(c service.HistoryCopy) bool { return c.Host != "" })
	doc := wire.MessageAnswer{ID: id, Copies: copies, Snapshot: at}
	if sent, err := d.lookupSent(r.Context(), id); err == nil && len(sent) > 0 {
		doc.Remote = sent
	}
	if len(copies) == 0 {
		if len(doc.Remote) > 0 {
			doc.Copies = []service.HistoryCopy{}
			return answerOf(wire.ExitOK, doc), nil
		}
		return answer{}, fmt.Errorf("%w: %s is in no inbox of this server, nor was it sent from here to another host", mailbox.ErrNoMessage, id)
	}
	// What was sent, the same in every copy; each copy says its own state.
	sent := copies[0].Message
	sent.Delivery = nil
	doc.Message = &sent
	return answerOf(wire.ExitOK, doc), nil
}

func (d *Daemon) versionInfo(w http.ResponseWriter, r *http.Request) {
	respond(w, wire.ExitOK, wire.VersionAnswer{Version: d.backend.version, Commit: d.opts.Commit, Date: d.opts.Date, PID: d.pid})
}

// requestContext is the context of an operation a client asked for: it
// ends when the daemon stops, not when the client goes away. A message
// half typed is finished and recorded as what it is; the client that lost
// its connection reads the verdict from GET /v1/messages/{id}.
func (d *Daemon) requestContext(*http.Request) context.Context { return d.ctx }
