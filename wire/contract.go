package wire

import (
	"encoding/json"
	"maps"
	"net/http"
	"reflect"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agentmsg/agentmsg/courier"
	"github.com/agentmsg/agentmsg/delivery"
	"github.com/agentmsg/agentmsg/eventlog"
	"github.com/agentmsg/agentmsg/hosts"
	"github.com/agentmsg/agentmsg/internal/openapi"
	"github.com/agentmsg/agentmsg/lifecycle"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
	"github.com/agentmsg/agentmsg/service"
)

// The daemon's operations, declared once: each is its path, what it takes
// and what it answers, as Go types. The daemon routes by this table
// (serve binds a handler to each ID), and OpenAPI generates the published
// document from it: nothing about an operation is written twice.

// Operation is one operation of the daemon's API.
type Operation = openapi.Operation

// Stream control events: what the event stream sends besides the log's
// events, each as an SSE event of its own name (event: dropped) with its
// data; type names it in the data too.
type (
	// StreamDropped: the client read too slowly and is cut off.
	StreamDropped struct {
		Type       string `json:"type" const:"dropped"`
		ResumeFrom int64  `json:"resume_from" jsonschema:"reconnect with Last-Event-ID set to this"`
	}
	// StreamExpired: the events after the client's cursor were rotated
	// away.
	StreamExpired struct {
		Type       string `json:"type" const:"expired"`
		Error      string `json:"error"`
		ResumeFrom int64  `json:"resume_from" jsonschema:"-1: the stream goes on from the oldest event kept; read the state again"`
	}
	// StreamReset: the client's cursor is past the end of the log (the
	// state dir was wiped or moved): what it knows may be from another
	// log.
	StreamReset struct {
		Type       string `json:"type" const:"reset"`
		Error      string `json:"error"`
		Last       int64  `json:"last" jsonschema:"the newest event the log holds (-1: none)"`
		ResumeFrom int64  `json:"resume_from" jsonschema:"the stream goes on after this id: read the state again (its as_of), then trust the events"`
	}
)

// Stream control event names.
const (
	StreamEventDropped = "dropped"
	StreamEventExpired = "expired"
	StreamEventReset   = "reset"
)

func typeOf[T any]() reflect.Type { return reflect.TypeFor[T]() }

// answers is the usual answers of an operation besides its success: 400
// and 404, each the operation's own document (its exit_code 2 or 3: a
// target that does not exist is a verdict) or an Error, and an Error for
// any other status (401 over TCP without the token, 405, 409, 413, 500).
func answers(ok ...openapi.Answer) []openapi.Answer {
	out := append([]openapi.Answer{}, ok...)
	bad := openapi.Answer{Status: http.StatusBadRequest, Description: "the request cannot be understood (exit_code 2): an Error, whose code and field say what", Type: typeOf[Error]()}
	missing := openapi.Answer{Status: http.StatusNotFound, Description: "what it names does not exist (exit_code 3): an Error", Type: typeOf[Error]()}
	if len(ok) > 0 && ok[0].Type != nil {
		own := []reflect.Type{ok[0].Type, typeOf[Error]()}
		bad.Type, bad.AnyOf, bad.Description = nil, own, bad.Description+"; or the operation's own document"
		missing.Type, missing.AnyOf, missing.Description = nil, own, missing.Description+", or the operation's own document with its verdict"
	}
	out = append(out, bad, missing,
		openapi.Answer{Status: 0, Description: "401 over TCP without the token, 405, 409 for a conflict, 413 for a body over 16 MiB, 500: an Error", Type: typeOf[Error]()})
	return out
}

func ok[T any](desc string) openapi.Answer {
	return openapi.Answer{Status: http.StatusOK, Description: desc, Type: typeOf[T]()}
}

