package app

import (
	"context"
	"os/user"
	"strings"

	"github.com/agentmsg/agentmsg/config"
	"github.com/agentmsg/agentmsg/message"
	"github.com/agentmsg/agentmsg/target"
	"github.com/agentmsg/agentmsg/tmux"
)

// Identity is who the caller is: the name on its messages and, for the
// mailbox, its team and inbox name.
type Identity struct {
	Team   string // "" when nothing says
	Name   string // the canonical name (target.ParseName): "ana", "ana-2", "dana"; every "from" shows it
	Sender string // upper case, only for ids: MSG_<SENDER>_<hex>
	Source string // where Name came from, for messages
	// TeamSource is where Team came from ("" when there is none).
	TeamSource string
	// TeamNamed: Team was given on this command line (--team), so a
	// mistyped one is refused like a TEAM argument. A team from the
	// environment, the config file or the session is the caller's own,
	// which may have nothing stored yet.
	TeamNamed bool
}

// Ask is what a caller says of itself beyond the configuration.
type Ask struct {
	// From and Team are named by the caller itself (a request to the
	// daemon); "" names none.
	From, Team string
	// Daemon: the process serves callers other than the one that started
	// it. The settings its own environment gave (AGENTMSG_FROM,
	// AGENTMSG_TEAM) are the identity of the pane it was started in (an
	// agent's, when a command of its started it), which is no caller's; a
	// caller that names none is the config file's, else "app". Neither a
	// tmux session nor $USER is asked.
	Daemon bool
}

// IdentityError is a name or team, given or found, that is not a valid
// one. The front ends word it.
type IdentityError struct {
	// Field is "team", "from" (the name, or none at all: Err is
	// message.ErrEmptySender) or "sender" (the name makes no id).
	Field string
	// Source is where the value came from ("" when there is none).
	Source string
	Err    error
}

func (e *IdentityError) Error() string { return e.Field + ": " + e.Err.Error() }
func (e *IdentityError) Unwrap() error { return e.Err }

// Identity is the caller's, found in one way for every front end. For a
// command: --from / AGENTMSG_FROM / the config file, else the agent
// session the caller runs in, else $USER; the team likewise from --team /
// AGENTMSG_TEAM / the config file, else the session. A name given (flag,
// environment, file, request) must be a valid agent name (target.ParseName);
// one found in $USER or the system is folded into a valid one first
// (J.Doe: j_doe). For the daemon (ask.Daemon), see Ask.
func (e Env) Identity(ctx context.Context, ask Ask) (Identity, error) {
	cfg := e.Config
	if ask.Daemon {
		return daemonIdentity(cfg, ask)
	}
	id := Identity{Name: cfg.Settings.From, Source: string(cfg.Source("from")), Team: cfg.Settings.Team,
		TeamNamed: cfg.Settings.Team != "" && cfg.Source("team") == config.FlagSource("team")}
	if id.Team != "" {
		id.TeamSource = string(cfg.Source("team"))
	}
	if id.Name == "" || id.Team == "" {
		session, err := tmux.CallerSession(ctx, cfg.Settings.Tmux, e.LookupEnv)
		if err != nil && e.Log != nil {
			e.Log.Debug("could not read the caller's tmux session", "err", err)
		}
		if t, ok := target.FromSession(session); ok {
			if id.Name == "" {
				id.Name, id.Source = t.Agent(), "tmux session "+session
			}
			if id.Team == "" && !t.IsRalph() {
				id.Team, id.TeamSource = t.Team, "tmux session "+session
			}
		}
	}
	given := id.Name != "" // by flag, environment or file, or the session
	for _, v := range []string{"USER", "LOGNAME"} {
		if id.Name == "" {
			id.Name, _ = e.LookupEnv(v)
			id.Source = "$" + v
		}
	}
	if id.Name == "" {
		if u, err := user.Current(); err == nil {
			id.Name, id.Source = u.Username, "the system's user name"
		}
	}
	if !given && id.Name != "" {
		id.Name = foldName(id.Name)
	}
	if err := checkTeam(id); err != nil {
		return Identity{}, err
	}
	if id.Name == "" {
		return Identity{}, &IdentityError{Field: "from", Err: message.ErrEmptySender}
	}
	return named(id)
}

// daemonIdentity is Identity for a caller of the daemon (Ask.Daemon).
func daemonIdentity(cfg *config.Loaded, ask Ask) (Identity, error) {
	id := Identity{Name: ask.From, Source: "request", Team: ask.Team, TeamSource: "request"}
	if id.Name == "" && !fromEnvironment(cfg, "from") {
		id.Name, id.Source = cfg.Settings.From, string(cfg.Source("from"))
	}
	if id.Name == "" {
		id.Name, id.Source = "app", "the daemon's default"
	}
	if id.Team == "" && !fromEnvironment(cfg, "team") {
		id.Team, id.TeamSource = cfg.Settings.Team, string(cfg.Source("team"))
	}
	if id.Team == "" {
		id.TeamSource = ""
	}
	id, err := named(id)
	if err != nil {
		return Identity{}, err
	}
	if err := checkTeam(id); err != nil {
		return Identity{}, err
	}
	return id, nil
}

// fromEnvironment reports whether key's setting came from the process's
// own environment (AGENTMSG_FROM, AGENTMSG_TEAM).
func fromEnvironment(cfg *config.Loaded, key string) bool {
	return strings.HasPrefix(string(cfg.Source(key)), "env ")
}

// checkTeam refuses a team that is no valid team name.
func checkTeam(id Identity) error {
	if id.Team == "" {
		return nil
	}
	if err := target.ValidateTeam(id.Team); err != nil {
		return &IdentityError{Field: "team", Source: id.TeamSource, Err: err}
	}
	return nil
}

// named is id with its name made canonical and its sender set.
func named(id Identity) (Identity, error) {
	name, err := target.ParseName(id.Name)
	if err != nil {
		return Identity{}, &IdentityError{Field: "from", Source: id.Source, Err: err}
	}
	id.Name = name
	if id.Sender, err = message.Sender(name); err != nil {
		return Identity{}, &IdentityError{Field: "sender", Source: id.Source, Err: err}
	}
	return id, nil
}

// foldName turns a user name agentmsg found by itself ($USER, the system's)
// into a valid agent name: lower case, letters, digits and _ with at most
// one "-suffix" ("J.Doe" -> j_doe). Names given by the caller are never
// folded: they are refused when invalid.
func foldName(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9' && b.Len() > 0:
			b.WriteRune(r)
		case r == '-' && !dash && b.Len() > 0:
			dash = true
			b.WriteRune(r)
		case b.Len() > 0 && !dash: // after the dash only letters and digits
			b.WriteRune('_')
		}
	}
	s := strings.TrimRight(b.String(), "-")
	if s == "" {
		return "anonymous"
	}
	return s
}
