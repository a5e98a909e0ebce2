package serve

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/agentmsg/agentmsg/app"
	"github.com/agentmsg/agentmsg/courier"
	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/hosts"
	"github.com/agentmsg/agentmsg/lifecycle"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
	"github.com/agentmsg/agentmsg/service"
	"github.com/agentmsg/agentmsg/target"
	"github.com/agentmsg/agentmsg/wire"
)

// The API translates HTTP and JSON into calls on package service and their
// results into package wire's documents: the fields and verdicts of
// --json, each with its exit_code. A request body uses the names --json
// prints (team, agent, text, from, meta) and the flags' names in snake case
// for options; durations are Go duration strings ("1s", "250ms").

// openapiDoc describes the API (OpenAPI 3.1).
//
//go:embed openapi.json
var openapiDoc []byte

// maxBody bounds a request body: a message of a few MiB fits.
const maxBody = 16 << 20

// duration is a Go duration string in JSON.
type duration time.Duration

func (d *duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration is a string such as \"1s\" or \"250ms\": %w", err)
	}
	return d.parse(s)
}

// parse reads s, a Go duration string of 0 or more.
func (d *duration) parse(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil || v < 0 {
		return fmt.Errorf("duration %q: want one such as \"1s\" or \"250ms\"", s)
	}
	*d = duration(v)
	return nil
}

// server chooses the tmux server, as -S and -L do.
type server struct {
	Socket     string `json:"socket,omitempty"`
	SocketName string `json:"socket_name,omitempty"`
}

// delivering are the options of an operation that types messages: the
// flags of send and broadcast.
type delivering struct {
	NoQueue      bool     `json:"no_queue,omitempty"`
	MailboxOnly  bool     `json:"mailbox_only,omitempty"`
	WhileBusy    bool     `json:"while_busy,omitempty"`
	Force        bool     `json:"force,omitempty"`
	Profile      string   `json:"profile,omitempty"` // --agent: the agent CLI's profile by hand
	ReadyTimeout duration `json:"ready_timeout,omitempty"`
}

// draft is a message as a request gives it.
type draft struct {
	// ID, when given, is the message's id as the app chose it
	// (MSG_<FROM>_<8 hex>): a client that loses its connection reads the
	// message's fate at GET /v1/messages/{id}, and a retry with the same
	// id is refused (409) instead of sending it twice; a broadcast's retry
	// of the same message finishes it instead (courier.BroadcastOnce).
	ID   string            `json:"id,omitempty"`
	Text string            `json:"text"`
	Type string            `json:"type,omitempty"`
	Meta map[string]string `json:"meta,omitempty"`
}

func (d draft) service() service.Draft {
	return service.Draft{ID: message.ID(d.ID), Text: d.Text, Type: d.Type, Meta: d.Meta}
}

type sendBody struct {
	Team  string `json:"team"`
	Agent string `json:"agent"`
	From  string `json:"from,omitempty"`
	Pane  string `json:"pane,omitempty"`
	// Create lets a mailbox_only message start the inbox of a name with
	// no session, inbox or board entry (send --create): without it a
	// typo is refused, not given an inbox.
	Create bool `json:"create,omitempty"`
	// Host is the host the agent runs on ("" this one).
	Host string `json:"host,omitempty"`
	draft
	delivering
	server
}

// replyBody answers a message: to its sender, marked as the answer.
type replyBody struct {
	To   string `json:"reply_to"`
	From string `json:"from"`
	Team string `json:"team,omitempty"` // the replier's team
	draft
	delivering
	server
}

type broadcastBody struct {
	Team     string `json:"team,omitempty"`
	All      bool   `json:"all,omitempty"`
	AllHosts bool   `json:"all_hosts,omitempty"`
	From     string `json:"from,omitempty"`
	draft
	delivering
	server
}

type deliverBody struct {
	Team         string   `json:"team,omitempty"`
	ReadyTimeout duration `json:"ready_timeout,omitempty"`
	server
}

// endpoint is one route of the API. The table is what the daemon serves
// and what the OpenAPI document must describe (TestOpenAPIDescribesEveryRoute).
type endpoint struct {
	method, path string
	handle       func(*Daemon, http.ResponseWriter, *http.Request)
}