// Operations are every operation of the API.
func Operations() []Operation {
	msgID := map[string]string{"id": "a message id, MSG_<SENDER>_<8 hex>"}
	return []Operation{
		{ID: "send", Method: "POST", Path: "/v1/send", Tag: "messages", Body: typeOf[SendBody](),
			Summary:     "Send a message to one agent",
			Description: "Records the message in the agent's inbox, types it into its pane and proves it arrived. Blocking (the default) it answers once the message is submitted or kept: within ready_timeout and the confirmation (docs/exit-codes.md: 1m41s with the defaults); a verdict other than submitted is still 200, with its exit_code. With wait false it answers 202 as soon as the message is recorded: the pattern for an app, which follows the message's events (or GET /v1/messages/{id}).",
			Answers: answers(ok[Send]("the verdict: submitted, queued, deferred (kept, exit_code 0), or why not (exit_code 4 not ready with no_queue, 5 unconfirmed, 1 failed)"),
				openapi.Answer{Status: http.StatusAccepted, Description: "wait false: recorded, and being typed", Type: typeOf[SendAccepted]()})},
		{ID: "reply", Method: "POST", Path: "/v1/reply", Tag: "messages", Body: typeOf[ReplyBody](),
			Summary:     "Answer a message, to its sender",
			Description: "Typed into the sender's pane when the sender is an agent here; recorded in its inbox otherwise (an app reads its answers at GET /v1/inbox/{team}/{name}).",
			Answers:     answers(ok[Send]("the verdict, as send's"))},
		{ID: "broadcast", Method: "POST", Path: "/v1/broadcast", Tag: "messages", Body: typeOf[BroadcastBody](),
			Summary:     "Send a message to every agent of a team",
			Description: "Recorded in every inbox in one step before any copy is typed. Asked again with the same id and message, it finishes what is missing and answers every copy's verdict.",
			Answers:     answers(ok[Broadcast]("one verdict, and each target's"))},
		{ID: "deliver", Method: "POST", Path: "/v1/deliver", Tag: "messages", Body: typeOf[DeliverBody](), BodyOptional: true,
			Summary: "Type what waits for agents that are ready now",
			Answers: answers(ok[DeliverAnswer]("every message tried"))},
		{ID: "getMessage", Method: "GET", Path: "/v1/messages/{id}", Tag: "messages", PathParams: msgID, Query: typeOf[ServerQuery](),
			Summary:     "What became of a message",
			Description: "The message, and each copy of it (a broadcast has one per inbox) with its own delivery now and every record of it; a copy its intent names and no inbox holds yet is unrecorded. A message sent to another host says what that host last reported.",
			Answers:     answers(ok[MessageAnswer]("the message and its copies"))},
		{ID: "markHandled", Method: "POST", Path: "/v1/messages/{id}/handled", Tag: "messages", PathParams: msgID, Body: typeOf[InboxBody](),
			Summary: "A person dealt with a message: never typed again",
			Answers: answers(ok[SettledAnswer]("its record now"))},
		{ID: "retryMessage", Method: "POST", Path: "/v1/messages/{id}/retry", Tag: "messages", PathParams: msgID, Body: typeOf[RetryBody](),
			Summary: "Send a typed or failed message back to deliver, and run a pass",
			Answers: answers(ok[SettledAnswer]("its record now, and the pass"))},
		{ID: "getLog", Method: "GET", Path: "/v1/log", Tag: "mailbox", Query: typeOf[LogQuery](),
			Summary:     "The messages kept in the inboxes, and how far each got",
			Description: "Oldest first, with limit and cursor for pages. With id, one message's history in every inbox that holds it (a HistoryAnswer).",
			Answers: answers(openapi.Answer{Status: http.StatusOK, Description: "the log (a LogAnswer), or with id the message's history (a HistoryAnswer)",
				AnyOf: []reflect.Type{typeOf[LogAnswer](), typeOf[HistoryAnswer]()}})},
		{ID: "peekInbox", Method: "GET", Path: "/v1/inbox/{team}/{name}", Tag: "mailbox", Query: typeOf[InboxQuery](),
			PathParams: map[string]string{"team": "the inbox's team", "name": "the inbox's agent"},
			Summary:    "Look at an inbox: marks nothing read",
			Answers:    answers(ok[InboxAnswer]("the messages its reader has not read (all: every one kept)"))},
		{ID: "readInbox", Method: "POST", Path: "/v1/inbox/{team}/{name}/read", Tag: "mailbox", Body: typeOf[ReadBody](), BodyOptional: true,
			PathParams: map[string]string{"team": "the inbox's team", "name": "the inbox's agent"},
			Summary:    "Read an inbox as its reader: its cursor moves past what is answered",
			Answers:    answers(ok[InboxAnswer]("the messages the reader had not read, now read"))},
		{ID: "wait", Method: "POST", Path: "/v1/wait", Tag: "mailbox", Body: typeOf[WaitBody](),
			Summary: "Wait for a message in the caller's inbox",
			Answers: answers(openapi.Answer{Status: http.StatusOK, Description: "the message (read now), or an Error with exit_code 7 and code timeout when none came in time",
				AnyOf: []reflect.Type{typeOf[WaitAnswer](), typeOf[Error]()}})},
		{ID: "postRequest", Method: "POST", Path: "/v1/request", Tag: "requests", Body: typeOf[RequestBody](),
			Summary: "Post an open request to a team", Answers: answers(ok[Request]("the request, and who was told"))},
		{ID: "claimRequest", Method: "POST", Path: "/v1/claim", Tag: "requests", Body: typeOf[ClaimBody](),
			Summary: "Claim an open request: exactly one claimant gets it",
			Answers: answers(ok[Claim]("claimed, or a lost claim (exit_code 8)"))},
		{ID: "listRequests", Method: "GET", Path: "/v1/requests", Tag: "requests", Query: typeOf[TeamQuery](),
			Summary: "A team's requests", Answers: answers(ok[RequestsAnswer]("each request and its state"))},
		{ID: "nudgeRequests", Method: "POST", Path: "/v1/requests/nudge", Tag: "requests", Body: typeOf[TeamBody](), BodyOptional: true,
			Summary: "Tell the team, once, of requests that expired unclaimed; list them",
			Answers: answers(ok[RequestsAnswer]("the requests, and those nudged now"))},
		{ID: "setStatus", Method: "POST", Path: "/v1/status", Tag: "requests", Body: typeOf[StatusBody](),
			Summary: "Set the caller's entry on its team's board", Answers: answers(ok[StatusAnswer]("the entry now"))},
		{ID: "heartbeat", Method: "POST", Path: "/v1/heartbeat", Tag: "requests", Body: typeOf[TeamBody](), BodyOptional: true,
			Summary: "Record that the caller is alive", Answers: answers(ok[HeartbeatAnswer]("when"))},
		{ID: "getBoard", Method: "GET", Path: "/v1/board", Tag: "requests", Query: typeOf[TeamQuery](),
			Summary: "A team's status board", Answers: answers(ok[BoardAnswer]("every entry"))},
		{ID: "cleanTeam", Method: "POST", Path: "/v1/teams/{team}/clean", Tag: "requests", Body: typeOf[CleanBody](), BodyOptional: true,
			PathParams: map[string]string{"team": "the team"},
			Summary:    "Remove what the mailbox keeps for a team", Description: "Without yes: 400 (exit_code 2) with what it would remove.",
			Answers: answers(ok[TeamCleanAnswer]("removed"))},
		{ID: "listAgents", Method: "GET", Path: "/v1/agents", Tag: "agents", Query: typeOf[TeamQuery](),
			Summary:     "The agents on the tmux server, with their screens' states",
			Description: "A snapshot: as_of is the event it is current as of; follow GET /v1/events from it and no change is missed (agents there before the daemon started included).",
			Answers:     answers(ok[AgentsAnswer]("every agent"))},
		{ID: "agentStates", Method: "GET", Path: "/v1/agents/status", Tag: "agents", Query: typeOf[AgentStatesQuery](),
			Summary: "Each agent's state: running, idle, waiting, dead", Answers: answers(ok[AgentStatesAnswer]("every agent"))},
		{ID: "reapAgents", Method: "POST", Path: "/v1/agents/reap", Tag: "agents", Body: typeOf[ReapBody](), BodyOptional: true,
			Summary: "Remove the registry entries of dead agents (kills nothing)", Answers: answers(ok[AgentStatesAnswer]("the agents, and those reaped"))},
		{ID: "spawn", Method: "POST", Path: "/v1/spawn", Tag: "agents", Body: typeOf[SpawnBody](),
			Summary: "Start an agent in a session of its own", Answers: answers(ok[SpawnAnswer]("its session and pane"))},
		{ID: "shutdown", Method: "POST", Path: "/v1/shutdown", Tag: "agents", Body: typeOf[ShutdownBody](),
			Summary: "Ask an agent to stop, and wait for its answer", Answers: answers(ok[Shutdown]("exit_code 7 unanswered, 9 deferred"))},
		{ID: "kill", Method: "POST", Path: "/v1/kill", Tag: "agents", Body: typeOf[KillBody](),
			Summary: "End an agent and every process it started", Answers: answers(ok[Kill]("what was ended"))},
		{ID: "assignTask", Method: "POST", Path: "/v1/tasks", Tag: "orchestration", Body: typeOf[TaskBody](),
			Summary: "Give an agent a task, after its unread messages", Answers: answers(ok[Task]("send's verdict, and the messages put in front"))},
		{ID: "runWorkflow", Method: "POST", Path: "/v1/workflows", Tag: "orchestration", Body: typeOf[WorkflowBody](),
			Summary: "Run steps, each a prompt for one agent, in dependency order", Answers: answers(ok[Workflow]("every step's outcome"))},
		{ID: "events", Method: "GET", Path: "/v1/events", Tag: "events", Query: typeOf[EventsQuery](),
			Summary: "Every change, as Server-Sent Events",
			Description: "Each event of the log is an SSE event with its id (and no event name); its data is an Event. Reconnect with Last-Event-ID (or since) and nothing is missed or repeated. " +
				"Besides: event dropped (too slow: reconnect from resume_from), expired (the events after the cursor were rotated away: read the state again) and reset (the cursor is past the end of the log: read the state again). " +
				"A comment line every 15 s keeps the connection open.",
			Answers: answers(openapi.Answer{Status: http.StatusOK, Media: "text/event-stream", Description: "the stream; each data line is a StreamItem",
				Schema: &jsonschema.Schema{Ref: "#/components/schemas/StreamItem"}})},
		{ID: "openapi", Method: "GET", Path: "/v1/openapi.json", Tag: "daemon", Summary: "This document",
			Answers: answers(openapi.Answer{Status: http.StatusOK, Media: "application/json", Description: "OpenAPI 3.1", Schema: &jsonschema.Schema{Type: "object"}})},
		{ID: "version", Method: "GET", Path: "/v1/version", Tag: "daemon", Summary: "Which agentmsg the daemon is",
			Answers: answers(ok[VersionAnswer]("its version"))},
		{ID: "runCLI", Method: "POST", Path: "/v1/cli", Tag: "cli", Body: typeOf[CLIRequest](),
			Summary: "Run a command line as the CLI would (what the CLI itself uses)",
			Answers: answers(openapi.Answer{Status: http.StatusOK, Media: "application/x-ndjson", Description: "one CLIFrame per line: the run's id, its output as it comes, then its exit code",
				Schema: &jsonschema.Schema{Ref: "#/components/schemas/CLIFrame"}})},
		{ID: "interruptCLI", Method: "POST", Path: "/v1/cli/{run}/interrupt", Tag: "cli", PathParams: map[string]string{"run": "the run's id, from its first frame"},
			Summary: "Interrupt a run (its Ctrl-C)", Answers: answers(ok[Exit]("interrupted"))},
		{ID: "stdinCLI", Method: "POST", Path: "/v1/cli/{run}/stdin", Tag: "cli", PathParams: map[string]string{"run": "the run's id"},
			Summary: "A run's stdin, when its frames ask for it (the body, as it is)", Answers: answers(ok[Exit]("read"))},
	}
}

