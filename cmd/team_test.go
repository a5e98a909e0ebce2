package cmd

import (
	"context"
	"strings"
	"testing"

	"github.com/agentmsg/agentmsg/delivery"
	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/lock"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/tmux/tmuxtest"
)

// A team that has never existed (nothing stored, no agent session) is
// exit 3 naming the teams that do, in every command that reads a team;
// one that exists only as sessions on the server is no error.
func TestUnknownTeamIsNotFound(t *testing.T) {
	m := newMBHome(t)
	m.send("lead", "ana", mailbox.TypeText, "hi") // team alpha has an inbox
	srv := tmuxtest.New("agent-beta-bob")         // team beta only a session
	run := func(args ...string) mbResult {
		f, out, errOut := testFactory(map[string]string{"AGENTMSG_HOME": m.home, "AGENTMSG_TEAM": "alpha", "AGENTMSG_FROM": "ana"})
		f.Dispatcher = func() (*dispatch.Dispatcher, error) {
			return &dispatch.Dispatcher{Tmux: srv, Locks: lock.Dir{Path: t.TempDir()}, Clock: tmuxtest.Clock{},
				Opts: delivery.DefaultOptions(), Concurrency: 1}, nil
		}
		code := Run(context.Background(), f, args)
		return mbResult{code, out.String(), errOut.String()}
	}
	for _, args := range [][]string{
		{"inbox", "alpah", "ana"}, {"log", "alpah"}, {"log", "alpah", "ana"}, {"--team", "alpah", "requests"},
		{"requests", "alpah"}, {"board", "alpah"}, {"--team", "alpah", "inbox"}, {"claim", "alpah", "REQ_00000000"},
		{"request", "alpah", "review PR 12"}, {"deliver", "alpah"}, {"list", "alpah"}, {"--json", "log", "alpah"},
	} {
		r := run(args...)
		if r.code != ExitNotFound || !strings.Contains(r.stderr, `"alpah"`) || !strings.Contains(r.stderr, "alpha, beta") {
			t.Errorf("%v: want exit 3 naming alpha and beta, got %s", args, r)
		}
	}
	for _, args := range [][]string{{"inbox", "alpha", "ana"}, {"log", "alpha"}, {"requests", "beta"}, {"board", "beta"}, {"inbox", "beta", "bob"}, {"list", "beta"}} {
		if r := run(args...); r.code != ExitOK {
			t.Errorf("%v: want exit 0, got %s", args, r)
		}
	}
}

// status alone shows the caller's own entry (it printed status's help).
func TestStatusAloneShowsTheCallersEntry(t *testing.T) {
	env := map[string]string{"AGENTMSG_HOME": t.TempDir(), "AGENTMSG_FROM": "ana", "AGENTMSG_TEAM": "alpha", "XDG_CONFIG_HOME": t.TempDir()}
	f, out, errOut := testFactory(env)
	if code := Run(context.Background(), f, []string{"status"}); code != ExitOK {
		t.Fatalf("status with no entry: exit %d\n%s", code, errOut)
	}
	if strings.Contains(out.String(), "Available Commands") || !strings.Contains(errOut.String(), "ana has no entry on team alpha's board yet") {
		t.Errorf("status with no entry: stdout %q stderr %q", out, errOut)
	}
	f, _, _ = testFactory(env)
	if code := Run(context.Background(), f, []string{"status", "set", "--state", "working", "--working-on", "the inbox cursor"}); code != ExitOK {
		t.Fatalf("status set: exit %d", code)
	}
	for _, args := range [][]string{{"status"}, {"--json", "status"}} {
		f, out, errOut = testFactory(env)
		if code := Run(context.Background(), f, args); code != ExitOK {
			t.Fatalf("%q: exit %d\n%s", args, code, errOut)
		}
		if !strings.Contains(out.String(), "working") || !strings.Contains(out.String(), "the inbox cursor") {
			t.Errorf("%q does not show ana's entry:\n%s", args, out)
		}
	}
}
