package tui

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentmsg/agentmsg/courier"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/service"
)

// Actions are what a person can do from top: each is an operation of
// package service, as the CLI's are.
type Actions interface {
	Deliver(ctx context.Context, team string) (service.DeliverResult, error)
	Retry(ctx context.Context, ref service.MessageRef) (service.RetryResult, error)
	Handle(ctx context.Context, ref service.MessageRef) (mailbox.Delivery, error)
	OpenPane(ctx context.Context, team, agent string) (service.OpenResult, error)
	History(ctx context.Context, ref service.MessageRef) ([]service.HistoryCopy, error)
}

// passWait bounds each agent's wait in a pass top starts, as deliver's
// own: a pass looks, the next comes soon.
const passWait = time.Second

// serviceActions are the Actions of a *service.Service.
type serviceActions struct{ svc *service.Service }

func (a serviceActions) Deliver(ctx context.Context, team string) (service.DeliverResult, error) {
	return a.svc.Deliver(ctx, service.DeliverRequest{Team: team, ReadyTimeout: passWait})
}

func (a serviceActions) Retry(ctx context.Context, ref service.MessageRef) (service.RetryResult, error) {
	return a.svc.Retry(ctx, ref, service.DeliverRequest{ReadyTimeout: passWait})
}

func (a serviceActions) Handle(ctx context.Context, ref service.MessageRef) (mailbox.Delivery, error) {
	return a.svc.Handle(ctx, ref)
}

func (a serviceActions) OpenPane(ctx context.Context, team, agent string) (service.OpenResult, error) {
	return a.svc.OpenPane(ctx, team, agent)
}

func (a serviceActions) History(ctx context.Context, ref service.MessageRef) ([]service.HistoryCopy, error) {
	return a.svc.History(ctx, service.LogRequest{Team: ref.Team, Agent: ref.Agent}, ref.ID)
}

// The words for what an action did, one line each.

func deliverWords(team string, res service.DeliverResult, err error) string {
	var ahead *courier.PassAheadError
	switch {
	case errors.As(err, &ahead):
		return "deliver " + team + ": another pass is at work; it types what waits now"
	case err != nil && len(res.Typed) == 0:
		return "deliver " + team + " failed: " + err.Error()
	case len(res.Typed) == 0:
		return "deliver " + team + ": nothing to deliver"
	}
	s := fmt.Sprintf("deliver %s: %d of %d delivered", team, res.Delivered(), len(res.Typed))
	for _, t := range res.Typed {
		if !t.OK() {
			s += fmt.Sprintf("; %s %s", t.ID, t.State)
			if t.Reason != "" {
				s += " (" + t.Reason + ")"
			}
			break
		}
	}
	if err != nil {
		s += "; " + err.Error()
	}
	return s
}

func retryWords(ref service.MessageRef, res service.RetryResult, err error) string {
	if err != nil {
		return "retry " + string(ref.ID) + " failed: " + err.Error()
	}
	for _, t := range res.Pass.Typed {
		if t.ID == ref.ID {
			return fmt.Sprintf("retry %s: %s", ref.ID, t.State)
		}
	}
	return "retry " + string(ref.ID) + ": pending again; the next deliver pass types it"
}

func handleWords(ref service.MessageRef, err error) string {
	if err != nil {
		return "mark " + string(ref.ID) + " handled failed: " + err.Error()
	}
	return string(ref.ID) + " is marked handled: it will not be typed"
}

func openWords(k inboxKey, res service.OpenResult, err error) string {
	switch {
	case err != nil:
		return "open " + k.String() + " failed: " + err.Error()
	case res.Switched:
		return "switched to " + k.String() + " (" + res.Pane + ")"
	case res.SwitchErr != nil:
		return "could not switch (" + res.SwitchErr.Error() + "); watch it with: " + res.Command
	}
	return "watch it with: " + res.Command
}