// Tags are the groups of operations.
var Tags = []openapi.Tag{
	{Name: "messages", Description: "sending, and what became of a message"},
	{Name: "mailbox", Description: "the inboxes: the record of every message"},
	{Name: "requests", Description: "open requests, claims, the status board"},
	{Name: "agents", Description: "the agents: their states, and their lives"},
	{Name: "orchestration", Description: "tasks and workflows"},
	{Name: "events", Description: "every change, as a resumable stream"},
	{Name: "daemon", Description: "the daemon itself"},
	{Name: "cli", Description: "the command line, run in the daemon"},
}

// words is an enumeration from a list of values and their meanings.
func words[T ~string](vals []T, docs []string) openapi.Enum {
	e := openapi.Enum{Doc: docs}
	for _, v := range vals {
		e.Values = append(e.Values, string(v))
	}
	return e
}

func courierWords(ws []courier.Word) openapi.Enum {
	var e openapi.Enum
	for _, w := range ws {
		e.Values, e.Doc = append(e.Values, w.Word), append(e.Doc, w.Doc)
	}
	return e
}

// schemas are the types of the API with what their tags cannot say: the
// values of each enumeration, declared where the code defines them.
func schemas(prefix string) *openapi.Schemas {
	var states []mailbox.DeliveryState
	var stateDocs []string
	for _, s := range mailbox.States {
		doc := s.Doc
		if s.Final {
			doc += " (final)"
		}
		states, stateDocs = append(states, s.State), append(stateDocs, doc)
	}
	var screens []delivery.State
	var screenDocs []string
	for _, s := range delivery.States {
		screens, screenDocs = append(screens, s.State), append(screenDocs, s.Doc)
	}
	var statuses, statusDocs []string
	for _, s := range lifecycle.Statuses {
		statuses, statusDocs = append(statuses, s.State), append(statusDocs, s.Doc)
	}
	var codes []Code
	var codeDocs []string
	for _, c := range Codes {
		codes, codeDocs = append(codes, c.Code), append(codeDocs, c.Doc)
	}
	duration := &jsonschema.Schema{Type: "string", Pattern: `^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`,
		Description: "a Go duration: 1s, 250ms, 1m30s", Examples: []any{"1s", "250ms"}}
	return &openapi.Schemas{
		Prefix: prefix,
		Names: map[reflect.Type]string{
			typeOf[delivery.State]():   "ScreenState",
			typeOf[delivery.Verdict](): "Verdict",
			typeOf[Status]():           "BoardEntryAnswer",
			typeOf[mailbox.Status]():   "BoardEntry",
			typeOf[hosts.Sent]():       "RemoteCopy",
		},
		Enums: map[reflect.Type]openapi.Enum{
			typeOf[mailbox.DeliveryState]():    words(states, stateDocs),
			typeOf[delivery.Verdict]():         courierWords(courier.Verdicts),
			typeOf[courier.BroadcastVerdict](): courierWords(courier.BroadcastVerdicts),
			typeOf[delivery.State]():           words(screens, screenDocs),
			typeOf[mailbox.RequestState]():     words([]mailbox.RequestState{mailbox.RequestOpen, mailbox.RequestClaimed, mailbox.RequestExpired}, nil),
			typeOf[service.StepState]():        words([]service.StepState{service.StepDone, service.StepFailed, service.StepSkipped, service.StepTimedOut}, nil),
			typeOf[Code]():                     words(codes, codeDocs),
		},
		Named: map[string]openapi.Enum{
			"Reason":      courierWords(courier.Reasons),
			"AgentStatus": words(statuses, statusDocs),
			"StatusState": words(mailbox.StatusStates(), nil),
		},
		Fixed: map[reflect.Type]*jsonschema.Schema{
			typeOf[time.Time]():       {Type: "string", Format: "date-time"},
			typeOf[[]byte]():          {Type: "string", ContentEncoding: "base64"},
			typeOf[json.RawMessage](): {},
			typeOf[Duration]():        duration,
			typeOf[message.ID]():      {Type: "string", Pattern: `^MSG_[A-Z0-9_]+_[0-9a-f]{8}$`},
			typeOf[mailbox.Type]():    {Type: "string", Description: "text, status, task, plan, plan-approval, shutdown-request, shutdown-response, broadcast, request, claim; another is kept as it is"},
			typeOf[any]():             {Description: "any JSON value"},
		},
	}
}

