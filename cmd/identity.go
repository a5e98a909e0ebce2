package cmd

import (
	"context"
	"fmt"
	"os/user"
	"strings"
	"sync"

	"github.com/agentmsg/agentmsg/config"
	"github.com/agentmsg/agentmsg/message"
	"github.com/agentmsg/agentmsg/target"
	"github.com/agentmsg/agentmsg/tmux"
)

// Identity is who the caller is: the name on its messages and, for the
// mailbox, its team and inbox name.
type Identity struct {
	Team   string // "" when neither --team, $AGENTMSG_TEAM nor a session says
	Name   string // the canonical name (target.ParseName): "ana", "ana-2", "dana"; every "from" shows it
	Sender string // upper case, only for ids: MSG_<SENDER>_<hex>
	Source string // where Name came from, for messages
	// TeamSource is where Team came from ("" when there is none).
	TeamSource string
	// TeamNamed: Team was given on this command line (--team), so a
	// mistyped one is refused like a TEAM argument (knownTeam). A team from
	// the environment, the config file or the session is the caller's own,
	// which may have nothing stored yet.
	TeamNamed bool
}

// NeedTeam is the identity's team, or a usage error saying how to give one.
func (id Identity) NeedTeam() (string, error) {
	if id.Team == "" {
		return "", usagef("which team are you on? give --team TEAM or set AGENTMSG_TEAM (inside an agent-<team>-<name> session it is found by itself)")
	}
	return id.Team, nil
}

// onceIdentity resolves the identity at most once per process: --from /
// AGENTMSG_FROM / config file, else the agent session the caller runs in,
// else $USER; the team likewise from --team / AGENTMSG_TEAM, else the
// session. A name given (flag, environment, file) must be a valid agent
// name in any case (target.ParseName), or it is a usage error; one found
// in $USER or the system is folded into a valid one first (J.Doe: j_doe).
func onceIdentity(f *Factory) func(ctx context.Context) (Identity, error) {
	var (
		once sync.Once
		id   Identity
		err  error
	)
	return func(ctx context.Context) (Identity, error) {
		once.Do(func() { id, err = resolveIdentity(ctx, f) })
		return id, err
	}
}

func resolveIdentity(ctx context.Context, f *Factory) (Identity, error) {
	cfg, err := f.Config()
	if err != nil {
		return Identity{}, err
	}
	id := Identity{Name: cfg.Settings.From, Source: string(cfg.Source("from")), Team: cfg.Settings.Team,
		TeamNamed: cfg.Settings.Team != "" && cfg.Source("team") == config.FlagSource("team")}
	if id.Team != "" {
		id.TeamSource = string(cfg.Source("team"))
	}
	if id.Name == "" || id.Team == "" {
		session, err := tmux.CallerSession(ctx, cfg.Settings.Tmux, f.LookupEnv)
		if err != nil {
			f.Log.Debug("could not read the caller's tmux session", "err", err)
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
			id.Name, _ = f.LookupEnv(v)
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
	if id.Team != "" {
		if err := target.ValidateTeam(id.Team); err != nil {
			return Identity{}, err
		}
	}
	if id.Name == "" {
		return Identity{}, usageError{fmt.Errorf("%w: pass --from NAME or set AGENTMSG_FROM", message.ErrEmptySender)}
	}
	name, err := target.ParseName(id.Name)
	if err != nil {
		return Identity{}, usageError{fmt.Errorf("%w (from %s); pass --from NAME or set AGENTMSG_FROM", err, id.Source)}
	}
	id.Name = name
	if id.Sender, err = message.Sender(name); err != nil {
		return Identity{}, usageError{fmt.Errorf("%w (from %s)", err, id.Source)}
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
