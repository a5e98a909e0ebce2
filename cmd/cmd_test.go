package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/agentmsg/agentmsg/config"
	"github.com/agentmsg/agentmsg/delivery"
	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/target"
	"github.com/agentmsg/agentmsg/tmux"
)

// testFactory is a factory with buffers for streams and only the given
// environment; nothing in it can reach a tmux server.
func testFactory(env map[string]string) (*Factory, *bytes.Buffer, *bytes.Buffer) {
	var out, errOut bytes.Buffer
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	f := NewFactory(&IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, lookup)
	f.Dispatcher = func() (*dispatch.Dispatcher, error) {
		return nil, errors.New("this test must not reach tmux")
	}
	return f, &out, &errOut
}

// parse runs one subcommand built with a runF, so that only flag and
// argument parsing happens; it returns the exit code Run would give.
func parse(build func(*Factory) *cobra.Command, args ...string) int {
	f, _, _ := testFactory(nil)
	c := build(f)
	c.SetArgs(args)
	c.SetOut(f.IO.Out)
	c.SetErr(f.IO.ErrOut)
	c.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageError{err} })
	return exitCode(c.ExecuteContext(context.Background()))
}

func TestSendArgs(t *testing.T) {
	tests := []struct {
		args      []string
		session   string
		message   string
		fromStdin bool
		code      int
	}{
		{args: []string{"alpha", "ana", "hello", "there"}, session: "agent-alpha-ana", message: "hello there"},
		{args: []string{"alpha", "ana-2", "hi"}, session: "agent-alpha-ana-2", message: "hi"},
		{args: []string{"alpha", "ralph-7", "hi"}, session: "agent-ralph-7", message: "hi"},
		{args: []string{"alpha", "ana"}, session: "agent-alpha-ana", fromStdin: true},
		{args: []string{"alpha", "ana", "-"}, session: "agent-alpha-ana", fromStdin: true},
		{args: []string{"alpha", "ana", "--", "-x starts with a dash"}, session: "agent-alpha-ana", message: "-x starts with a dash"},
		{args: []string{"alpha", "ana", "ends;"}, session: "agent-alpha-ana", message: "ends;"},
		{args: []string{"Alpha", "ana", "hi"}, code: ExitUsage},
		{args: []string{"alpha", "ana;rm", "hi"}, code: ExitUsage},
		{args: []string{"ralph", "ana", "hi"}, code: ExitUsage},
		{args: []string{"alpha"}, code: ExitUsage},
		{args: []string{"alpha", "ana", "--bogus", "hi"}, code: ExitUsage},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var got *SendOptions
			code := parse(func(f *Factory) *cobra.Command {
				return NewCmdSend(f, func(ctx context.Context, o *SendOptions) error { got = o; return nil })
			}, tt.args...)
			if code != tt.code {
				t.Fatalf("exit code %d, want %d", code, tt.code)
			}
			if tt.code != ExitOK {
				return
			}
			if got.Target.Session != tt.session || got.Message != tt.message || got.FromStdin != tt.fromStdin {
				t.Errorf("got session %q message %q stdin %v; want %q %q %v",
					got.Target.Session, got.Message, got.FromStdin, tt.session, tt.message, tt.fromStdin)
			}
		})
	}
}

func TestBroadcastArgs(t *testing.T) {
	tests := []struct {
		args    []string
		team    string
		all     bool
		message string
		code    int
	}{
		{args: []string{"alpha", "stand", "up"}, team: "alpha", message: "stand up"},
		{args: []string{"--all", "wrap", "up"}, all: true, message: "wrap up"},
		{args: []string{"alpha", "-"}, team: "alpha"},
		{args: []string{}, code: ExitUsage},
		{args: []string{"Bad-Team", "hi"}, code: ExitUsage},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var got *BroadcastOptions
			code := parse(func(f *Factory) *cobra.Command {
				return NewCmdBroadcast(f, func(ctx context.Context, o *BroadcastOptions) error { got = o; return nil })
			}, tt.args...)
			if code != tt.code {
				t.Fatalf("exit code %d, want %d", code, tt.code)
			}
			if tt.code != ExitOK {
				return
			}
			if got.Team != tt.team || got.All != tt.all || got.Message != tt.message {
				t.Errorf("got team %q all %v message %q; want %q %v %q", got.Team, got.All, got.Message, tt.team, tt.all, tt.message)
			}
		})
	}
}

func TestListArgs(t *testing.T) {
	for args, want := range map[string]int{"": ExitOK, "alpha": ExitOK, "alpha beta": ExitUsage, "ALPHA": ExitUsage} {
		code := parse(func(f *Factory) *cobra.Command {
			return NewCmdList(f, func(context.Context, *ListOptions) error { return nil })
		}, strings.Fields(args)...)
		if code != want {
			t.Errorf("list %s: exit code %d, want %d", args, code, want)
		}
	}
}

