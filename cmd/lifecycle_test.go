package cmd

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentmsg/agentmsg/lifecycle"
	"github.com/agentmsg/agentmsg/target"
)

func TestSpawnArgs(t *testing.T) {
	tests := []struct {
		args     []string
		team     string
		name     string
		instance string
		command  []string
		code     int
	}{
		{args: []string{"alpha", "ana", "--", "claude"}, team: "alpha", name: "ana", command: []string{"claude"}},
		{args: []string{"alpha", "ana", "--instance", "2", "--cwd", "/tmp", "--agent", "codex", "--", "codex", "--full-auto"},
			team: "alpha", name: "ana", instance: "2", command: []string{"codex", "--full-auto"}},
		{args: []string{"alpha", "ralph-7", "--", "sh", "-c", "a; b"}, team: "alpha", name: "ralph-7", command: []string{"sh", "-c", "a; b"}},
		{args: []string{"alpha", "ana", "claude"}, code: ExitUsage},                       // no --
		{args: []string{"alpha", "ana", "--"}, code: ExitUsage},                           // no command
		{args: []string{"alpha", "--", "claude"}, code: ExitUsage},                        // no name
		{args: []string{"Alpha", "ana", "--", "claude"}, code: ExitUsage},                 // bad team
		{args: []string{"alpha", "ana", "--instance", "x-y", "--", "c"}, code: ExitUsage}, // bad instance
		{args: []string{"ralph", "ana", "--", "c"}, code: ExitUsage},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var got *SpawnOptions
			code := parse(func(f *Factory) *cobra.Command {
				return NewCmdSpawn(f, func(ctx context.Context, o *SpawnOptions) error { got = o; return nil })
			}, tt.args...)
			if code != tt.code {
				t.Fatalf("exit code %d, want %d", code, tt.code)
			}
			if tt.code != ExitOK {
				return
			}
			r := got.Request
			if r.Team != tt.team || r.Name != tt.name || r.Instance != tt.instance || !slices.Equal(r.Command, tt.command) || r.Dir == "" {
				t.Errorf("request %+v", r)
			}
		})
	}
}

func TestShutdownKillAgentsArgs(t *testing.T) {
	tests := []struct {
		cmd   string
		args  string
		code  int
		check func(t *testing.T, o any)
	}{
		{cmd: "shutdown", args: "alpha ana", check: func(t *testing.T, o any) {
			s := o.(*ShutdownOptions)
			if s.Target.Session != "agent-alpha-ana" || s.Wait || s.Timeout != time.Minute {
				t.Errorf("%+v", s)
			}
		}},
		{cmd: "shutdown", args: "alpha ana-2 --reason done --wait --timeout 5s", check: func(t *testing.T, o any) {
			s := o.(*ShutdownOptions)
			if s.Target.Session != "agent-alpha-ana-2" || !s.Wait || s.Timeout != 5*time.Second || s.Reason != "done" {
				t.Errorf("%+v", s)
			}
		}},
		{cmd: "shutdown", args: "alpha ana --timeout 5s", code: ExitUsage},
		{cmd: "shutdown", args: "alpha ana --wait --timeout 0s", code: ExitUsage},
		{cmd: "shutdown", args: "alpha", code: ExitUsage},
		{cmd: "kill", args: "alpha bob", check: func(t *testing.T, o any) {
			k := o.(*KillOptions)
			if k.Target.Session != "agent-alpha-bob" || k.Grace != 5*time.Second {
				t.Errorf("%+v", k)
			}
		}},
		{cmd: "kill", args: "alpha bob --grace 30s", check: func(t *testing.T, o any) {
			if k := o.(*KillOptions); k.Grace != 30*time.Second {
				t.Errorf("%+v", k)
			}
		}},
		{cmd: "kill", args: "alpha bob --grace 0s", code: ExitUsage},
		{cmd: "kill", args: "alpha Bob", code: ExitUsage},
		{cmd: "agents", args: "", check: func(t *testing.T, o any) {
			a := o.(*AgentsOptions)
			if a.Team != "" || a.Reap || a.HeartbeatTimeout != 30*time.Second {
				t.Errorf("%+v", a)
			}
		}},
		{cmd: "agents", args: "alpha --reap --heartbeat-timeout 1m", check: func(t *testing.T, o any) {
			a := o.(*AgentsOptions)
			if a.Team != "alpha" || !a.Reap || a.HeartbeatTimeout != time.Minute {
				t.Errorf("%+v", a)
			}
		}},
		{cmd: "agents", args: "ralph", check: func(t *testing.T, o any) {
			if a := o.(*AgentsOptions); a.Team != "ralph" {
				t.Errorf("%+v", a)
			}
		}},
		{cmd: "agents", args: "alpha beta", code: ExitUsage},
		{cmd: "agents", args: "ALPHA", code: ExitUsage},
		{cmd: "heartbeat", args: ""},
		{cmd: "heartbeat", args: "extra", code: ExitUsage},
	}
	for _, tt := range tests {
		t.Run(tt.cmd+" "+tt.args, func(t *testing.T) {
			var got any
			build := map[string]func(*Factory) *cobra.Command{
				"shutdown": func(f *Factory) *cobra.Command {
					return NewCmdShutdown(f, func(_ context.Context, o *ShutdownOptions) error { got = o; return nil })
				},
				"kill": func(f *Factory) *cobra.Command {
					return NewCmdKill(f, func(_ context.Context, o *KillOptions) error { got = o; return nil })
				},
				"agents": func(f *Factory) *cobra.Command {
					return NewCmdAgents(f, func(_ context.Context, o *AgentsOptions) error { got = o; return nil })
				},
				"heartbeat": func(f *Factory) *cobra.Command {
					return NewCmdHeartbeat(f, func(_ context.Context, o *HeartbeatOptions) error { got = o; return nil })
				},
			}[tt.cmd]
			code := parse(build, strings.Fields(tt.args)...)
			if code != tt.code {
				t.Fatalf("exit code %d, want %d", code, tt.code)
			}
			if tt.check != nil {
				tt.check(t, got)
			}
		})
	}
}