// eventUnion registers one schema per type of event (eventlog.Kinds), the
// stream's control events, and their unions: Event (the log's) and
// StreamItem (all the stream sends).
func eventUnion(s *openapi.Schemas, prefix string) error {
	fields := map[string]*jsonschema.Schema{}
	for _, f := range openapi.Fields(typeOf[eventlog.Event]()) {
		if f.Name == "type" {
			continue
		}
		sch, err := s.Ref(f.Type, false)
		if err != nil {
			return err
		}
		sch.Description = f.Doc
		fields[f.Name] = sch
	}
	fields["id"].Description = "the event's id: only grows (give it as Last-Event-ID)"
	fields["place"].Description = "the tmux server (its canonical socket), or host:NAME for what another host reports"
	fields["state"].Description = "the message's delivery state, or the agent's screen state"
	var oneOf []*jsonschema.Schema
	mapping := map[string]string{}
	for _, k := range eventlog.Kinds {
		name := "Event" + camel(string(k.Type))
		var c any = string(k.Type)
		sch := &jsonschema.Schema{Type: "object", Description: k.Doc, Required: []string{"id", "time", "type"},
			Properties: map[string]*jsonschema.Schema{"type": {Type: "string", Const: &c}}}
		sch.PropertyOrder = []string{"id", "time", "type"}
		for _, n := range []string{"id", "time"} {
			sch.Properties[n] = fields[n].CloneSchemas()
		}
		for _, n := range append(append([]string{}, k.Carries...), k.May...) {
			sch.Properties[n] = fields[n].CloneSchemas()
			sch.PropertyOrder = append(sch.PropertyOrder, n)
		}
		sch.Required = append(sch.Required, k.Carries...)
		oneOf = append(oneOf, s.Add(name, sch))
		mapping[string(k.Type)] = prefix + name
	}
	s.Add("Event", &jsonschema.Schema{Description: "one change, of the type its type names", OneOf: oneOf,
		Extra: map[string]any{"discriminator": map[string]any{"propertyName": "type", "mapping": mapping}}})
	var controls []*jsonschema.Schema
	cmap := map[string]string{}
	for _, c := range []struct {
		name string
		t    reflect.Type
	}{{StreamEventDropped, typeOf[StreamDropped]()}, {StreamEventExpired, typeOf[StreamExpired]()}, {StreamEventReset, typeOf[StreamReset]()}} {
		ref, err := s.Ref(c.t, false)
		if err != nil {
			return err
		}
		controls = append(controls, ref)
		cmap[c.name] = ref.Ref
	}
	s.Add("StreamControl", &jsonschema.Schema{Description: "the stream's own events: dropped, expired, reset (each also its SSE event name)", OneOf: controls,
		Extra: map[string]any{"discriminator": map[string]any{"propertyName": "type", "mapping": cmap}}})
	s.Add("StreamItem", &jsonschema.Schema{Description: "what one SSE event of GET /v1/events carries as data: an Event of the log, or one of the stream's own; type tells which",
		OneOf: []*jsonschema.Schema{{Ref: prefix + "Event"}, {Ref: prefix + "StreamControl"}}})
	return nil
}

