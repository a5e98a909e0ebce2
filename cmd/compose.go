package cmd

import (
	"context"

	"github.com/agentmsg/agentmsg/courier"
	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/mailbox"
)

// composer is what send and broadcast share: the flags that shape a
// message, and where the caller, the dispatcher and the courier come from.
type composer struct {
	Dispatcher func() (*dispatch.Dispatcher, error)
	Courier    func(*dispatch.Dispatcher) (*courier.Courier, error)
	Identity   func(ctx context.Context) (Identity, error)
	Factory    *Factory

	Mode     courier.Mode
	Envelope envelopeFlags
	Agent    agentFlags
	// single: the message goes to one agent (send), not to a team.
	single bool
}

func newComposer(f *Factory) composer {
	return composer{Dispatcher: f.Dispatcher, Courier: f.courier, Identity: f.Identity, Factory: f, Mode: courier.Mode{Queue: true}}
}

// composed is a message ready to go: cleaned, with its id, in an envelope
// from the caller, and what carries it.
type composed struct {
	id  Identity
	d   *dispatch.Dispatcher
	c   *courier.Courier
	env mailbox.Envelope
}

// compose checks the flags, finds the caller and the server, and wraps text.
func (cm *composer) compose(ctx context.Context, text string) (composed, error) {
	var out composed
	env, err := cm.Envelope.build()
	if err != nil {
		return out, err
	}
	if out.id, err = cm.Identity(ctx); err != nil {
		return out, err
	}
	// A message only recorded in an inbox needs no tmux (nor tmux
	// installed); a broadcast still lists the server's agents.
	if !cm.Mode.MailboxOnly || !cm.single {
		if out.d, err = cm.Dispatcher(); err != nil {
			return out, err
		}
	}
	if cm.Mode.Call, err = cm.Agent.call(cm.Factory); err != nil {
		return out, err
	}
	msg, err := dispatch.NewMessage(out.id.Sender, text, nil)
	if err != nil {
		return out, err
	}
	env.ID, env.From, env.Content = msg.ID, out.id.Name, msg.Text
	out.env = env
	out.c, err = cm.Courier(out.d)
	return out, err
}
