// Package target turns the names people and agents type (a team and an agent
// name) into the exact tmux session that agent runs in, and back.
//
// It is pure: strings in, a validated Target or a precise error out. The
// naming scheme is the seeds':
//
//	agent-<team>-<name>             a core agent      (name: ^[a-z][a-z0-9_]*$)
//	agent-<team>-<name>-<instance>  a spawned copy    (instance: ^[a-z0-9]+$)
//	agent-ralph-<id>                a team-less agent (addressed as ralph-<id>)
//
// Because names never contain '-', every session name maps to at most one
// target, and a target to exactly one session: "alpha ana" is
// agent-alpha-ana and never agent-alpha-ana-2.
package target

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// SessionPrefix starts every agent session name.
const SessionPrefix = "agent-"

// RalphTeam is the reserved pseudo-team of team-less agents.
const RalphTeam = "ralph"

// maxPart keeps session names short enough to type and to fit tmux's limits.
const maxPart = 64

var (
	coreRe     = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	instanceRe = regexp.MustCompile(`^[a-z0-9]+$`)
	ralphIDRe  = regexp.MustCompile(`^[a-z0-9][a-z0-9_]*$`)
)

// ErrInvalid is wrapped by every validation error, for errors.Is.
var ErrInvalid = errors.New("invalid name")

// InvalidError says which value broke which rule.
type InvalidError struct {
	What  string // "team", "agent name", "instance", "ralph id"
	Value string
	Rule  string
}

func (e *InvalidError) Error() string {
	return fmt.Sprintf("invalid %s %q: %s", e.What, e.Value, e.Rule)
}

func (e *InvalidError) Unwrap() error { return ErrInvalid }

// Target is one addressable agent.
type Target struct {
	Team     string // empty for a ralph agent
	Name     string // core name; "ralph" for a ralph agent
	Instance string // spawned instance, or the ralph id
	Session  string // the exact tmux session name
}

// IsRalph reports whether t is a team-less ralph agent.
func (t Target) IsRalph() bool { return t.Team == "" }

// Agent is the agent's name as a user types it: "ana", "ana-2", "ralph-7".
func (t Target) Agent() string {
	if t.Instance == "" {
		return t.Name
	}
	return t.Name + "-" + t.Instance
}

// String is "team/agent", or "ralph-<id>" for a team-less agent.
func (t Target) String() string {
	if t.IsRalph() {
		return t.Agent()
	}
	return t.Team + "/" + t.Agent()
}

// ValidateTeam checks a team name against the core rule.
func ValidateTeam(team string) error {
	if team == RalphTeam {
		return &InvalidError{"team", team, `"ralph" is reserved for team-less agents; address them as: agentmsg send ANY_TEAM ralph-<id>`}
	}
	return checkPart("team", team, coreRe, "must match ^[a-z][a-z0-9_]*$ (lower-case letter first, then lower-case letters, digits or _)")
}

// New resolves a team and an agent name ("ana", "ana-2" or "ralph-7") to
// the one session that agent runs in. A ralph name ignores the team.
func New(team, name string) (Target, error) {
	if id, ok := strings.CutPrefix(name, RalphTeam+"-"); ok {
		if err := checkPart("ralph id", id, ralphIDRe, "must match ^[a-z0-9][a-z0-9_]*$"); err != nil {
			return Target{}, err
		}
		return Target{Name: RalphTeam, Instance: id, Session: SessionPrefix + RalphTeam + "-" + id}, nil
	}
	if err := ValidateTeam(team); err != nil {
		return Target{}, err
	}
	core, instance, spawned := strings.Cut(name, "-")
	if err := checkPart("agent name", core, coreRe, "must match ^[a-z][a-z0-9_]*$, optionally followed by -<instance> (e.g. ana or ana-2)"); err != nil {
		err.(*InvalidError).Value = name // report what the user typed, not our split of it
		return Target{}, err
	}
	t := Target{Team: team, Name: core, Session: SessionPrefix + team + "-" + core}
	if spawned {
		if err := checkPart("instance", instance, instanceRe, "the part after the first - must match ^[a-z0-9]+$ (e.g. ana-2 or ana-b7)"); err != nil {
			err.(*InvalidError).Value = name
			return Target{}, err
		}
		t.Instance = instance
		t.Session += "-" + instance
	}
	return t, nil
}

