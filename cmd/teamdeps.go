package cmd

import (
	"context"
	"errors"
	"time"

	"github.com/agentmsg/agentmsg/service"
)

// teamDeps are what the request, status and team commands need: the
// service (built once by the Factory), who the caller is, and where to
// print.
type teamDeps struct {
	IO       *IOStreams
	Service  func(ctx context.Context) (*service.Service, error)
	Identity func(ctx context.Context) (Identity, error)
	JSON     func() bool
	Now      func() time.Time
}

func newTeamDeps(f *Factory) teamDeps {
	return teamDeps{
		IO:       f.IO,
		Service:  f.Service,
		Identity: func(ctx context.Context) (Identity, error) { return f.Identity(ctx) },
		JSON:     func() bool { return f.JSON },
		Now:      time.Now,
	}
}

// jsonOut is a Factory that writeJSON can print through.
func (d teamDeps) jsonOut() *Factory { return &Factory{IO: d.IO} }

// serviceTeam is the service and the team an operation names: team, if
// given as an argument, else the caller's own when --team named it (so
// that the service checks it exists, as it does a TEAM argument), else ""
// (the caller's own, from the environment or its session).
func (d teamDeps) serviceTeam(ctx context.Context, team string) (*service.Service, string, error) {
	svc, err := d.Service(ctx)
	if err != nil || team != "" {
		return svc, team, err
	}
	id, err := d.Identity(ctx)
	if err != nil {
		return nil, "", err
	}
	if id.TeamNamed {
		team = id.Team
	}
	return svc, team, nil
}

// teamError words the service's team errors for the command line.
func teamError(err error) error {
	if errors.Is(err, service.ErrTeamNeeded) {
		_, err = needTeam(Identity{})
	}
	return err
}
