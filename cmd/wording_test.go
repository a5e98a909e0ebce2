package cmd

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/agentmsg/agentmsg/delivery"
	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/lock"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/profile"
	"github.com/agentmsg/agentmsg/tmux"
	"github.com/agentmsg/agentmsg/tmux/tmuxtest"
)

// The types help is made from mailbox.Protocol, so it names every type and
// every value a type needs, and reads as it always has.
func TestTypesHelpFollowsTheProtocol(t *testing.T) {
	const want = `Message types (--type; the agent sees "[type] key=value ... text"):
  text               plain text (the default)
  status             a status update; needs --meta state=idle|working|blocked|pr_pending|complete|failed
  shutdown-request   lead to agent: finish up and stop
  shutdown-response  agent to lead; needs --meta accept=true|false (false: defer while finishing)
  plan               agent to lead: a plan for approval
  plan-approval      lead to agent; needs --meta approve=true|false
  task               lead to agent: a task assignment`
	if typesHelp != want {
		t.Errorf("typesHelp:\n%s\nwant:\n%s", typesHelp, want)
	}
	for _, typ := range mailbox.TypeNames() {
		if !strings.Contains(typesHelp, "\n  "+typ+" ") {
			t.Errorf("typesHelp does not name type %s", typ)
		}
	}
	if got := strings.Join(statusStates, "|"); !strings.Contains(typesHelp, "state="+got+"\n") {
		t.Errorf("status set's states %s are not the protocol's", got)
	}
}

// shellTmux shows a shell prompt in every pane.
type shellTmux struct{ tmux.Client }

func (shellTmux) Capture(context.Context, string, int) ([]string, error) {
	return []string{"user@host:~$ ", ""}, nil
}

// Doctor says what a send would do by the rules a send follows: with
// --force, a shell prompt's empty command line is typed into (it used to
// say it would wait for an input box).
func TestDoctorFollowsTheDeliveryRules(t *testing.T) {
	srv := shellTmux{tmuxtest.New("agent-alpha-ana")}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"doctor", "alpha", "ana"}, "a send would: refuse: the pane shows a shell prompt, so a message would run as a command (--force types it anyway)\n"},
		{[]string{"doctor", "--force", "alpha", "ana"}, "a send would: type the message now, submit it after 0s and confirm it\n"},
	} {
		f, out, errOut := testFactory(map[string]string{"AGENTMSG_HOME": t.TempDir()})
		f.Dispatcher = func() (*dispatch.Dispatcher, error) {
			opts := delivery.DefaultOptions()
			opts.Reader = profile.Shell{}
			return &dispatch.Dispatcher{Tmux: srv, Locks: lock.Dir{Path: t.TempDir()}, Clock: tmuxtest.Clock{},
				Opts: opts, Concurrency: 1}, nil
		}
		if code := Run(context.Background(), f, tt.args); code != ExitOK || !strings.Contains(out.String(), tt.want) {
			t.Errorf("%v: exit %d, want %q in\n%s%s", tt.args, code, tt.want, out, errOut)
		}
	}
}

// The engine packages speak no front end's language: none of their texts
// (errors above all) names a flag, an exit code, an agentmsg command or an
// environment variable to set. cmd and mcpserver word those for their
// audience.
func TestEngineSpeaksNoCLI(t *testing.T) {
	cli := regexp.MustCompile(`(^|[\s(])--([a-z]|\s|$)|\bexit (code )?\d|\bagentmsg [a-z]+|set AGENTMSG_`)
	// Typed into an agent's box for the agent to run: the pointer to a
	// long message's full text.
	allowed := map[string]bool{" … (full text: agentmsg read ": true}
	for _, pkg := range []string{"delivery", "dispatch", "lifecycle", "message", "courier", "mailbox"} {
		files, err := filepath.Glob(filepath.Join("..", pkg, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: %v", pkg, err)
		}
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(f, func(n ast.Node) bool {
				lit, ok := n.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return true
				}
				if s, err := strconv.Unquote(lit.Value); err == nil && cli.MatchString(s) && !allowed[s] {
					t.Errorf("%s: %q speaks the CLI's language", name, s)
				}
				return true
			})
		}
	}
}

// The engine says what happened; the command line adds the flag that helps:
// a send refused at a shell prompt still points at --force, on the line
// for people and in the JSON error.
func TestCLIWordsTheEngineErrors(t *testing.T) {
	srv := shellTmux{tmuxtest.New("agent-alpha-ana")}
	for _, json := range []bool{false, true} {
		f, out, errOut := testFactory(map[string]string{"AGENTMSG_HOME": t.TempDir(), "AGENTMSG_FROM": "lead"})
		f.Dispatcher = func() (*dispatch.Dispatcher, error) {
			opts := delivery.DefaultOptions()
			opts.Reader = profile.Shell{}
			return &dispatch.Dispatcher{Tmux: srv, Locks: lock.Dir{Path: t.TempDir()}, Clock: tmuxtest.Clock{},
				Opts: opts, Concurrency: 1}, nil
		}
		args := []string{"send", "alpha", "ana", "hi"}
		if json {
			args = append([]string{"--json"}, args...)
		}
		code := Run(context.Background(), f, args)
		const want = "a message would run as a command (--force types it anyway)"
		if code != ExitNotReady || !strings.Contains(out.String()+errOut.String(), want) {
			t.Errorf("%v: exit %d, want %d and %q in\n%s%s", args, code, ExitNotReady, want, out, errOut)
		}
	}
}

func (s shellTmux) Pinned(tmux.Pane) tmux.Client { return s }