// camel is "message.not_found" as MessageNotFound.
func camel(s string) string {
	var b strings.Builder
	for _, part := range strings.FieldsFunc(s, func(r rune) bool { return r == '.' || r == '_' }) {
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String()
}

// OpenAPI is the API's OpenAPI 3.1 document, generated from Operations.
func OpenAPI(version string) ([]byte, error) {
	const prefix = "#/components/schemas/"
	s := schemas(prefix)
	if err := eventUnion(s, prefix); err != nil {
		return nil, err
	}
	// Named by hand in Operations (a stream's lines).
	for _, t := range []reflect.Type{typeOf[CLIFrame]()} {
		if _, err := s.Ref(t, false); err != nil {
			return nil, err
		}
	}
	return openapi.Build(openapi.Document{
		Title: "agentmsg daemon API", Version: version,
		Description: "agentmsg serve: HTTP and JSON on a Unix socket only its user reaches (<mailbox root>/serve.sock), and on loopback TCP with a bearer token. " +
			"Every answer carries exit_code, the CLI's exit code for the same outcome; an error also carries code, a stable word. See docs/api.md.",
		License: "MIT", LicenseURL: "https://opensource.org/license/mit",
		Servers: []openapi.Server{{URL: "http://127.0.0.1:7676", Description: "--tcp's address (127.0.0.1:7676 in the docs' examples), with the token; over the Unix socket any host name does, the socket being the address"}},
		SecuritySchemes: map[string]any{"token": map[string]any{"type": "http", "scheme": "bearer",
			"description": "over TCP only: the token in --token-file (or [serve] token_file). The Unix socket needs none: its mode and the peer's uid are the check."}},
		Security:   []map[string][]string{{}, {"token": {}}},
		Tags:       Tags,
		Operations: Operations(),
	}, s)
}

// Schema is the JSON schema of a document of type t (of any of them,
// when several) with every component it refers to in $defs: what a test
// holds an answer to.
func Schema(types ...reflect.Type) (*jsonschema.Schema, error) {
	if len(types) > 1 {
		any := &jsonschema.Schema{Defs: map[string]*jsonschema.Schema{}}
		for _, t := range types {
			s, err := Schema(t)
			if err != nil {
				return nil, err
			}
			maps.Copy(any.Defs, s.Defs)
			s.Defs = nil
			any.AnyOf = append(any.AnyOf, s)
		}
		return any, nil
	}
	t := types[0]
	const prefix = "#/$defs/"
	s := schemas(prefix)
	if err := eventUnion(s, prefix); err != nil {
		return nil, err
	}
	var root *jsonschema.Schema
	var err error
	switch t {
	case typeOf[eventlog.Event]():
		root = &jsonschema.Schema{Ref: prefix + "Event"}
	case typeOf[StreamItem]():
		root = &jsonschema.Schema{Ref: prefix + "StreamItem"}
	default:
		if root, err = s.Ref(t, false); err != nil {
			return nil, err
		}
	}
	for _, op := range Operations() {
		for _, a := range op.Answers {
			if a.Type != nil {
				if _, err := s.Ref(a.Type, false); err != nil {
					return nil, err
				}
			}
		}
	}
	root.Defs = s.Components()
	return root, nil
}

// StreamItem stands for what one SSE event of the stream carries (Schema).
type StreamItem struct{}