var endpoints = []endpoint{
	{"POST", "/v1/send", (*Daemon).send},
	{"POST", "/v1/reply", (*Daemon).reply},
	{"POST", "/v1/broadcast", (*Daemon).broadcast},
	{"POST", "/v1/deliver", (*Daemon).deliver},
	{"GET", "/v1/agents", (*Daemon).agents},
	{"GET", "/v1/messages/{id}", (*Daemon).message},
	{"GET", "/v1/inbox/{team}/{name}", (*Daemon).inbox},
	{"POST", "/v1/request", (*Daemon).request},
	{"POST", "/v1/claim", (*Daemon).claim},
	{"GET", "/v1/requests", (*Daemon).requests},
	{"POST", "/v1/requests/nudge", (*Daemon).nudge},
	{"POST", "/v1/status", (*Daemon).status},
	{"POST", "/v1/heartbeat", (*Daemon).heartbeat},
	{"GET", "/v1/board", (*Daemon).board},
	{"POST", "/v1/teams/{team}/clean", (*Daemon).cleanTeam},
	{"POST", "/v1/spawn", (*Daemon).spawn},
	{"POST", "/v1/shutdown", (*Daemon).shutdown},
	{"POST", "/v1/kill", (*Daemon).kill},
	{"GET", "/v1/agents/status", (*Daemon).agentStates},
	{"POST", "/v1/agents/reap", (*Daemon).reap},
	{"GET", "/v1/log", (*Daemon).messageLog},
	{"POST", "/v1/wait", (*Daemon).wait},
	{"POST", "/v1/messages/{id}/handled", (*Daemon).handled},
	{"POST", "/v1/messages/{id}/retry", (*Daemon).retry},
	{"POST", "/v1/tasks", (*Daemon).task},
	{"POST", "/v1/workflows", (*Daemon).workflow},
	{"GET", "/v1/events", (*Daemon).stream},
	{"GET", "/v1/openapi.json", (*Daemon).openapi},
	{"GET", "/v1/version", (*Daemon).versionInfo},
	{"POST", "/v1/cli", (*Daemon).cli},
	{"POST", "/v1/cli/{run}/interrupt", (*Daemon).interrupt},
	{"POST", "/v1/cli/{run}/stdin", (*Daemon).stdin},
}

// mcpRoutes are MCP's Streamable HTTP endpoint (not in the OpenAPI
// document: MCP describes itself).
var mcpRoutes = []string{"/mcp"}

// routes registers the endpoints.
func (d *Daemon) routes(mux *http.ServeMux) {
	for _, e := range endpoints {
		mux.HandleFunc(e.method+" "+e.path, func(w http.ResponseWriter, r *http.Request) { e.handle(d, w, r) })
	}
	for _, p := range mcpRoutes {
		mux.HandleFunc(p, d.mcp)
	}
}

// openapi is GET /v1/openapi.json: the document describing every endpoint.
func (d *Daemon) openapi(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(openapiDoc)
}

// decode reads a JSON body into v, refusing unknown fields: a misspelt
// option must not be ignored.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
		fail(w, http.StatusBadRequest, fmt.Errorf("the request body: %w", err))
		return false
	}
	return true
}

// respond writes doc with the HTTP status of its exit code.
func respond(w http.ResponseWriter, code int, doc any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(statusOf(code))
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

// respondCoded answers doc, a document of --json that carries no exit
// code of its own, with exit_code added after its fields (and error, when
// err is set).
func respondCoded(w http.ResponseWriter, doc any, code int, err error) {
	obj, mErr := marshal(doc)
	if mErr != nil {
		fail(w, http.StatusInternalServerError, mErr)
		return
	}
	extra, _ := marshal(struct {
		Error    string `json:"error,omitempty"`
		ExitCode int    `json:"exit_code"`
	}{errText(err), code})
	fields := bytes.TrimSpace(obj[1 : len(obj)-1]) // the object's fields, or none
	out := append([]byte("{"), fields...)
	if len(fields) > 0 {
		out = append(out, ',')
	}
	respond(w, code, json.RawMessage(append(out, extra[1:]...)))
}

// marshal is v as compact JSON, with <, > and & as they are (as wire.Encode
// writes them).
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	err := enc.Encode(v)
	return bytes.TrimSpace(b.Bytes()), err
}