func TestLifecycleHelp(t *testing.T) {
	// spawn and kill deliver nothing: their help lists their own exit
	// codes, not a broadcast's.
	for name, codes := range map[string]string{"spawn": spawnExitHelp, "shutdown": exitCodesHelp, "kill": killExitHelp,
		"agents": exitCodesHelp, "heartbeat": exitCodesHelp} {
		f, out, _ := testFactory(nil)
		if code := Run(context.Background(), f, []string{name, "--help"}); code != ExitOK {
			t.Fatalf("%s --help: exit code %d", name, code)
		}
		if !strings.Contains(out.String(), "Examples:") || !strings.Contains(out.String(), codes) {
			t.Errorf("%s --help lacks examples or its exit codes:\n%s", name, out)
		}
		if codes != exitCodesHelp && strings.Contains(out.String(), "broadcast") {
			t.Errorf("%s --help names a broadcast's exit codes:\n%s", name, out)
		}
	}
	if !strings.Contains(exitCodesHelp, "  9  shutdown --wait: the agent deferred") {
		t.Errorf("exit code %d is not documented:\n%s", ExitDeferred, exitCodesHelp)
	}
}

func TestHeartbeatRecords(t *testing.T) {
	dir := t.TempDir()
	f, out, _ := testFactory(map[string]string{"AGENTMSG_HOME": dir, "AGENTMSG_FROM": "ana", "AGENTMSG_TEAM": "alpha"})
	if code := Run(context.Background(), f, []string{"heartbeat"}); code != ExitOK {
		t.Fatalf("exit code %d, want 0", code)
	}
	if !strings.Contains(out.String(), "heartbeat of alpha/ana recorded") {
		t.Errorf("output %q", out)
	}
	store, _ := f.Mailbox()
	rec, err := store.RegisteredAgent("alpha", "ana")
	if err != nil || rec.Heartbeat.IsZero() {
		t.Errorf("registry entry %+v, %v", rec, err)
	}

	f, _, errOut := testFactory(map[string]string{"AGENTMSG_HOME": dir, "AGENTMSG_FROM": "ana"})
	if code := Run(context.Background(), f, []string{"heartbeat"}); code != ExitUsage {
		t.Errorf("without a team: exit code %d, want %d (%s)", code, ExitUsage, errOut)
	}
}

// --reap says what it did: a registered dead agent is unregistered; one
// never registered had nothing to reap, and its session stays.
func TestReapSaysWhatIsTrue(t *testing.T) {
	cy := lifecycle.AgentStatus{Target: target.Target{Team: "alpha", Name: "cy", Session: "agent-alpha-cy"}, Reason: "the program exited", Registered: true}
	if got := reapLine(cy); got != "reaped alpha/cy (unregistered): the program exited" {
		t.Errorf("registered: %q", got)
	}
	cy.Registered = false
	if got := reapLine(cy); strings.Contains(got, "reaped") || !strings.Contains(got, "never registered") || !strings.Contains(got, "agentmsg kill alpha cy") {
		t.Errorf("never registered: %q", got)
	}
}
