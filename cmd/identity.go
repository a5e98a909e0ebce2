package cmd

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/agentmsg/agentmsg/app"
	"github.com/agentmsg/agentmsg/message"
)

// Identity is who the caller is (app.Identity: found in one way for the
// CLI and the daemon).
type Identity = app.Identity

// needTeam is the identity's team, or a usage error saying how to give one.
func needTeam(id Identity) (string, error) {
	if id.Team == "" {
		return "", usagef("which team are you on? give --team TEAM or set AGENTMSG_TEAM (inside an agent-<team>-<name> session it is found by itself)")
	}
	return id.Team, nil
}

// onceIdentity resolves the identity at most once per process
// (app.Env.Identity): --from / AGENTMSG_FROM / config file, else the agent
// session the caller runs in, else $USER; the team likewise.
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
	env, err := f.Env()
	if err != nil {
		return Identity{}, err
	}
	id, err := env.Identity(ctx, app.Ask{})
	return id, identityError(err)
}

// identityError words an identity that is not valid for the command line:
// an invalid team as it is; a name that is none, or no valid one, is a
// usage error saying how to give one.
func identityError(err error) error {
	var ie *app.IdentityError
	if !errors.As(err, &ie) {
		return err
	}
	switch {
	case ie.Field == "team":
		return ie.Err
	case ie.Field == "from" && errors.Is(ie.Err, message.ErrEmptySender):
		return usageError{fmt.Errorf("%w: pass --from NAME or set AGENTMSG_FROM", message.ErrEmptySender)}
	case ie.Field == "from":
		return usageError{fmt.Errorf("%w (from %s); pass --from NAME or set AGENTMSG_FROM", ie.Err, ie.Source)}
	}
	return usageError{fmt.Errorf("%w (from %s)", ie.Err, ie.Source)}
}
