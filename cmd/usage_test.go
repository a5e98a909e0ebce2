package cmd

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/agentmsg/agentmsg/config"

	"github.com/agentmsg/agentmsg/delivery"
	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/lock"
	"github.com/agentmsg/agentmsg/tmux/tmuxtest"
)

// Every usage error exits 2, as the README and --help say, and with --json
// prints {error, exit_code} on stdout, wherever --json stands.
func TestUsageErrorsExit2(t *testing.T) {
	tests := []struct {
		args []string
		want string // in the error
	}{
		{[]string{"sned", "alpha", "ana", "hi"}, `unknown command "sned"`},
		{[]string{"--json", "sned", "alpha", "ana", "hi"}, `unknown command "sned"`},
		{[]string{"sned", "--json"}, "Did you mean"},
		{[]string{"status", "bogus"}, `unknown command "bogus" for "agentmsg status"`},
		{[]string{"team", "bogus"}, `unknown command "bogus"`},
		{[]string{"hooks", "bogus"}, `unknown command "bogus"`},
		{[]string{"help", "sned"}, `unknown help topic "sned"`},
		// --help after an unknown command printed the root's help, exit 0.
		{[]string{"nosuch", "--help"}, `unknown command "nosuch" for "agentmsg"`},
		{[]string{"hostz", "--help"}, `unknown command "hostz" for "agentmsg"`},
		{[]string{"sned", "-h"}, "Did you mean this?\n\tsend"},
		{[]string{"status", "bogus", "--help"}, `unknown command "bogus" for "agentmsg status"`},
		{[]string{"send", "alpha", "ana", "--bogus", "--json", "hi"}, "unknown flag: --bogus"},
		{[]string{"--bogus", "--json", "list"}, "unknown flag: --bogus"},
		{[]string{"wait", "--timeout", "soon", "--json"}, "invalid argument"},
		{[]string{"inbox", "alpha", "--json"}, "give both TEAM and NAME"},
		{[]string{"config", "extra", "--json"}, "no arguments"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			f, out, errOut := testFactory(map[string]string{"AGENTMSG_HOME": t.TempDir(), "AGENTMSG_FROM": "ana", "AGENTMSG_TEAM": "alpha"})
			code := Run(context.Background(), f, tt.args)
			if code != ExitUsage {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, ExitUsage, out, errOut)
			}
			if !strings.Contains(errOut.String(), tt.want) {
				t.Errorf("stderr %q lacks %q", errOut, tt.want)
			}
			if !strings.Contains(strings.Join(tt.args, " "), "--json") {
				if out.Len() != 0 {
					t.Errorf("stdout %q: want nothing", out)
				}
				return
			}
			var doc struct {
				Error    string `json:"error"`
				ExitCode int    `json:"exit_code"`
			}
			if err := json.Unmarshal(out.Bytes(), &doc); err != nil || doc.ExitCode != ExitUsage || !strings.Contains(doc.Error, tt.want) {
				t.Errorf("--json error document %q: %v", out, err)
			}
		})
	}
}

// Help, asked for, is no error. (status alone shows the caller's entry:
// TestStatusAloneShowsTheCallersEntry.)
func TestHelpIsNoError(t *testing.T) {
	for _, args := range [][]string{{}, {"help"}, {"help", "send"}, {"team"}, {"hooks"}, {"--help"}, {"status", "--help"}} {
		f, out, errOut := testFactory(nil)
		if code := Run(context.Background(), f, args); code != ExitOK || out.Len() == 0 {
			t.Errorf("%v: exit %d\nstdout:\n%s\nstderr:\n%s", args, code, out, errOut)
		}
	}
}

