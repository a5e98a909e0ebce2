package cmd

import (
	"context"
	"testing"

	"github.com/agentmsg/agentmsg/delivery"
	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/lock"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/tmux/tmuxtest"
)

// One sender, one spelling: the name given (in any case) is validated like
// every agent name and becomes the lower-case name that send --json, the
// stored message and read --json all show; only the id is upper case.
func TestSenderOneSpelling(t *testing.T) {
	home := t.TempDir()
	srv := tmuxtest.New("agent-alpha-bob")
	run := func(env map[string]string, args ...string) mbResult {
		env["AGENTMSG_HOME"], env["XDG_CONFIG_HOME"] = home, home
		f, out, errOut := testFactory(env)
		f.Dispatcher = func() (*dispatch.Dispatcher, error) {
			return &dispatch.Dispatcher{Tmux: srv, Locks: lock.Dir{Path: t.TempDir()}, Clock: tmuxtest.Clock{},
				Opts: delivery.DefaultOptions(), Concurrency: 1}, nil
		}
		code := Run(context.Background(), f, args)
		return mbResult{code, out.String(), errOut.String()}
	}
	r := run(map[string]string{}, "--from", "ROOT", "--json", "send", "alpha", "bob", "hi")
	sent := decodeJSON[struct{ ID, From string }](t, r.stdout)
	if r.code != ExitOK || sent.From != "root" || sent.ID[:9] != "MSG_ROOT_" {
		t.Fatalf("send --from ROOT: %s", r)
	}
	r = run(map[string]string{}, "--json", "read", sent.ID)
	if got := decodeJSON[mailbox.Envelope](t, r.stdout); got.From != "root" {
		t.Errorf("read --json says from %q, send said %q", got.From, sent.From)
	}

	for _, tt := range []struct {
		env  map[string]string
		args []string
	}{
		{map[string]string{}, []string{"--from", "Bad Name"}},
		{map[string]string{"AGENTMSG_FROM": "Bad Name"}, nil},
		{map[string]string{}, []string{"--from", "j.doe"}},
		{map[string]string{}, []string{"--from", "ana;rm"}},
		{map[string]string{}, []string{"--from", "-ana"}},
	} {
		r := run(tt.env, append(tt.args, "send", "alpha", "bob", "hi")...)
		if r.code != ExitUsage {
			t.Errorf("env %v args %v: want exit 2, got %s", tt.env, tt.args, r)
		}
	}
	if got := srv.Received("agent-alpha-bob"); len(got) != 1 {
		t.Errorf("bob received %q, want only the first message", got)
	}
}

// A name agentmsg finds by itself ($USER) is folded into a valid one, and
// --sender filters take the same spellings as --from.
func TestSenderDerivedAndFilters(t *testing.T) {
	m := newMBHome(t)
	f, _, _ := testFactory(map[string]string{"USER": "J.Doe", "AGENTMSG_HOME": m.home, "XDG_CONFIG_HOME": m.home})
	NewCmdRoot(f) // wires the config the identity reads
	id, err := f.Identity(context.Background())
	if err != nil || id.Name != "j_doe" || id.Sender != "J_DOE" {
		t.Fatalf("identity from $USER J.Doe: %+v, %v", id, err)
	}
	m.send("lead", "ana", mailbox.TypeText, "from lead")
	r := m.want(m.run("ana", "inbox", "--all", "--sender", "LEAD"), ExitOK)
	if r.stdout == "" {
		t.Errorf("--sender LEAD should find lead's message:\n%s", r)
	}
	m.want(m.run("ana", "inbox", "--sender", "Bad Name"), ExitUsage)
	m.want(m.run("ana", "wait", "--sender", "Bad Name"), ExitUsage)
}
