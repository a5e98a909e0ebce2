package app

import (
	"errors"
	"testing"

	"github.com/agentmsg/agentmsg/config"
	"github.com/agentmsg/agentmsg/delivery"
	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/service"
	"github.com/agentmsg/agentmsg/target"
)

// A part's first success is kept; a failure is tried again.
func TestKept(t *testing.T) {
	builds := 0
	d := &dispatch.Dispatcher{}
	errNone := errors.New("no tmux yet")
	get := kept(func() (*dispatch.Dispatcher, error) {
		if builds++; builds == 1 {
			return nil, errNone
		}
		return d, nil
	})
	if _, err := get(); !errors.Is(err, errNone) {
		t.Fatalf("first build: %v", err)
	}
	for range 2 {
		if got, err := get(); got != d || err != nil {
			t.Fatalf("get() = %p, %v; want %p", got, err, d)
		}
	}
	if builds != 2 {
		t.Errorf("%d builds; want 2 (a failure is tried again, a success kept)", builds)
	}
}

// The service the wiring builds has its courier (the answer hint, no
// dispatcher of its own), and a message only recorded needs no tmux: the
// dispatcher a test set is never asked for.
func TestWiringService(t *testing.T) {
	env := map[string]string{"AGENTMSG_HOME": t.TempDir()}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	cfg, err := config.Load(lookup, "")
	if err != nil {
		t.Fatal(err)
	}
	w := Wire(&Wiring{Dispatcher: func() (*dispatch.Dispatcher, error) {
		t.Error("the dispatcher was built for a message only recorded")
		return nil, errors.New("no tmux")
	}}, func() (Env, error) { return Env{LookupEnv: lookup, Config: cfg, Command: "test"}, nil })
	svc, err := w.Service(Identity{Team: "alpha", Name: "lead", Sender: "LEAD"}, "v", nil)
	if err != nil {
		t.Fatal(err)
	}
	if svc.Courier == nil || svc.Courier.Dispatch != nil || svc.Courier.Hint == nil || svc.Courier.Store != svc.Store {
		t.Fatalf("courier %+v", svc.Courier)
	}
	to, err := target.New("alpha", "ana")
	if err != nil {
		t.Fatal(err)
	}
	res, err := svc.Send(t.Context(), service.SendRequest{To: to, Draft: service.Draft{Text: "hi"}, Delivery: service.Delivery{MailboxOnly: true}})
	if err != nil || res.Verdict != delivery.Recorded {
		t.Fatalf("send: %+v, %v", res, err)
	}
	batch, err := svc.Store.Read("alpha", "ana")
	if err != nil || len(batch.Envelopes) != 1 || batch.Envelopes[0].ID != res.ID {
		t.Fatalf("ana's inbox: %+v, %v", batch, err)
	}
}
