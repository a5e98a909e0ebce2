package app

import (
	"errors"
	"testing"

	"github.com/agentmsg/agentmsg/config"
)

// One resolver, two rules: a command is whoever its flags, environment,
// file, session or $USER say; the daemon's own AGENTMSG_FROM and
// AGENTMSG_TEAM are no caller's, and a caller that names none is "app".
func TestIdentity(t *testing.T) {
	env := map[string]string{"AGENTMSG_HOME": t.TempDir(), "AGENTMSG_FROM": "Ana", "AGENTMSG_TEAM": "alpha", "USER": "J.Doe"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	load := func() Env {
		cfg, err := config.Load(lookup, "")
		if err != nil {
			t.Fatal(err)
		}
		return Env{LookupEnv: lookup, Config: cfg}
	}
	id, err := load().Identity(t.Context(), Ask{})
	if err != nil || id.Name != "ana" || id.Sender != "ANA" || id.Team != "alpha" {
		t.Errorf("command: %+v, %v", id, err)
	}
	id, err = load().Identity(t.Context(), Ask{Daemon: true})
	if err != nil || id.Name != "app" || id.Sender != "APP" || id.Team != "" {
		t.Errorf("daemon, no caller named: %+v, %v", id, err)
	}
	id, err = load().Identity(t.Context(), Ask{From: "Lead", Team: "beta", Daemon: true})
	if err != nil || id.Name != "lead" || id.Team != "beta" {
		t.Errorf("daemon, caller named: %+v, %v", id, err)
	}
	var ie *IdentityError
	if _, err := load().Identity(t.Context(), Ask{From: "no way", Team: "Bad Team", Daemon: true}); !errors.As(err, &ie) || ie.Field != "from" {
		t.Errorf("daemon, bad name and team: %v, want the name's error first", err)
	}
	delete(env, "AGENTMSG_FROM")
	env["AGENTMSG_TEAM"] = "Bad Team"
	if _, err := load().Identity(t.Context(), Ask{}); !errors.As(err, &ie) || ie.Field != "team" {
		t.Errorf("command, bad team: %v", err)
	}
	delete(env, "AGENTMSG_TEAM")
	if id, err := load().Identity(t.Context(), Ask{}); err != nil || id.Name != "j_doe" || id.Source != "$USER" {
		t.Errorf("command from $USER: %+v, %v", id, err)
	}
}
