package wire

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentmsg/agentmsg/hosts"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/service"
)

// The daemon's API, declared once: what each operation takes (a body, a
// query) and answers. The daemon decodes requests into these types and
// answers them; its OpenAPI document is generated from them (OpenAPI,
// package internal/openapi), so that a typed client in any language reads
// the same fields the daemon writes. A body uses the names --json prints
// (team, agent, text, from, meta) and the flags' names in snake case for
// options; durations are Go duration strings.

// Duration is a Go duration string in JSON ("1s", "250ms"), 0 or more.
type Duration time.Duration

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return &FieldError{Want: `a duration such as "1s" or "250ms"`}
	}
	return d.Parse(s)
}

func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// Parse reads s, a Go duration string of 0 or more.
func (d *Duration) Parse(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil || v < 0 {
		return &FieldError{Want: `a duration such as "1s" or "250ms"`, Got: fmt.Sprintf("%q", s)}
	}
	*d = Duration(v)
	return nil
}

// FieldError is a value of the wrong kind for a field.
type FieldError struct {
	Field string // its JSON name, set by whoever knows it
	Want  string // what it must be
	Got   string // what it was, when that helps
}

func (e *FieldError) Error() string {
	s := e.Field
	if s == "" {
		s = "a value"
	}
	s += ": want " + e.Want
	if e.Got != "" {
		s += ", not " + e.Got
	}
	return s
}

// Server chooses the tmux server, as -S and -L do; neither: the daemon's.
type Server struct {
	Socket     string `json:"socket,omitempty" jsonschema:"the tmux server's socket path (as -S); the daemon's own server when neither this nor socket_name is given"`
	SocketName string `json:"socket_name,omitempty" jsonschema:"the tmux server's socket name (as -L)"`
}

// Draft is a message as a request gives it.
type Draft struct {
	// ID, when given, is the message's id as the app chose it: its fate
	// can be read at GET /v1/messages/{id} whatever became of the answer,
	// and asking again with the same id and message answers the first
	// result (another message with that id is 409).
	ID   string            `json:"id,omitempty" jsonschema:"the message's id as the app chose it, MSG_<FROM>_<8 hex>: an idempotency key, unique on the tmux server. Asked again with the same id and message, the first result is answered and nothing is sent twice; another message with that id is 409"`
	Text string            `json:"text" jsonschema:"the message; control characters are removed before it is typed"`
	Type string            `json:"type,omitempty" jsonschema:"the message's type: text (the default), status, task, plan, plan-approval, shutdown-request, shutdown-response, request, claim, ..."`
	Meta map[string]string `json:"meta,omitempty" jsonschema:"metadata, typed with the message as key=value words; some types require keys (shutdown-response: accept)"`
}

// Delivering are the options of an operation that types messages: the
// flags of send and broadcast.
type Delivering struct {
	NoQueue      bool     `json:"no_queue,omitempty" jsonschema:"an agent not ready in time fails the message (exit_code 4) instead of keeping it for deliver"`
	MailboxOnly  bool     `json:"mailbox_only,omitempty" jsonschema:"only record it in the inbox, for the agent to read; never typed"`
	WhileBusy    bool     `json:"while_busy,omitempty" jsonschema:"type it while the agent is busy, when its CLI queues what is submitted then"`
	Force        bool     `json:"force,omitempty" jsonschema:"type it whatever the screen shows (a shell prompt included)"`
	Profile      string   `json:"profile,omitempty" jsonschema:"read the agent's screen as this profile (an agent CLI: claude, codex, ...) rather than the one found"`
	ReadyTimeout Duration `json:"ready_timeout,omitempty" jsonschema:"how long to wait for the agent to be ready (the configured ready_timeout when absent)"`
}

