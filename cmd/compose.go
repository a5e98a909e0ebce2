package cmd

import (
	"context"

	"github.com/agentmsg/agentmsg/service"
)

// composer is what send and broadcast share: the flags that shape a
// message and how far it goes, and where the service comes from.
type composer struct {
	Service func(ctx context.Context) (*service.Service, error)
	Factory *Factory // --agent's profiles come from its config

	Delivery service.Delivery
	Envelope envelopeFlags
	Agent    agentFlags
}

func newComposer(f *Factory) composer {
	return composer{Service: f.Service, Factory: f, Delivery: service.Delivery{Queue: true}}
}

// draft checks the flags and wraps text; call fills in the flags' per-call
// choices of the delivery.
func (cm *composer) draft(text string) (service.Draft, error) {
	meta, err := cm.Envelope.metadata()
	if err != nil {
		return service.Draft{}, err
	}
	if cm.Delivery.Call, err = cm.Agent.call(cm.Factory); err != nil {
		return service.Draft{}, err
	}
	return service.Draft{Text: text, Type: cm.Envelope.typ, Meta: meta}, nil
}

// prepare is the start of every run that composes a message: the text
// (from the arguments, or stdin), the draft, and the service to send it.
func (cm *composer) prepare(ctx context.Context, io *IOStreams, message string, fromStdin bool) (service.Draft, *service.Service, error) {
	text, err := messageText(ctx, io, message, fromStdin)
	if err != nil {
		return service.Draft{}, nil, err
	}
	draft, err := cm.draft(text)
	if err != nil {
		return service.Draft{}, nil, err
	}
	svc, err := cm.Service(ctx)
	return draft, svc, err
}