// ParseName is the one normalisation and validation of a name that says
// who a message is from or whose inbox it is: --from, AGENTMSG_FROM, the
// config file's from, --sender filters, and the MCP server's from. The
// canonical spelling is lower case, the way agents are addressed and
// inboxes named: "ana", "ana-2", "ralph-7", "demo_lead". The name is
// lower-cased (so "ROOT" is "root") and must then be an agent name: a core
// name (^[a-z][a-z0-9_]*$), optionally followed by -<instance>
// (^[a-z0-9]+$). Anything else ("Bad Name", "j.doe") is an InvalidError.
// The upper-case form (message.Sender) appears only inside message ids.
func ParseName(name string) (string, error) {
	lower := strings.ToLower(name)
	core, instance, spawned := strings.Cut(lower, "-")
	rule := "must be an agent name: a letter, then letters, digits or _, optionally followed by -<letters or digits> (e.g. ana, ana-2, lead)"
	if err := checkPart("sender name", core, coreRe, rule); err != nil {
		err.(*InvalidError).Value = name
		return "", err
	}
	if spawned {
		if err := checkPart("sender name", instance, instanceRe, rule); err != nil {
			err.(*InvalidError).Value = name
			return "", err
		}
	}
	if len(lower) > maxPart {
		return "", &InvalidError{"sender name", name, fmt.Sprintf("is %d characters long; at most %d are allowed", len(lower), maxPart)}
	}
	return lower, nil
}

// FromSession parses a session name back into a Target. ok is false for any
// session that is not an agent session under the naming scheme.
func FromSession(session string) (t Target, ok bool) {
	rest, found := strings.CutPrefix(session, SessionPrefix)
	if !found {
		return Target{}, false
	}
	parts := strings.Split(rest, "-")
	switch {
	case len(parts) == 2 && parts[0] == RalphTeam:
		t, err := New("", RalphTeam+"-"+parts[1])
		return t, err == nil
	case len(parts) == 2:
		t, err := New(parts[0], parts[1])
		return t, err == nil
	case len(parts) == 3:
		t, err := New(parts[0], parts[1]+"-"+parts[2])
		return t, err == nil
	}
	return Target{}, false
}

// NotAgentSession says why a session named agent-... is no agent's, as
// FromSession reads it; nil when it is one, or when its name does not
// start with agent- (no agent's, by design).
func NotAgentSession(session string) error {
	rest, found := strings.CutPrefix(session, SessionPrefix)
	if !found {
		return nil
	}
	if _, ok := FromSession(session); ok {
		return nil
	}
	parts := strings.Split(rest, "-")
	var err error
	switch {
	case len(parts) == 2 && parts[0] == RalphTeam:
		_, err = New("", RalphTeam+"-"+parts[1])
	case len(parts) == 2:
		_, err = New(parts[0], parts[1])
	case len(parts) == 3:
		_, err = New(parts[0], parts[1]+"-"+parts[2])
	default:
		return fmt.Errorf("not %sTEAM-NAME (or %sTEAM-NAME-N, %s%s-ID)", SessionPrefix, SessionPrefix, SessionPrefix, RalphTeam)
	}
	return err
}

func checkPart(what, value string, re *regexp.Regexp, rule string) error {
	switch {
	case value == "":
		return &InvalidError{what, value, "must not be empty"}
	case len(value) > maxPart:
		return &InvalidError{what, value, fmt.Sprintf("is %d characters long; at most %d are allowed", len(value), maxPart)}
	case !re.MatchString(value):
		return &InvalidError{what, value, rule}
	}
	return nil
}
