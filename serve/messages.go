package serve

import (
	"context"

	"github.com/agentmsg/agentmsg/hosts"
)

// lookupSent is what is kept of message id's copies sent from here to
// other hosts (none without a link).
func (d *Daemon) lookupSent(ctx context.Context, id string) ([]hosts.Sent, error) {
	if d.links == nil {
		return nil, nil
	}
	return d.links.LookupSent(ctx, id)
}