// SendBody is POST /v1/send's.
type SendBody struct {
	Team  string `json:"team" jsonschema:"the agent's team"`
	Agent string `json:"agent" jsonschema:"the agent's name (its session is agent-<team>-<agent>)"`
	From  string `json:"from,omitempty" jsonschema:"the sender's name, as the message and its id carry it (the daemon's configured sender when absent)"`
	Pane  string `json:"pane,omitempty" jsonschema:"the agent's pane when its session has several: WINDOW.PANE, a window name, or a pane id"`
	// Create lets a mailbox_only message start the inbox of a name with
	// no session, inbox or board entry.
	Create bool   `json:"create,omitempty" jsonschema:"with mailbox_only: start the inbox of a name agentmsg does not know yet"`
	Host   string `json:"host,omitempty" jsonschema:"the host the agent runs on, when not this one (needs the daemon's link to other hosts)"`
	// Wait false answers 202 once the message is recorded: the app
	// follows its events.
	Wait *bool `json:"wait,omitempty" jsonschema:"false: answer 202 with the message's id as soon as it is recorded, and type it in the background (follow its events, or GET /v1/messages/{id}); true or absent: answer once it is delivered or kept, within ready_timeout and the confirmation"`
	Draft
	Delivering
	Server
}

// ReplyBody is POST /v1/reply's: an answer to a message, to its sender.
type ReplyBody struct {
	To   string `json:"reply_to" jsonschema:"the message answered: it is in the replier's inbox"`
	From string `json:"from" jsonschema:"the replier: the agent whose inbox holds reply_to"`
	Team string `json:"team,omitempty" jsonschema:"the replier's team; found from reply_to when absent (the one team whose inbox of from holds it)"`
	Draft
	Delivering
	Server
}

// BroadcastBody is POST /v1/broadcast's.
type BroadcastBody struct {
	Team     string `json:"team,omitempty" jsonschema:"the team; required unless all"`
	All      bool   `json:"all,omitempty" jsonschema:"every agent on the server"`
	AllHosts bool   `json:"all_hosts,omitempty" jsonschema:"the team's agents on every linked host too"`
	From     string `json:"from,omitempty" jsonschema:"the sender's name"`
	Draft
	Delivering
	Server
}

// DeliverBody is POST /v1/deliver's.
type DeliverBody struct {
	Team         string   `json:"team,omitempty" jsonschema:"only this team's inboxes"`
	ReadyTimeout Duration `json:"ready_timeout,omitempty" jsonschema:"how long to wait for each agent to be ready"`
	Server
}

// RequestBody is POST /v1/request's.
type RequestBody struct {
	Team        string   `json:"team" jsonschema:"the team to post the request in"`
	From        string   `json:"from,omitempty" jsonschema:"who asks"`
	Description string   `json:"description" jsonschema:"what is asked for"`
	Timeout     Duration `json:"timeout,omitempty" jsonschema:"unclaimed this long, it expires (never when absent)"`
	Server
}

// ClaimBody is POST /v1/claim's.
type ClaimBody struct {
	Team      string `json:"team,omitempty" jsonschema:"the claimant's team (the daemon's when absent)"`
	From      string `json:"from,omitempty" jsonschema:"the claimant"`
	RequestID string `json:"request_id" jsonschema:"the request to claim"`
	Server
}

// TeamBody names a caller in a team.
type TeamBody struct {
	Team string `json:"team,omitempty" jsonschema:"the caller's team (the daemon's when absent)"`
	From string `json:"from,omitempty" jsonschema:"the caller"`
	Server
}

// StatusBody is POST /v1/status's: only the fields given change.
type StatusBody struct {
	Team      string    `json:"team,omitempty" jsonschema:"the caller's team"`
	From      string    `json:"from,omitempty" jsonschema:"the agent whose entry on the board changes"`
	Mission   *string   `json:"mission,omitempty"`
	WorkingOn *string   `json:"working_on,omitempty"`
	Done      *[]string `json:"done,omitempty"`
	Next      *[]string `json:"next,omitempty"`
	State     *string   `json:"state,omitempty" enum:"StatusState"`
	Server
}

// CleanBody is POST /v1/teams/{team}/clean's.
type CleanBody struct {
	Yes bool `json:"yes,omitempty" jsonschema:"remove it; without it the answer only says what would go (400)"`
	Server
}

