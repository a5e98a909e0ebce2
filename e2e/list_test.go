package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/e2e/harness"
)

func TestListShowsAgentsAndState(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t)
	ana := s.StartAgent("agent-alpha-ana")
	bob := s.StartAgent("agent-alpha-bob", harness.InitialState("busy"))
	cy := s.StartAgent("agent-alpha-cy", harness.InitialState("dialog"))
	dee := s.StartAgent("agent-beta-dee")
	s.NewShellSession("scratch")
	// The stand-in draws its first screen right after logging "started".
	ana.WaitScreen("? for shortcuts", 5*time.Second)
	bob.WaitScreen("esc to interrupt", 5*time.Second)
	cy.WaitScreen("Do you want to proceed?", 5*time.Second)
	dee.WaitScreen("? for shortcuts", 5*time.Second)

	type row struct{ team, agent, session, pane, command, state string }
	want := []row{
		{"alpha", "ana", "agent-alpha-ana", ana.Pane, "standin", "ready"},
		{"alpha", "bob", "agent-alpha-bob", bob.Pane, "standin", "busy"},
		{"alpha", "cy", "agent-alpha-cy", cy.Pane, "standin", "dialog"},
		{"beta", "dee", "agent-beta-dee", dee.Pane, "standin", "ready"},
	}

	res := s.Run("--json", "list")
	wantCode(t, res, 0)
	rep, err := harness.Decode[harness.ListReport](res.Stdout)
	if err != nil {
		t.Fatal(err)
	}
	var got []row
	for _, a := range rep.Agents {
		got = append(got, row{a.Team, a.Agent, a.Session, a.Pane, a.Command, a.State})
		if a.PID <= 0 {
			t.Errorf("%s: pid %d", a.Session, a.PID)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("list --json:\n got %v\nwant %v", got, want)
	}
	if rep.Socket != s.Socket {
		t.Errorf("socket %q, want %q", rep.Socket, s.Socket)
	}

	res = s.Run("--json", "list", "alpha")
	wantCode(t, res, 0)
	rep, err = harness.Decode[harness.ListReport](res.Stdout)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Agents) != 3 || slices.ContainsFunc(rep.Agents, func(a harness.ListedAgent) bool { return a.Team != "alpha" }) {
		t.Errorf("list alpha should show alpha's 3 agents, got %+v", rep.Agents)
	}

	res = s.Run("list")
	wantCode(t, res, 0)
	table := tableRows(res.Stdout)
	if len(table) != len(want) {
		t.Fatalf("list: want %d agent rows, got:\n%s", len(want), res.Stdout)
	}
	for i, w := range want {
		if f := table[i]; len(f) < 6 || f[0] != w.team || f[1] != w.agent || f[2] != w.session || f[3] != w.pane ||
			f[4] != w.command || f[5] != w.state {
			t.Errorf("list row %d: got %q, want %v", i, f, w)
		}
	}

	res = s.Run("list", "alpha")
	wantCode(t, res, 0)
	if rows := tableRows(res.Stdout); len(rows) != 3 || strings.Contains(res.Stdout, "dee") {
		t.Errorf("list alpha:\n%s", res.Stdout)
	}
}

// tableRows splits list's table into fields, header left out.
func tableRows(out string) [][]string {
	var rows [][]string
	for i, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if i > 0 {
			rows = append(rows, strings.Fields(line))
		}
	}
	return rows
}

// noServerMessage is what a person must be able to read from stderr: tmux's
// own words or agentmsg's.
var noServerMessage = regexp.MustCompile(`(?i)no (tmux )?server|error connecting`)

// With no server on the socket, agentmsg says so and must not start one
// (which would leave a socket file behind).
func TestNoServer(t *testing.T) {
	t.Parallel()
	s := harness.NewTestServer(t) // only for its dir and environment
	sock := filepath.Join(s.Dir, "none")
	for _, args := range [][]string{
		{"-S", sock, "send", "a", "b", "hi"},
		{"-S", sock, "broadcast", "--all", "hi"},
		{"-S", sock, "list"},
	} {
		res, err := s.Exec(t.Context(), nil, args...)
		if err != nil {
			t.Fatal(err)
		}
		if res.Code != 1 {
			t.Errorf("agentmsg %q: want exit 1, got %s", args, res)
		}
		if !noServerMessage.MatchString(res.Stderr) || !strings.Contains(res.Stderr, sock) {
			t.Errorf("agentmsg %q: stderr should say no tmux server runs on %s:\n%s", args, sock, res.Stderr)
		}
		if _, err := os.Stat(sock); !os.IsNotExist(err) {
			t.Fatalf("agentmsg %q left %s behind (stat: %v)", args, sock, err)
		}
	}
}