func TestExitCodes(t *testing.T) {
	invalid := func() error { _, err := target.New("Alpha", "ana"); return err }()
	tests := []struct {
		err  error
		want int
	}{
		{nil, ExitOK},
		{invalid, ExitUsage},
		{fmt.Errorf("wrapped: %w", config.ErrInvalid), ExitUsage},
		{dispatch.ErrEmptyMessage, ExitUsage},
		{fmt.Errorf("x: %w", dispatch.ErrTargetNotFound), ExitNotFound},
		{dispatch.ErrNoTargets, ExitNotFound},
		{&delivery.NotReadyError{State: delivery.Dialog}, ExitNotReady},
		{delivery.ErrUnconfirmed, ExitUnconfirmed},
		{exitError{ExitPartial}, ExitPartial},
		{&tmux.Error{Stderr: "no server running", Kind: tmux.ErrNoServer}, ExitError},
		{tmux.ErrNotInstalled, ExitError},
	}
	for _, tt := range tests {
		if got := exitCode(tt.err); got != tt.want {
			t.Errorf("exitCode(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
}

// The exit codes are documented in --help; the table there must match.
func TestExitCodesHelpMatches(t *testing.T) {
	for code, word := range map[int]string{ExitOK: "delivered", ExitError: "anything else", ExitUsage: "bad usage",
		ExitNotFound: "no such target", ExitNotReady: "not ready", ExitUnconfirmed: "not confirmed", ExitPartial: "some targets failed",
		ExitTimeout: "no matching message", ExitClaimed: "already claimed"} {
		line := fmt.Sprintf("  %d  ", code)
		i := strings.Index(exitCodesHelp, line)
		if i < 0 || !strings.Contains(exitCodesHelp[i:min(len(exitCodesHelp), i+80)], word) {
			t.Errorf("exit code %d is not documented as %q in:\n%s", code, word, exitCodesHelp)
		}
	}
}

func TestRunReportsUsageErrors(t *testing.T) {
	f, out, errOut := testFactory(nil)
	if code := Run(context.Background(), f, []string{"send", "Alpha", "ana", "hi"}); code != ExitUsage {
		t.Fatalf("exit code %d, want %d", code, ExitUsage)
	}
	if !strings.Contains(errOut.String(), "Alpha") || out.Len() != 0 {
		t.Errorf("stderr %q stdout %q: want the bad name on stderr only", errOut, out)
	}

	f, out, _ = testFactory(nil)
	if code := Run(context.Background(), f, []string{"--json", "send", "alpha", "ana;x", "hi"}); code != ExitUsage {
		t.Fatalf("--json: exit code %d, want %d", code, ExitUsage)
	}
	var doc struct {
		Error    string `json:"error"`
		ExitCode int    `json:"exit_code"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil || doc.ExitCode != ExitUsage || doc.Error == "" {
		t.Errorf("--json error document %q: %v", out, err)
	}
}

func TestHelpListsExitCodes(t *testing.T) {
	f, out, _ := testFactory(nil)
	if code := Run(context.Background(), f, []string{"send", "--help"}); code != ExitOK {
		t.Fatalf("exit code %d", code)
	}
	if !strings.Contains(out.String(), exitCodesHelp) {
		t.Errorf("send --help lacks the exit codes:\n%s", out)
	}
}

func TestMessageFromStdin(t *testing.T) {
	io := &IOStreams{In: strings.NewReader("line 1\nline 2\n")}
	if got, err := messageText(context.Background(), io, "", true); err != nil || got != "line 1\nline 2\n" {
		t.Errorf("messageText = %q, %v", got, err)
	}
	io.InTTY = true
	if _, err := messageText(context.Background(), io, "", true); exitCode(err) != ExitUsage {
		t.Errorf("no message on a terminal: %v, want a usage error", err)
	}
}

func TestSenderPrecedence(t *testing.T) {
	tests := []struct {
		env  map[string]string
		args []string
		want string
	}{
		{env: map[string]string{"USER": "dana"}, want: "DANA"},
		{env: map[string]string{"USER": "dana", "AGENTMSG_FROM": "lead-1"}, want: "LEAD_1"},
		{env: map[string]string{"USER": "dana", "AGENTMSG_FROM": "lead"}, args: []string{"--from", "ana"}, want: "ANA"},
	}
	for _, tt := range tests {
		tt.env["XDG_CONFIG_HOME"] = t.TempDir()
		f, _, _ := testFactory(tt.env)
		root := NewCmdRoot(f)
		root.SetArgs(append(tt.args, "config"))
		if err := root.Execute(); err != nil {
			t.Fatal(err)
		}
		got, source, err := f.Sender(context.Background())
		if err != nil || got != tt.want {
			t.Errorf("env %v args %v: sender %q (from %s), %v; want %q", tt.env, tt.args, got, source, err, tt.want)
		}
	}
}

func TestConfigShowsSources(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "agentmsg"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "agentmsg", "config.toml"), []byte("retries = 4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, out, errOut := testFactory(map[string]string{"XDG_CONFIG_HOME": dir, "AGENTMSG_READY_TIMEOUT": "1m"})
	if code := Run(context.Background(), f, []string{"--json", "--settle", "5ms", "config"}); code != ExitOK {
		t.Fatalf("exit code %d: %s", code, errOut)
	}
	var doc struct {
		Settings []struct{ Key, Value, Source string }
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, s := range doc.Settings {
		got[s.Key] = s.Value + " from " + s.Source
	}
	for key, want := range map[string]string{"retries": "4 from", "ready_timeout": "1m", "settle": "5ms"} {
		if !strings.HasPrefix(got[key], want) {
			t.Errorf("%s = %q, want %q...", key, got[key], want)
		}
	}
	if strings.Contains(got["retries"], "default") || strings.Contains(got["settle"], "default") {
		t.Errorf("sources not reported: %v", got)
	}
}
