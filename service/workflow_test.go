package service

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
	"github.com/agentmsg/agentmsg/tmux/tmuxtest"
)

// answer has agent name do each task it gets: it reports f's output to
// lead as a status message with the task's step, until ctx ends. A task
// is typed into the agent's pane, which is no news in its inbox (Wait
// passes over it); the fake pane holds no text to act on, so the agent
// takes each task from its inbox as the pane would show it.
func answer(ctx context.Context, t *testing.T, lead *Service, name string, f func(task string) (string, string)) {
	me := *lead
	me.Name, me.Sender = name, strings.ToUpper(name)
	go func() {
		done := map[message.ID]bool{}
		for ctx.Err() == nil {
			task, err := me.Store.Wait(ctx, me.Team, name, func(e mailbox.Envelope) bool { return e.Type == mailbox.TypeTask && !done[e.ID] }, mailbox.Position{})
			if err != nil {
				continue
			}
			done[task.ID] = true
			out, state := f(task.Content)
			_, err = me.Send(ctx, SendRequest{To: to(t, "lead"), InboxIfAbsent: true, Delivery: Delivery{Queue: true},
				Draft: Draft{Text: out, Type: "status", Meta: map[string]string{"step": task.Metadata["step"], "state": state}}})
			if err != nil && ctx.Err() == nil {
				t.Errorf("%s reporting: %v", name, err)
			}
		}
	}()
}

func TestWorkflowChainsAndSkips(t *testing.T) {
	srv := tmuxtest.New("agent-alpha-ana", "agent-alpha-bob", "agent-alpha-cy")
	s := testService(t, srv)
	if err := s.Store.SetStatus("alpha", "lead", mailbox.Status{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	answer(ctx, t, s, "ana", func(string) (string, string) { return "<<gathered>>", "complete" })
	answer(ctx, t, s, "bob", func(task string) (string, string) {
		if !strings.Contains(task, "--- step \"a\" (by ana) ---\n<<gathered>>") {
			return "no input in " + task, "failed"
		}
		return "could not", "failed"
	})
	res, err := s.Workflow(ctx, WorkflowRequest{Timeout: 30 * time.Second, Steps: []WorkflowStep{
		{Name: "c", Agent: "cy", Prompt: "summarise", DependsOn: []string{"b"}},
		{Name: "a", Agent: "ana", Prompt: "gather"},
		{Name: "b", Agent: "bob", Prompt: "analyse", DependsOn: []string{"a"}},
	}})
	if err != nil || res.Completed || res.TimedOut || len(res.Steps) != 3 {
		t.Fatalf("Workflow = %+v, %v", res, err)
	}
	a, b, c := res.Steps[1], res.Steps[2], res.Steps[0]
	if a.State != StepDone || res.Outputs["a"] != "<<gathered>>" || a.ReportID == "" || a.TaskID == "" {
		t.Errorf("step a: %+v", a)
	}
	if b.State != StepFailed || b.Output != "could not" || b.Err == nil {
		t.Errorf("step b: %+v", b)
	}
	if c.State != StepSkipped || len(srv.Received("agent-alpha-cy")) != 0 {
		t.Errorf("step c: %+v; cy got %q", c, srv.Received("agent-alpha-cy"))
	}
}

func TestWorkflowTimesOutAsAResult(t *testing.T) {
	s := testService(t, tmuxtest.New("agent-alpha-ana"))
	res, err := s.Workflow(context.Background(), WorkflowRequest{Timeout: 200 * time.Millisecond, Steps: []WorkflowStep{
		{Name: "a", Agent: "ana", Prompt: "never answered"},
		{Name: "b", Agent: "ana", Prompt: "after", DependsOn: []string{"a"}},
	}})
	if err != nil || !res.TimedOut || res.Steps[0].State != StepTimedOut || res.Steps[1].State != StepTimedOut {
		t.Fatalf("Workflow = %+v, %v", res, err)
	}
}

func TestWorkflowValidation(t *testing.T) {
	srv := tmuxtest.New("agent-alpha-ana")
	s := testService(t, srv)
	for _, tc := range []struct {
		steps []WorkflowStep
		want  error
		text  string
	}{
		{nil, ErrNoSteps, ""},
		{[]WorkflowStep{{Name: "a", Agent: "ana", Prompt: "x", DependsOn: []string{"z"}}}, ErrBadWorkflow, `depends on "z", which is not a step`},
		{[]WorkflowStep{{Name: "a", Agent: "ana", Prompt: "x"}, {Name: "a", Agent: "ana", Prompt: "y"}}, ErrBadWorkflow, `two steps are named "a"`},
		{[]WorkflowStep{{Name: "a", Agent: "ana", Prompt: "x", DependsOn: []string{"b"}}, {Name: "b", Agent: "ana", Prompt: "y", DependsOn: []string{"a"}}},
			ErrBadWorkflow, "cycle: a -> b -> a"},
		{[]WorkflowStep{{Name: "a b", Agent: "ana", Prompt: "x"}}, ErrBadWorkflow, "name"},
		{[]WorkflowStep{{Name: strings.Repeat("s", 65), Agent: "ana", Prompt: "x"}}, ErrBadWorkflow, "1 to 64"},
		{[]WorkflowStep{{Name: "", Agent: "ana", Prompt: "x"}}, ErrBadWorkflow, "1 to 64"},
		{[]WorkflowStep{{Name: "a", Agent: "lead", Prompt: "x"}}, ErrBadWorkflow, "is you"},
		{[]WorkflowStep{{Name: "a", Agent: "ana", Prompt: " "}}, ErrBadWorkflow, "empty prompt"},
	} {
		_, err := s.Workflow(context.Background(), WorkflowRequest{Steps: tc.steps})
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) {
			t.Errorf("%v: %v, want %v with %q", tc.steps, err, tc.want, tc.text)
		}
	}
	if len(srv.Received("agent-alpha-ana")) != 0 {
		t.Error("an invalid workflow sent tasks")
	}
}