// SpawnBody is POST /v1/spawn's.
type SpawnBody struct {
	Team     string   `json:"team"`
	Agent    string   `json:"agent"`
	Instance string   `json:"instance,omitempty" jsonschema:"a second agent of that name: its session is agent-<team>-<agent>-<instance>"`
	Dir      string   `json:"dir,omitempty" jsonschema:"the working directory, absolute; the tmux server's choice when absent"`
	Kind     string   `json:"kind,omitempty" jsonschema:"the agent CLI (a profile's name), recorded for the agent"`
	Command  []string `json:"command" jsonschema:"the program and its arguments"`
	Env      []string `json:"env,omitempty" jsonschema:"KEY=VALUE pairs for its environment (never on a command line)"`
	Server
}

// AgentBody names one agent, and the caller that acts on it.
type AgentBody struct {
	Team  string `json:"team"`
	Agent string `json:"agent"`
	From  string `json:"from,omitempty" jsonschema:"the caller"`
	Server
}

// ShutdownBody is POST /v1/shutdown's.
type ShutdownBody struct {
	AgentBody
	Reason  string   `json:"reason,omitempty" jsonschema:"why it should stop, shown to the agent"`
	Wait    bool     `json:"wait,omitempty" jsonschema:"wait for the agent's shutdown-response"`
	Timeout Duration `json:"timeout,omitempty" jsonschema:"with wait: how long (1m when absent, at most 10m)"`
}

// KillBody is POST /v1/kill's.
type KillBody struct {
	AgentBody
	Grace Duration `json:"grace,omitempty" jsonschema:"from SIGTERM to SIGKILL (5s when absent, at most 10m)"`
}

// ReapBody is POST /v1/agents/reap's.
type ReapBody struct {
	Team             string   `json:"team,omitempty" jsonschema:"only this team"`
	HeartbeatTimeout Duration `json:"heartbeat_timeout,omitempty" jsonschema:"an agent silent this long is dead"`
	Server
}

// WaitBody is POST /v1/wait's.
type WaitBody struct {
	Team    string    `json:"team,omitempty" jsonschema:"the caller's team"`
	From    string    `json:"from,omitempty" jsonschema:"the caller: whose inbox is waited on"`
	Sender  string    `json:"sender,omitempty" jsonschema:"only a message from this sender"`
	Type    string    `json:"type,omitempty" jsonschema:"only a message of this type"`
	ReplyTo string    `json:"reply_to,omitempty" jsonschema:"only a message answering this one"`
	Timeout *Duration `json:"timeout,omitempty" jsonschema:"how long to wait (30s when absent, at most 10m)"`
	Server
}

// InboxBody names the inbox that holds a copy of a message.
type InboxBody struct {
	Team  string `json:"team" jsonschema:"the team of the inbox that holds the copy"`
	Agent string `json:"agent" jsonschema:"the inbox (agent) that holds the copy"`
	Server
}

// RetryBody is POST /v1/messages/{id}/retry's.
type RetryBody struct {
	InboxBody
	ReadyTimeout Duration `json:"ready_timeout,omitempty"`
}

// TaskBody is POST /v1/tasks'.
type TaskBody struct {
	AgentBody
	Task   string `json:"task" jsonschema:"what the agent is to do"`
	TaskID string `json:"task_id,omitempty" jsonschema:"the caller's name for it, sent as metadata task_id"`
}

// WorkflowStepBody is one step of a workflow.
type WorkflowStepBody struct {
	Name      string   `json:"name"`
	Agent     string   `json:"agent"`
	Prompt    string   `json:"prompt"`
	DependsOn []string `json:"depends_on,omitempty" jsonschema:"the steps that must end first, by name"`
}