// fail answers an error as wire.Error with the exit code it maps to: a
// request the service refuses as it stands is bad usage (400, exit 2), a
// change that conflicts with a message's record 409.
func fail(w http.ResponseWriter, status int, err error) {
	code := wire.ErrorCode(err)
	if errors.Is(err, errCaller) || status == http.StatusBadRequest || refused(err) {
		code = wire.ExitUsage
	}
	if status == 0 {
		status = statusOf(code)
		var se *courier.StateError
		if errors.Is(err, service.ErrDuplicateID) || errors.As(err, &se) || errors.Is(err, courier.ErrBeingTyped) {
			status = http.StatusConflict
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = wire.Encode(w, wire.Error{Error: words(err), ExitCode: code})
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
func (d *Daemon) call(o delivering, pane string) (service.Delivery, error) {
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

func (d *Daemon) send(w http.ResponseWriter, r *http.Request) {
	var b sendBody
	if !decode(w, r, &b) {
		return
	}
	t, err := target.New(b.Team, b.Agent)
	if err != nil {
		fail(w, http.StatusBadRequest, err)
		return
	}
	del, err := d.call(b.delivering, b.Pane)
	if err != nil {
		fail(w, 0, err)
		return
	}
	svc, ok := d.serviceFor(w, Caller{From: b.From, Team: b.Team, Socket: b.Socket, SocketName: b.SocketName})
	if !ok {
		return
	}
	res, err := svc.Send(d.requestContext(r), service.SendRequest{To: t, Draft: b.draft.service(), Delivery: del, RefuseUnknown: !b.Create, Host: b.Host})
	if err != nil {
		fail(w, 0, err)
		return
	}
	doc := wire.NewSend(res, wire.Plain)
	respond(w, doc.ExitCode, doc)
}

func (d *Daemon) reply(w http.ResponseWriter, r *http.Request) {
	var b replyBody
	if !decode(w, r, &b) {
		return
	}
	if !message.Valid(b.To) {
		fail(w, http.StatusBadRequest, fmt.Errorf("reply_to %q is not a message id (MSG_<SENDER>_<8 hex>)", b.To))
		return
	}
	del, err := d.call(b.delivering, "")
	if err != nil {
		fail(w, 0, err)
		return
	}
	svc, ok := d.serviceFor(w, Caller{From: b.From, Team: b.Team, Socket: b.Socket, SocketName: b.SocketName})
	if !ok {
		return
	}
	res, err := svc.Reply(d.requestContext(r), service.ReplyRequest{To: message.ID(b.To), Draft: b.draft.service(), Queue: del.Queue, Call: del.Call})
	if err != nil {
		fail(w, 0, err)
		return
	}
	doc := wire.NewSend(res, wire.Plain)
	respond(w, doc.ExitCode, doc)
}

func (d *Daemon) broadcast(w http.ResponseWriter, r *http.Request) {
	var b broadcastBody
	if !decode(w, r, &b) {
		return
	}
	if b.Team == "" && !b.All {
		fail(w, http.StatusBadRequest, errors.New("name a team, or all: true for every agent"))
		return
	}
	del, err := d.call(b.delivering, "")
	if err != nil {
		fail(w, 0, err)
		return
	}
	svc, ok := d.serviceFor(w, Caller{From: b.From, Team: b.Team, Socket: b.Socket, SocketName: b.SocketName})
	if !ok {
		return
	}
	res, err := svc.Broadcast(d.requestContext(r), service.BroadcastRequest{Team: b.Team, All: b.All, AllHosts: b.AllHosts, Draft: b.draft.service(), Delivery: del})
	if err != nil {
		fail(w, 0, err)
		return
	}
	doc := wire.NewBroadcast(res, b.Team, b.All, wire.Plain)
	respond(w, doc.ExitCode, doc)
}

func (d *Daemon) deliver(w http.ResponseWriter, r *http.Request) {
	var b deliverBody
	if !decode(w, r, &b) {
		return
	}
	svc, ok := d.serviceFor(w, Caller{Socket: b.Socket, SocketName: b.SocketName})
	if !ok {
		return
	}
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
	respond(w, code, struct {
		wire.Deliver
		Error    string `json:"error,omitempty"`
		ExitCode int    `json:"exit_code"`
	}{doc, errText(err), code})
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func (d *Daemon) agents(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	svc, ok := d.serviceFor(w, Caller{Socket: q.Get("socket"), SocketName: q.Get("socket_name")})
	if !ok {
		return
	}
	disp, err := svc.Dispatcher()
	if err != nil {
		fail(w, 0, err)
		return
	}
	agents, err := disp.Agents(r.Context(), q.Get("team"), dispatch.Call{})
	if err != nil {
		fail(w, 0, err)
		return
	}
	respond(w, wire.ExitOK, wire.NewAgents(disp.Tmux.Server().Socket, agents))
}

func (d *Daemon) message(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	id := r.PathValue("id")
	if !message.Valid(id) {
		fail(w, http.StatusBadRequest, fmt.Errorf("%q is not a message id (MSG_<SENDER>_<8 hex>)", id))
		return
	}
	svc, ok := d.serviceFor(w, Caller{Socket: q.Get("socket"), SocketName: q.Get("socket_name")})
	if !ok {
		return
	}
	copies, err := svc.History(r.Context(), service.LogRequest{}, message.ID(id))
	if err != nil && !errors.Is(err, mailbox.ErrNoMessage) {
		fail(w, 0, err)
		return
	}
	// The copies sent to other hosts are in Remote, as they always were.
	copies = slices.DeleteFunc(copies, func(c service.HistoryCopy) bool { return c.Host != "" })
	doc := struct {
		ID      string                `json:"id"`
		Message *mailbox.Envelope     `json:"message,omitempty"`
		Copies  []service.HistoryCopy `json:"copies"`
		// Remote is a message this host sent to another: the state that
		// host last reported.
		Remote   []hosts.Sent `json:"remote,omitempty"`
		ExitCode int          `json:"exit_code"`
	}{ID: id, Copies: copies}
	if d.links != nil {
		// Beside the copies here: a broadcast's copies on other hosts.
		if sent, err := d.links.link.LookupSent(r.Context(), id); err == nil && len(sent) > 0 {
			doc.Remote = sent
			if len(copies) == 0 {
				respond(w, wire.ExitOK, doc)
				return
			}
		}
	}
	if len(copies) == 0 {
		fail(w, http.StatusNotFound, fmt.Errorf("no message %s in any inbox of this server, nor sent from here to another host", id))
		return
	}
	if env, err := svc.Read(r.Context(), message.ID(id)); err == nil {
		doc.Message = &env
	}
	respond(w, wire.ExitOK, doc)
}

func (d *Daemon) inbox(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	team, name := r.PathValue("team"), r.PathValue("name")
	all, _ := strconv.ParseBool(q.Get("all"))
	peek, _ := strconv.ParseBool(q.Get("peek"))
	reader := q.Get("reader")
	if reader == "" {
		reader = name
	}
	svc, ok := d.serviceFor(w, Caller{From: reader, Team: team, Socket: q.Get("socket"), SocketName: q.Get("socket_name")})
	if !ok {
		return
	}
	res, err := svc.Inbox(r.Context(), service.InboxRequest{Team: team, Agent: name, All: all, Peek: peek})
	if err != nil {
		fail(w, 0, err)
		return
	}
	respond(w, wire.ExitOK, struct {
		wire.Inbox
		ExitCode int `json:"exit_code"`
	}{wire.Inbox{Team: res.Team, Agent: res.Agent, Reader: res.Reader, Messages: res.Messages}, wire.ExitOK})
}

func (d *Daemon) versionInfo(w http.ResponseWriter, r *http.Request) {
	answer := map[string]any{"version": d.backend.version, "pid": d.pid, "exit_code": wire.ExitOK}
	if d.opts.Commit != "" {
		answer["commit"] = d.opts.Commit
	}
	if d.opts.Date != "" {
		answer["date"] = d.opts.Date
	}
	respond(w, wire.ExitOK, answer)
}

// requestContext is the context of an operation a client asked for: it
// ends when the daemon stops, not when the client goes away. A message
// half typed is finished and recorded as what it is; the client that lost
// its connection reads the verdict from GET /v1/messages/{id}.
func (d *Daemon) requestContext(*http.Request) context.Context { return d.ctx }
