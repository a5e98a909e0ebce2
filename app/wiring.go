package app

import (
	"sync"

	"github.com/agentmsg/agentmsg/courier"
	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/lifecycle"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/service"
)

// Wiring is the parts one caller's operations run on, over one tmux
// server and its mailbox. Each part is built from the ones before it, in
// this order, and only on first use: what needs only the mailbox never
// starts tmux (nor needs it installed), and a command that fails on its
// arguments builds nothing.
//
// A front end may set a field before Wire fills the others (a test's
// fake dispatcher); the parts after it are then built over it.
type Wiring struct {
	// Mailbox opens the mailbox of the caller's server (Env.Mailbox), once:
	// a failure is kept too.
	Mailbox func() (*mailbox.Store, error)
	// Dispatcher talks to the server: its tmux client, profiles, locks
	// and receipts, with the mailbox's registry when the mailbox opens
	// (without one a send still goes, by the other rules). Kept once
	// built; a failure is tried again on the next call.
	Dispatcher func() (*dispatch.Dispatcher, error)
	// Courier joins the mailbox to a dispatcher: its locks, retention and
	// answer hint. Its Dispatch is unset: an operation types through it
	// over the dispatcher it uses (service.Service.Courier).
	Courier func() (*courier.Courier, error)
	// Lifecycle starts, stops and watches agents, over the dispatcher and
	// the courier. Kept once built; a failure is tried again.
	Lifecycle func() (*lifecycle.Manager, error)
}

// Wire fills w's unset fields with the parts built from env (called on
// first use: a command's configuration is known only once its flags are
// parsed), in dependency order, and returns w.
func Wire(w *Wiring, env func() (Env, error)) *Wiring {
	if w.Mailbox == nil {
		w.Mailbox = sync.OnceValues(func() (*mailbox.Store, error) {
			e, err := env()
			if err != nil {
				return nil, err
			}
			return e.Mailbox()
		})
	}
	if w.Dispatcher == nil {
		w.Dispatcher = kept(func() (*dispatch.Dispatcher, error) {
			e, err := env()
			if err != nil {
				return nil, err
			}
			// The registry says which pane spawn started; without a
			// mailbox a send still goes, by the other rules.
			store, _ := w.Mailbox()
			return e.dispatcher(store)
		})
	}
	if w.Courier == nil {
		w.Courier = kept(func() (*courier.Courier, error) {
			e, err := env()
			if err != nil {
				return nil, err
			}
			store, err := w.Mailbox()
			if err != nil {
				return nil, err
			}
			return e.courier(store), nil
		})
	}
	if w.Lifecycle == nil {
		w.Lifecycle = kept(func() (*lifecycle.Manager, error) {
			d, err := w.Dispatcher()
			if err != nil {
				return nil, err
			}
			e, err := env()
			if err != nil {
				return nil, err
			}
			store, err := w.Mailbox()
			if err != nil {
				return nil, err
			}
			c, err := w.Courier()
			if err != nil {
				return nil, err
			}
			return e.lifecycle(store, d, over(c, d))
		})
	}
	return w
}

// Service is the service of the caller id over w's parts, reporting
// version to clients and reaching other hosts through hosts (nil: none).
// It needs the mailbox; tmux only when an operation does.
func (w *Wiring) Service(id Identity, version string, hosts service.Hosts) (*service.Service, error) {
	store, err := w.Mailbox()
	if err != nil {
		return nil, err
	}
	c, err := w.Courier()
	if err != nil {
		return nil, err
	}
	return &service.Service{
		Team: id.Team, Name: id.Name, Sender: id.Sender,
		Store:      store,
		Dispatcher: w.Dispatcher,
		Courier:    c,
		Lifecycle: func() (service.Lifecycle, error) {
			m, err := w.Lifecycle()
			if err != nil {
				return nil, err
			}
			return m, nil
		},
		Version: version,
		Hosts:   hosts,
	}, nil
}

// over is c typing through d.
func over(c *courier.Courier, d *dispatch.Dispatcher) *courier.Courier {
	cd := *c
	cd.Dispatch = d
	return &cd
}

// kept is build's first success, kept for every later call; a failure is
// returned, and the next call tries again.
func kept[T any](build func() (*T, error)) func() (*T, error) {
	var (
		mu   sync.Mutex
		made *T
	)
	return func() (*T, error) {
		mu.Lock()
		defer mu.Unlock()
		if made != nil {
			return made, nil
		}
		v, err := build()
		if err != nil {
			return nil, err
		}
		made = v
		return made, nil
	}
}
