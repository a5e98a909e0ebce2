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

// LookupSent is what is kept of message id's copies sent from here to
// other hosts: what service.Service.Sent asks of the link, so that
// agentmsg log --id, run in the daemon, finds a message that went to
// another host (its send's hint names that command).
func (h *hostLink) LookupSent(ctx context.Context, id string) ([]hosts.Sent, error) {
	return h.link.LookupSent(ctx, id)
}