// WorkflowBody is POST /v1/workflows'.
type WorkflowBody struct {
	Team    string             `json:"team,omitempty" jsonschema:"the caller's team"`
	From    string             `json:"from,omitempty"`
	Steps   []WorkflowStepBody `json:"steps"`
	Timeout Duration           `json:"timeout,omitempty" jsonschema:"10m when absent, at most 1h"`
	Server
}

// ReadBody is POST /v1/inbox/{team}/{name}/read's: the reader takes its
// messages, and its cursor moves past them.
type ReadBody struct {
	Reader string `json:"reader,omitempty" jsonschema:"whose cursor moves: the inbox's own agent when absent (another reader keeps a cursor of its own)"`
	All    bool   `json:"all,omitempty" jsonschema:"every message kept, read or not; moves no cursor"`
	Server
}

// Queries: the parameters of GET operations.

// ServerQuery is a GET's choice of tmux server.
type ServerQuery struct {
	Socket     string `json:"socket,omitempty" jsonschema:"the tmux server's socket path (as -S)"`
	SocketName string `json:"socket_name,omitempty" jsonschema:"the tmux server's socket name (as -L)"`
}

// TeamQuery names a team.
type TeamQuery struct {
	Team string `json:"team,omitempty" jsonschema:"the team (the daemon's when absent, where one is needed)"`
	ServerQuery
}

// InboxQuery is GET /v1/inbox/{team}/{name}'s: a look, which moves no
// cursor.
type InboxQuery struct {
	Reader string `json:"reader,omitempty" jsonschema:"show what this reader has not read (the inbox's own agent when absent); nothing is marked read"`
	All    bool   `json:"all,omitempty" jsonschema:"every message kept, read or not"`
	Limit  int    `json:"limit,omitempty" jsonschema:"at most this many messages, oldest first (all when absent)"`
	Cursor string `json:"cursor,omitempty" jsonschema:"the next_cursor of the page before: the messages after it"`
	ServerQuery
}

// AgentStatesQuery is GET /v1/agents/status'.
type AgentStatesQuery struct {
	Team             string   `json:"team,omitempty"`
	Agent            string   `json:"agent,omitempty"`
	HeartbeatTimeout Duration `json:"heartbeat_timeout,omitempty" jsonschema:"an agent silent this long is dead"`
	ServerQuery
}

// LogQuery is GET /v1/log's.
type LogQuery struct {
	Team   string `json:"team,omitempty" jsonschema:"only this team's inboxes"`
	Agent  string `json:"agent,omitempty" jsonschema:"only this agent's inbox (with team)"`
	ID     string `json:"id,omitempty" jsonschema:"one message: its history in each inbox (log --id)"`
	Limit  int    `json:"limit,omitempty" jsonschema:"at most this many entries, oldest first (all when absent)"`
	Cursor string `json:"cursor,omitempty" jsonschema:"the next_cursor of the page before: the entries after it"`
	ServerQuery
}

// EventsQuery is GET /v1/events'.
type EventsQuery struct {
	Since string   `json:"since,omitempty" jsonschema:"the id of the last event seen (as Last-Event-ID, which wins): only newer ones come; now: only what comes next; absent: from the oldest kept"`
	Team  string   `json:"team,omitempty" jsonschema:"only events of this team"`
	Agent string   `json:"agent,omitempty" jsonschema:"only events of this agent"`
	Types []string `json:"types,omitempty" jsonschema:"only events of these types, comma-separated; a type ending in .* is every type it begins (message.*)"`
}

// Answers: the documents the daemon answers where --json prints one
// without an exit code.

// Exit is what every answer carries: the CLI's exit code for the same
// outcome, and what went wrong when something did.
type Exit struct {
	Error    string `json:"error,omitempty" jsonschema:"what went wrong, for a person"`
	ExitCode int    `json:"exit_code" jsonschema:"the CLI's exit code for the same outcome (docs/exit-codes.md)"`
}

// Snapshot is a document read at one moment of the event log: a client
// that follows the events from AsOf (Last-Event-ID) misses no change
// after it.
type Snapshot struct {
	AsOf int64 `json:"as_of" jsonschema:"the id of the newest event written before this was read (-1: none yet): follow GET /v1/events from it (Last-Event-ID) and no later change is missed; one already here may come again"`
}

