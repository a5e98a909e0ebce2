package cmd

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/delivery"
	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/lock"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
	"github.com/agentmsg/agentmsg/tmux/tmuxtest"
)

// The orchestration the MCP server had and the CLI had not (assign_task,
// create_workflow): agentmsg task assign and agentmsg workflow run.

// orchestration is a mailbox home with agents on a fake tmux server.
type orchestration struct {
	*mbHome
	tmux *tmuxtest.Server
}

func newOrchestration(t *testing.T, sessions ...string) *orchestration {
	return &orchestration{mbHome: newMBHome(t), tmux: tmuxtest.New(sessions...)}
}

// run runs agentmsg args... as from of team alpha, with stdin.
func (o *orchestration) run(from, stdin string, args ...string) mbResult {
	f, out, errOut := testFactory(map[string]string{"AGENTMSG_HOME": o.home, "AGENTMSG_TEAM": "alpha", "AGENTMSG_FROM": from})
	f.IO.In = strings.NewReader(stdin)
	locks := lock.Dir{Path: o.t.TempDir()}
	f.Dispatcher = func() (*dispatch.Dispatcher, error) {
		opts := delivery.DefaultOptions()
		opts.ReadyTimeout, opts.Settle, opts.Poll = 100*time.Millisecond, time.Millisecond, time.Millisecond
		return &dispatch.Dispatcher{Tmux: o.tmux, Locks: locks, Clock: tmuxtest.Clock{}, Opts: opts}, nil
	}
	code := Run(context.Background(), f, args)
	return mbResult{code, out.String(), errOut.String()}
}

// A task carries the agent's unread message in front of it, which then
// counts as read; the task itself is typed as send types a message.
func TestTaskAssignCarriesUnreadMessages(t *testing.T) {
	o := newOrchestration(t, "agent-alpha-ana")
	waiting := o.send("bob", "ana", mailbox.TypeText, "the build is red")
	r := o.want(o.run("lead", "", "--json", "task", "assign", "alpha", "ana", "--task-id", "t1", "fix", "the", "build"), ExitOK)
	doc := decodeJSON[struct {
		ID       string   `json:"id"`
		Verdict  string   `json:"verdict"`
		Injected []string `json:"injected"`
	}](t, r.stdout)
	if doc.Verdict != "submitted" || len(doc.Injected) != 1 || doc.Injected[0] != string(waiting.ID) {
		t.Fatalf("task assign: %+v\n%s", doc, r)
	}
	got := o.tmux.Received("agent-alpha-ana")
	if len(got) != 1 || !strings.HasPrefix(got[0], doc.ID+": [task] task_id=t1 You have 1 unread message:\n["+string(waiting.ID)+"] from bob") ||
		!strings.HasSuffix(got[0], "Your task:\nfix the build") {
		t.Fatalf("ana's pane got %q", got)
	}
	if unread, err := o.store.Unread("alpha", "ana", "ana"); err != nil || len(unread.Envelopes) != 1 || unread.Envelopes[0].ID != message.ID(doc.ID) {
		t.Errorf("ana's unread messages after the task: %+v, %v", unread.Envelopes, err)
	}

	r = o.want(o.run("lead", "review PR 12\n", "task", "assign", "alpha", "ana"), ExitOK)
	if !strings.Contains(r.stdout, "submitted to alpha/ana") {
		t.Errorf("a task from stdin: %s", r)
	}
	o.want(o.run("lead", " \n", "task", "assign", "alpha", "ana"), ExitUsage)
	o.want(o.run("lead", "", "task", "assign", "alpha", "nobody", "x"), ExitNotFound)
}

// A workflow file's steps run in order; each step's report is its output,
// printed (and in --json) when all are done.
func TestWorkflowRunReportsEachStep(t *testing.T) {
	o := newOrchestration(t, "agent-alpha-ana", "agent-alpha-bob")
	if err := o.store.SetStatus("alpha", "lead", mailbox.Status{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Each agent reports every task it is typed, as the prompt asks.
	for _, agent := range []string{"ana", "bob"} {
		go o.report(ctx, agent)
	}
	wf := `{"steps": [{"name": "build", "agent": "ana", "prompt": "build it"},
	  {"name": "test", "agent": "bob", "prompt": "test it", "depends_on": ["build"]}]}`
	r := o.want(o.run("lead", wf, "workflow", "run", "alpha", "--timeout", "30s"), ExitOK)
	if !strings.Contains(r.stdout, "every step is done") || !strings.Contains(r.stdout, "--- test (bob) ---\nbob did test") {
		t.Fatalf("workflow run:\n%s", r)
	}
	r = o.want(o.run("lead", wf, "--json", "workflow", "run", "alpha", "-"), ExitOK)
	doc := decodeJSON[struct {
		Completed bool              `json:"completed"`
		Outputs   map[string]string `json:"outputs"`
		ExitCode  int               `json:"exit_code"`
	}](t, r.stdout)
	if !doc.Completed || doc.Outputs["build"] != "ana did build" || doc.ExitCode != ExitOK {
		t.Fatalf("workflow run --json: %+v\n%s", doc, r)
	}

	for _, bad := range []string{`{"steps": []}`, `{"steps": [{"name": "a", "agent": "ana"}]}`, `not json`, `{"stages": []}`} {
		if r := o.run("lead", bad, "workflow", "run", "alpha"); r.code != ExitUsage {
			t.Errorf("workflow %s: want exit %d, got %s", bad, ExitUsage, r)
		}
	}
}

// report has agent answer each task typed into its pane with a status
// report of the task's step to lead, until ctx ends.
func (o *orchestration) report(ctx context.Context, agent string) {
	done := 0
	for ctx.Err() == nil {
		got := o.tmux.Received("agent-alpha-" + agent)
		for ; done < len(got); done++ {
			_, step, _ := strings.Cut(got[done], `step "`)
			step, _, _ = strings.Cut(step, `"`)
			id, err := message.NewID(strings.ToUpper(agent), nil)
			if err != nil {
				o.t.Error(err)
				return
			}
			b, err := o.store.Box("alpha", "lead")
			if err == nil {
				err = b.Append(mailbox.Envelope{ID: id, From: agent, To: "lead", Type: mailbox.TypeStatus,
					Content: agent + " did " + step, Metadata: map[string]string{"step": step, "state": "complete"}})
			}
			if err != nil {
				o.t.Error(err)
				return
			}
		}
		time.Sleep(time.Millisecond)
	}
}
