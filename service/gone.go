package service

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentmsg/agentmsg/tmux"
)

// ErrServerGone: the tmux server the caller works with no longer runs.
var ErrServerGone = errors.New("the tmux server is gone")

// ServerGone says ErrServerGone when the caller's tmux server no longer
// runs: a watch over it (deliver --watch) would find nothing for ever.
// nil while it runs, and when that cannot be told (tmux missing, a call
// that failed otherwise): a watch goes on then.
func (s *Service) ServerGone(ctx context.Context) error {
	d, err := s.Dispatcher()
	if err != nil || d == nil || d.Tmux == nil {
		if errors.Is(err, tmux.ErrNoServer) {
			return fmt.Errorf("%w: %w", ErrServerGone, err)
		}
		return nil
	}
	if _, err := d.Tmux.Info(ctx); errors.Is(err, tmux.ErrNoServer) {
		return fmt.Errorf("%w: no server runs on %s any more", ErrServerGone, d.Tmux.Server().Socket)
	}
	return nil
}