// AgentsAnswer is GET /v1/agents'.
type AgentsAnswer struct {
	Agents
	Snapshot
	Exit
}

// InboxAnswer is GET /v1/inbox/{team}/{name}'s and the read's.
type InboxAnswer struct {
	Inbox
	NextCursor string `json:"next_cursor,omitempty" jsonschema:"more messages follow: ask again with cursor set to this"`
	Snapshot
	Exit
}

// DeliverAnswer is POST /v1/deliver's.
type DeliverAnswer struct {
	Deliver
	Exit
}

// LogAnswer is GET /v1/log's.
type LogAnswer struct {
	Messages   []service.LogEntry `json:"messages" jsonschema:"the messages kept in the inboxes, oldest first, each with its delivery now"`
	NextCursor string             `json:"next_cursor,omitempty" jsonschema:"more entries follow: ask again with cursor set to this"`
	Snapshot
	Exit
}

// HistoryAnswer is GET /v1/log?id='s.
type HistoryAnswer struct {
	History
	Snapshot
	Exit
}

// MessageAnswer is GET /v1/messages/{id}'s: the message, and each copy
// of it with its own state (a broadcast has one per inbox).
type MessageAnswer struct {
	ID string `json:"id"`
	// Message is what was sent: the first copy's envelope, without a
	// delivery (each copy has its own).
	Message *mailbox.Envelope     `json:"message,omitempty" jsonschema:"what was sent, without a delivery: each copy has its own state"`
	Copies  []service.HistoryCopy `json:"copies" jsonschema:"each inbox's copy, with its delivery now and every record of it"`
	Remote  []hosts.Sent          `json:"remote,omitempty" jsonschema:"sent from here to another host: the state that host last reported"`
	Snapshot
	Exit
}

// SendAccepted is POST /v1/send's answer with wait false (202): the
// message is recorded, and is being typed.
type SendAccepted struct {
	ID     string                `json:"id" jsonschema:"the message's id: follow its events, or GET /v1/messages/{id}"`
	From   string                `json:"from"`
	Team   string                `json:"team"`
	Agent  string                `json:"agent"`
	Stored mailbox.DeliveryState `json:"stored" jsonschema:"the state it was recorded in"`
	Exit
}

// SettledAnswer is the answer of handled and retry.
type SettledAnswer struct {
	Settled
	Exit
}

// RequestsAnswer is GET /v1/requests' and the nudge's.
type RequestsAnswer struct {
	Requests
	Exit
}

// StatusAnswer is POST /v1/status'.
type StatusAnswer struct {
	Status
	Exit
}

// HeartbeatAnswer is POST /v1/heartbeat's.
type HeartbeatAnswer struct {
	Heartbeat
	Exit
}

// BoardAnswer is GET /v1/board's.
type BoardAnswer struct {
	Board
	Exit
}

// TeamCleanAnswer is POST /v1/teams/{team}/clean's.
type TeamCleanAnswer struct {
	TeamClean
	Exit
}

// SpawnAnswer is POST /v1/spawn's.
type SpawnAnswer struct {
	Spawn
	Exit
}

// AgentStatesAnswer is GET /v1/agents/status' and the reap's.
type AgentStatesAnswer struct {
	AgentStates
	Exit
}

// WaitAnswer is POST /v1/wait's: the message waited for.
type WaitAnswer struct {
	mailbox.Envelope
	Exit
}

// VersionAnswer is GET /v1/version's.
type VersionAnswer struct {
	Version string `json:"version" jsonschema:"the release, or the module version of a go install build; dev when unknown"`
	Commit  string `json:"commit,omitempty" jsonschema:"the commit it was built from, when known"`
	Date    string `json:"date,omitempty" jsonschema:"when it was built (RFC 3339), when known"`
	PID     int    `json:"pid" jsonschema:"the daemon's process id"`
	Exit
}
