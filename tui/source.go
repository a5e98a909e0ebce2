package tui

import (
	"context"
	"time"

	"github.com/agentmsg/agentmsg/eventlog"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/service"
)

// Source is where top learns what changed: Direct reads tmux, the mailbox
// and the event log itself; the daemon's event stream can be another.
// Run sends updates on out until ctx ends, and returns nil then; an error
// it can go on after is an Update's Err, not the end of Run.
type Source interface {
	Run(ctx context.Context, out chan<- Update) error
}

// Update is what a source learned at one moment.
type Update struct {
	At time.Time
	// Screens, when set, is every agent session on the server now.
	Screens *service.ScreensResult
	// Inboxes were read anew: each replaces what was known of its inbox.
	Inboxes []Inbox
	// Full: Inboxes are every inbox there is; one not among them is gone.
	Full bool
	// Events happened since the last update, oldest first.
	Events []eventlog.Event
	// Err is what failed in getting this update; the source goes on.
	Err error
}

// Inbox is every message kept in one inbox.
type Inbox struct {
	Team, Agent string
	Messages    []mailbox.Envelope
}
