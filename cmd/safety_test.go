package cmd

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentmsg/agentmsg/delivery"
	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/lock"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
	"github.com/agentmsg/agentmsg/service"
	"github.com/agentmsg/agentmsg/tmux"
	"github.com/agentmsg/agentmsg/tmux/tmuxtest"
)

// --meta keys and values are typed with the message: cleaned, to one line.
func TestMetaIsCleaned(t *testing.T) {
	e := envelopeFlags{typ: "text", meta: []string{"k=v1\x1b[201~\rINJECTED\r", "k2\x1b[31m=a\nb"}}
	meta, err := e.metadata()
	if err != nil {
		t.Fatal(err)
	}
	env, err := service.Envelope(service.Draft{Type: e.typ, Meta: meta})
	if err != nil {
		t.Fatal(err)
	}
	if env.Metadata["k"] != "v1INJECTED" || env.Metadata["k2"] != "a b" || len(env.Metadata) != 2 {
		t.Fatalf("metadata %q", env.Metadata)
	}
}

// hostile is text from another party that would act on a terminal: a
// screen clear, a clipboard write (OSC 52), a CR that overwrites the line,
// a C1 CSI, a right-to-left override, and bytes that are not UTF-8.
const hostile = "w\x1b[2Jy \x1b]52;c;aGk=\x07 over\rwrite \u009b2J \u202egnp.exe \xff end"

// wantHarmless fails the test if out holds anything a terminal acts on.
// JSON output may hold its own newlines; text output newlines and tabs.
func wantHarmless(t *testing.T, what, out string, keep string) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Errorf("%s: output is not valid UTF-8: %q", what, out)
	}
	for _, r := range out {
		if message.Unsafe(r) && !strings.ContainsRune(keep, r) {
			t.Errorf("%s printed %U raw:\n%q", what, r, out)
			return
		}
	}
}

// Every command that prints what others wrote (messages, metadata,
// statuses, requests) shows escape sequences, controls and bidi overrides
// harmlessly, as text and as JSON.
func TestOthersTextIsPrintedHarmlessly(t *testing.T) {
	m := newMBHome(t)
	m.want(m.run("bob", "status", "set", "--state", "working", "--working-on", hostile, "--mission", hostile,
		"--next", hostile, "--done", hostile), ExitOK)
	b, err := m.store.Box("alpha", "ana")
	if err != nil {
		t.Fatal(err)
	}
	env := mailbox.Envelope{ID: "MSG_BOB_0000abcd", From: "bob\x1b[31m", To: "ana", Type: "text\x1b[2J", Content: hostile,
		Metadata: map[string]string{"k\x1b[2J": hostile}, ReplyTo: "MSG_X_0000ffff",
		Delivery: &mailbox.Delivery{State: mailbox.StateDeferred, LastVerdict: hostile}} // news to ana: her wait prints it
	if err := b.Append(env); err != nil {
		t.Fatal(err)
	}
	// agentmsg request cleans its text (service.Request); a request file
	// written by other means may still hold anything.
	if err := m.store.Post("alpha", mailbox.Request{ID: "REQ_0000beef", From: "bob", Description: hostile}); err != nil {
		t.Fatal(err)
	}
	reqs := decodeJSON[struct{ Requests []struct{ ID string } }](t, m.want(m.run("ana", "--json", "requests"), ExitOK).stdout)
	if len(reqs.Requests) != 1 {
		t.Fatalf("requests: %+v", reqs)
	}

	runs := [][]string{
		{"board"}, {"inbox", "--all"}, {"inbox", "--all", "--format", "prompt"}, {"log"}, {"log", "alpha", "ana"},
		{"log", "--id", "MSG_BOB_0000abcd"}, {"read", "MSG_BOB_0000abcd"}, {"requests"}, {"wait", "--timeout", "1s"},
		{"claim", reqs.Requests[0].ID},
	}
	for _, args := range runs {
		r := m.run("ana", args...)
		if r.code != ExitOK {
			t.Errorf("%v: %s", args, r)
		}
		wantHarmless(t, strings.Join(args, " "), r.stdout+r.stderr, "\n\t")
		if !strings.Contains(r.stdout+r.stderr, `\x1b[2J`) && args[0] != "claim" && args[0] != "wait" {
			t.Errorf("%v should show the escape as text:\n%s", args, r)
		}
	}
	for _, args := range runs[:len(runs)-2] {
		if slices.Contains(args, "--format") {
			continue // --format prompt is text, also under --json
		}
		args = append([]string{"--json"}, args...)
		r := m.run("ana", args...)
		wantHarmless(t, strings.Join(args, " "), r.stdout, "\n")
		if !json.Valid([]byte(r.stdout)) {
			t.Errorf("%v: not JSON:\n%s", args, r.stdout)
		}
	}
	// JSON escapes keep the value: a program reads back exactly what was sent.
	got := decodeJSON[mailbox.Envelope](t, m.want(m.run("ana", "--json", "read", "MSG_BOB_0000abcd"), ExitOK).stdout)
	if got.Content != strings.ToValidUTF8(hostile, "\uFFFD") {
		t.Errorf("--json read: content %q", got.Content)
	}
}

// hostileTmux is a server whose agent's program has a hostile name and
// whose screen shows hostile text (a dialog, so that it is in the detail).
type hostileTmux struct{ tmux.Client }

func (h hostileTmux) ListPanes(ctx context.Context) ([]tmux.Pane, error) {
	panes, err := h.Client.ListPanes(ctx)
	for i := range panes {
		panes[i].Command = hostile
	}
	return panes, err
}

func (h hostileTmux) SessionPanes(ctx context.Context, session string) ([]tmux.Pane, error) {
	panes, err := h.Client.SessionPanes(ctx, session)
	for i := range panes {
		panes[i].Command = hostile
	}
	return panes, err
}

func (h hostileTmux) Pinned(tmux.Pane) tmux.Client { return h }

func (h hostileTmux) Capture(context.Context, string, int) ([]string, error) {
	return []string{" Do you want to proceed? " + hostile, " ❯ 1. Yes " + hostile, "   2. No", ""}, nil
}

// What tmux reports of a pane (its program's name, its screen) is shown
// harmlessly too: list and doctor.
func TestPaneTextIsPrintedHarmlessly(t *testing.T) {
	srv := hostileTmux{tmuxtest.New("agent-alpha-ana")}
	for _, args := range [][]string{{"list"}, {"doctor", "alpha", "ana"}, {"--json", "list"}, {"--json", "doctor", "alpha", "ana"}} {
		f, out, errOut := testFactory(map[string]string{"AGENTMSG_HOME": t.TempDir()})
		f.Dispatcher = func() (*dispatch.Dispatcher, error) {
			return &dispatch.Dispatcher{Tmux: srv, Locks: lock.Dir{Path: t.TempDir()}, Clock: tmuxtest.Clock{},
				Opts: delivery.DefaultOptions(), Concurrency: 1}, nil
		}
		code := Run(context.Background(), f, args)
		if code != ExitOK {
			t.Errorf("%v: exit %d\n%s%s", args, code, out, errOut)
		}
		keep := "\n\t"
		if args[0] == "--json" {
			keep = "\n"
		}
		wantHarmless(t, strings.Join(args, " "), out.String()+errOut.String(), keep)
	}
}