// A command that prints its own JSON document on failure says the error
// and the exit code in it, like every other error.
func TestJSONFailuresCarryExitCode(t *testing.T) {
	f, out, errOut := testFactory(map[string]string{"AGENTMSG_HOME": t.TempDir()})
	srv := tmuxtest.New("agent-alpha-ana")
	f.Dispatcher = func() (*dispatch.Dispatcher, error) {
		return &dispatch.Dispatcher{Tmux: srv, Locks: lock.Dir{Path: t.TempDir()}, Clock: tmuxtest.Clock{},
			Opts: delivery.DefaultOptions(), Concurrency: 1}, nil
	}
	code := Run(context.Background(), f, []string{"--json", "doctor", "alpha", "bob"})
	var doc struct {
		Error    string `json:"error"`
		ExitCode *int   `json:"exit_code"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil || code != ExitNotFound || doc.ExitCode == nil || *doc.ExitCode != ExitNotFound || doc.Error == "" {
		t.Errorf("doctor of a missing agent: exit %d, %v\nstdout:\n%s\nstderr:\n%s", code, err, out, errOut)
	}
}

// The delivery settings (--ready-timeout, --settle, ...) are in the help
// of the commands that type into panes only (and of config, which shows
// them all): every command listed all 9, status, board and inbox too. The
// connection flags stay everywhere.
func TestDeliveryFlagsOnlyInHelpOfCommandsThatDeliver(t *testing.T) {
	for _, tt := range []struct {
		cmd      []string
		delivers bool
	}{
		{[]string{"send"}, true}, {[]string{"broadcast"}, true}, {[]string{"deliver"}, true}, {[]string{"reply"}, true},
		{[]string{"status"}, false}, {[]string{"board"}, false}, {[]string{"inbox"}, false}, {[]string{"config"}, true},
		{[]string{"list"}, false}, {[]string{"status", "set"}, false}, {[]string{"request"}, false}, {[]string{"kill"}, false},
	} {
		f, out, _ := testFactory(nil)
		if code := Run(context.Background(), f, append(tt.cmd, "--help")); code != ExitOK {
			t.Fatalf("%q --help: exit %d", tt.cmd, code)
		}
		for _, flag := range []string{"--ready-timeout", "--settle", "--confirm-timeout", "--poll", "--retries", "--repress", "--keep-count"} {
			if got := strings.Contains(out.String(), flag); got != tt.delivers {
				t.Errorf("%q --help shows %s: %v, want %v", tt.cmd, flag, got, tt.delivers)
			}
		}
		for _, flag := range []string{"--socket", "--json", "--from"} {
			if !strings.Contains(out.String(), flag) {
				t.Errorf("%q --help lacks %s", tt.cmd, flag)
			}
		}
	}
}

// The root help names every agent CLI with a builtin profile: Qwen Code
// and Droid were left out.
func TestRootHelpNamesEveryAgentCLI(t *testing.T) {
	f, out, _ := testFactory(nil)
	if code := Run(context.Background(), f, []string{"--help"}); code != ExitOK {
		t.Fatalf("--help: exit %d", code)
	}
	help := strings.Join(strings.Fields(out.String()), " ")
	for _, name := range []string{"Claude Code", "Codex", "Gemini CLI", "Qwen Code", "Droid", "aider"} {
		if !strings.Contains(help, name) {
			t.Errorf("agentmsg --help does not name %s", name)
		}
	}
}

// A command that delivers nothing refuses a delivery setting given as a
// flag (status --ready-timeout 3s exited 0, the flag ignored), naming the
// flag; one that reads it (every command that delivers, doctor's
// --ready-timeout and --settle) lists it in its help. Walking the tree,
// a new command is checked too.
func TestDeliveryFlagsRefusedWhereTheyMeanNothing(t *testing.T) {
	f, _, _ := testFactory(nil)
	var paths [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		if c.Runnable() && len(path) > 0 {
			paths = append(paths, path)
		}
		for _, sub := range c.Commands() {
			walk(sub, append(slices.Clip(path), sub.Name()))
		}
	}
	walk(NewCmdRoot(f), nil)
	for _, path := range paths {
		for _, k := range config.Keys() {
			if everyCommandsKeys[k.Key] {
				continue
			}
			flag := "--" + k.Flag
			t.Run(strings.Join(path, " ")+" "+flag, func(t *testing.T) {
				f, out, errOut := testFactory(map[string]string{"AGENTMSG_HOME": t.TempDir()})
				if takesSetting(strings.Join(path, " "), k.Key) {
					if code := Run(context.Background(), f, append(slices.Clip(path), "--help")); code != ExitOK || !strings.Contains(out.String(), flag) {
						t.Errorf("exit %d; its help does not list %s, which it reads:\n%s", code, flag, out)
					}
					return
				}
				code := Run(context.Background(), f, append(slices.Clip(path), flag+"="+k.Default))
				want := flag + " applies only to commands that deliver"
				if code != ExitUsage || !strings.Contains(errOut.String(), want) {
					t.Errorf("exit %d, want %d and %q\nstdout:\n%s\nstderr:\n%s", code, ExitUsage, want, out, errOut)
				}
			})
		}
	}
}

// Only a flag refuses: the same setting from the environment or the
// config file is every command's default, and status runs with it.
func TestDeliverySettingsFromEnvAndFileAreNoRefusal(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "agentmsg"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "agentmsg", "config.toml"), []byte("settle = \"20ms\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, out, errOut := testFactory(map[string]string{"AGENTMSG_HOME": t.TempDir(), "XDG_CONFIG_HOME": dir,
		"AGENTMSG_READY_TIMEOUT": "1m", "AGENTMSG_FROM": "ana", "AGENTMSG_TEAM": "alpha"})
	if code := Run(context.Background(), f, []string{"status"}); code != ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}

// Each command the table names exists: a renamed one would lose its
// delivery settings without a word.
func TestDeliveryTablesNameRealCommands(t *testing.T) {
	f, _, _ := testFactory(nil)
	root := NewCmdRoot(f)
	names := slices.Clone(deliveringCommands)
	for path := range readsDeliverySettings {
		names = append(names, path)
	}
	for _, path := range names {
		if c, rest, err := root.Find(strings.Fields(path)); err != nil || len(rest) > 0 || commandPath(c) != path {
			t.Errorf("%q names no command", path)
		}
	}
}
