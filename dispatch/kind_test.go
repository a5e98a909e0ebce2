package dispatch

import (
	"context"
	"strings"
	"testing"

	"github.com/agentmsg/agentmsg/profile"
	"github.com/agentmsg/agentmsg/target"
	"github.com/agentmsg/agentmsg/tmux"
	"github.com/agentmsg/agentmsg/tmux/tmuxtest"
)

// What spawn registered an agent as is the profile every look and send
// reads its pane with (while the pane is the one spawn started), over
// what its process would say; a profile named on the command line comes
// before both.
func TestTheRegisteredKindReadsThePane(t *testing.T) {
	s := tmuxtest.New("agent-alpha-ana", "agent-alpha-bob")
	d := newDispatcher(s)
	d.Profile = func(tmux.Pane, []string) (profile.Profile, string) {
		return profile.Profile{Name: "shell"}, "foreground command bash: a shell"
	}
	mine := &profile.Profile{Name: "myrepl"}
	regs := map[string]Registration{
		"ana": {Pane: s.PaneID("agent-alpha-ana"), Kind: "myrepl", Profile: mine},
		// bob's pane is not the one spawn started: the record is stale.
		"bob": {Pane: "%99", Kind: "myrepl", Profile: mine},
	}
	d.Registered = func(t target.Target) (Registration, bool) { r, ok := regs[t.Name]; return r, ok }
	ctx := context.Background()
	ana, bob := mustTarget(t, "alpha", "ana"), mustTarget(t, "alpha", "bob")

	agents, err := d.Agents(ctx, "alpha", Call{})
	if err != nil || len(agents) != 2 || agents[0].Profile != "myrepl" || agents[1].Profile != "shell" {
		t.Fatalf("Agents = %+v, %v; want ana as myrepl, bob as shell", agents, err)
	}
	in, err := d.Inspect(ctx, ana, 0, Call{})
	if err != nil || in.Profile.Name != "myrepl" || !strings.Contains(in.Why, "myrepl") || !strings.Contains(in.Why, "spawn") {
		t.Fatalf("Inspect: %s (%s), %v", in.Profile.Name, in.Why, err)
	}
	if out := send(d, ana, "LEAD", "hello"); out.Profile != "myrepl" {
		t.Errorf("send read ana as %s (%s)", out.Profile, out.ProfileWhy)
	}
	if out := send(d, bob, "LEAD", "hello"); out.Profile != "shell" {
		t.Errorf("send read bob as %s (%s)", out.Profile, out.ProfileWhy)
	}
	byHand := &profile.Profile{Name: "codex"}
	if in, _ := d.Inspect(ctx, ana, 0, Call{Agent: byHand, AgentWhy: "--agent codex"}); in.Profile.Name != "codex" {
		t.Errorf("--agent: read as %s (%s)", in.Profile.Name, in.Why)
	}

	// A kind no profile has any more (the config changed): detected, and
	// said.
	regs["ana"] = Registration{Pane: s.PaneID("agent-alpha-ana"), Kind: "gone"}
	if in, _ := d.Inspect(ctx, ana, 0, Call{}); in.Profile.Name != "shell" || !strings.Contains(in.Why, `"gone"`) {
		t.Errorf("unknown kind: %s (%s)", in.Profile.Name, in.Why)
	}
}

// pasteOff is the fake server whose panes say (as tmux 3.7 does) that
// their program has not turned bracketed paste on.
type pasteOff struct{ tmux.Client }

func (s pasteOff) off(panes []tmux.Pane, err error) ([]tmux.Pane, error) {
	for i := range panes {
		panes[i].BracketedPaste = tmux.PasteOff
	}
	return panes, err
}
func (s pasteOff) SessionPanes(ctx context.Context, session string) ([]tmux.Pane, error) {
	return s.off(s.Client.SessionPanes(ctx, session))
}
func (s pasteOff) ListPanes(ctx context.Context) ([]tmux.Pane, error) {
	return s.off(s.Client.ListPanes(ctx))
}
func (s pasteOff) Pinned(tmux.Pane) tmux.Client { return s }

// Without bracketed paste every pasted character is a key: a tab asks a
// readline prompt (python3's) to complete, and is lost. It goes as
// spaces. On main python3 read "MSG_…: atab" for "a\ttab", and the send
// said submitted (the box's text is compared without its whitespace).
func TestNoTabsWithoutBracketedPaste(t *testing.T) {
	s := tmuxtest.New("agent-alpha-ana")
	d := newDispatcher(s)
	d.Tmux = pasteOff{s}
	out := send(d, mustTarget(t, "alpha", "ana"), "LEAD", "a\ttab")
	if got := s.Received("agent-alpha-ana"); !out.OK() || len(got) != 1 || got[0] != string(out.ID)+": a    tab" {
		t.Fatalf("received %q (%s, %v); want the tab as four spaces", got, out.Verdict, out.Err)
	}
	d.Tmux = s // bracketed paste on: the tab stays
	out = send(d, mustTarget(t, "alpha", "ana"), "LEAD", "a\ttab")
	if got := s.Received("agent-alpha-ana"); !out.OK() || got[1] != string(out.ID)+": a\ttab" {
		t.Fatalf("received %q (%s, %v); want the tab kept", got, out.Verdict, out.Err)
	}
}
