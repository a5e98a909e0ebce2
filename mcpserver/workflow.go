package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/agentmsg/agentmsg/courier"
	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
)

// WorkflowStep is one step of a workflow.
type WorkflowStep struct {
	Name      string   `json:"name" jsonschema:"the step's name: letters, digits, _ . -"`
	Agent     string   `json:"agent" jsonschema:"the agent of your team that does it"`
	Prompt    string   `json:"prompt" jsonschema:"what the agent is to do"`
	DependsOn []string `json:"depends_on,omitempty" jsonschema:"steps whose outputs this one needs; it starts when they are done"`
}

// WorkflowInput is create_workflow's input.
type WorkflowInput struct {
	Steps          []WorkflowStep `json:"steps"`
	TimeoutSeconds float64        `json:"timeout_seconds,omitempty" jsonschema:"give up on the steps not done after this long (default 600, at most 3600)"`
}

// Step states.
const (
	StepDone     = "done"
	StepFailed   = "failed"    // the agent reported state=failed, or the task could not be sent
	StepSkipped  = "skipped"   // a dependency did not finish
	StepTimedOut = "timed_out" // no report before the workflow's timeout
)

// StepResult is one step's outcome.
type StepResult struct {
	Name       string    `json:"name"`
	Agent      string    `json:"agent"`
	State      string    `json:"state" jsonschema:"done, failed, skipped or timed_out"`
	Output     string    `json:"output,omitempty" jsonschema:"what the agent reported"`
	MessageID  string    `json:"message_id,omitempty" jsonschema:"the task message sent to the agent"`
	ReportID   string    `json:"report_id,omitempty" jsonschema:"the message that reported the output"`
	Verdict    string    `json:"verdict,omitempty" jsonschema:"what became of the task message: submitted, queued, deferred, recorded"`
	Error      string    `json:"error,omitempty"`
	StartedAt  time.Time `json:"started_at,omitzero"`
	FinishedAt time.Time `json:"finished_at,omitzero"`
}

// WorkflowOutput is every step's outcome, in the order given.
type WorkflowOutput struct {
	WorkflowID string            `json:"workflow_id"`
	Completed  bool              `json:"completed" jsonschema:"every step is done"`
	TimedOut   bool              `json:"timed_out"`
	Steps      []StepResult      `json:"steps"`
	Outputs    map[string]string `json:"outputs" jsonschema:"each done step's output, by step name"`
}

var stepNameRe = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// checkWorkflow validates the steps: unique names, known dependencies, no
// cycle. It returns the steps by name.
func (s *server) checkWorkflow(steps []WorkflowStep) (map[string]WorkflowStep, error) {
	if len(steps) == 0 {
		return nil, errors.New("steps is empty: give at least one {name, agent, prompt}")
	}
	byName := map[string]WorkflowStep{}
	for i, st := range steps {
		if !stepNameRe.MatchString(st.Name) {
			return nil, fmt.Errorf("steps[%d].name %q: want 1 to 64 letters, digits, _ . or -", i, st.Name)
		}
		if _, dup := byName[st.Name]; dup {
			return nil, fmt.Errorf("two steps are named %q", st.Name)
		}
		if strings.TrimSpace(st.Prompt) == "" {
			return nil, fmt.Errorf("step %q has an empty prompt", st.Name)
		}
		t, err := s.agentTarget(fmt.Sprintf("step %q: agent", st.Name), st.Agent)
		if err != nil {
			return nil, err
		}
		if t.Agent() == s.deps.Name {
			return nil, fmt.Errorf("step %q: agent %q is you; give the step to another agent", st.Name, st.Agent)
		}
		byName[st.Name] = st
	}
	for _, st := range steps {
		for _, dep := range st.DependsOn {
			if _, ok := byName[dep]; !ok {
				return nil, fmt.Errorf("step %q depends on %q, which is not a step", st.Name, dep)
			}
			if dep == st.Name {
				return nil, fmt.Errorf("step %q depends on itself", st.Name)
			}
		}
	}
	// A depth-first search finds a cycle and names it.
	const (
		unseen = iota
		open
		closed
	)
	mark := map[string]int{}
	var visit func(name string, path []string) error
	visit = func(name string, path []string) error {
		switch mark[name] {
		case open:
			return fmt.Errorf("the steps depend on each other in a cycle: %s -> %s", strings.Join(path, " -> "), name)
		case closed:
			return nil
		}
		mark[name] = open
		for _, dep := range byName[name].DependsOn {
			if err := visit(dep, append(path, name)); err != nil {
				return err
			}
		}
		mark[name] = closed
		return nil
	}
	for _, st := range steps {
		if err := visit(st.Name, nil); err != nil {
			return nil, err
		}
	}
	return byName, nil
}

func (s *server) createWorkflow(ctx context.Context, in WorkflowInput) (WorkflowOutput, error) {
	team, err := s.team()
	if err != nil {
		return WorkflowOutput{}, err
	}
	limit, err := seconds(in.TimeoutSeconds, DefaultWorkflowTimeout, MaxWorkflowTimeout)
	if err != nil {
		return WorkflowOutput{}, fmt.Errorf("timeout_seconds: %w", err)
	}
	byName, err := s.checkWorkflow(in.Steps)
	if err != nil {
		return WorkflowOutput{}, err
	}
	c, _, err := s.courier()
	if err != nil {
		return WorkflowOutput{}, err
	}
	wfID, err := message.NewWorkflowID()
	if err != nil {
		return WorkflowOutput{}, err
	}
	// Reports count from here on: anything in the inbox before the
	// workflow started is not a step's output.
	before, err := s.deps.Store.Read(team, s.deps.Name)
	if err != nil {
		return WorkflowOutput{}, fmt.Errorf("reading your inbox: %w", err)
	}
	run := &workflowRun{s: s, c: c, team: team, id: wfID, steps: byName, from: before.End,
		done: map[string]chan struct{}{}, results: map[string]*StepResult{}}
	for _, st := range in.Steps {
		run.done[st.Name] = make(chan struct{})
		run.results[st.Name] = &StepResult{Name: st.Name, Agent: st.Agent}
	}
	wctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var wg sync.WaitGroup
	for _, st := range in.Steps {
		wg.Go(func() { run.step(wctx, st) })
	}
	wg.Wait()
	if ctx.Err() != nil {
		return WorkflowOutput{}, fmt.Errorf("create_workflow %s was cancelled: %w", wfID, ctx.Err())
	}

	out := WorkflowOutput{WorkflowID: wfID, Completed: true, Steps: []StepResult{}, Outputs: map[string]string{}}
	for _, st := range in.Steps {
		r := *run.results[st.Name]
		out.Steps = append(out.Steps, r)
		if r.State == StepDone {
			out.Outputs[r.Name] = r.Output
		} else {
			out.Completed = false
		}
		if r.State == StepTimedOut {
			out.TimedOut = true
		}
	}
	return out, nil
}

// workflowRun is one running workflow.
type workflowRun struct {
	s     *server
	c     *courier.Courier
	team  string
	id    string
	steps map[string]WorkflowStep
	from  mailbox.Position // the lead's inbox when the workflow started

	done    map[string]chan struct{} // closed when the step has finished, whatever its state
	mu      sync.Mutex
	results map[string]*StepResult
}

func (r *workflowRun) result(name string) StepResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	return *r.results[name]
}

func (r *workflowRun) finish(name string, f func(*StepResult)) {
	r.mu.Lock()
	f(r.results[name])
	r.results[name].FinishedAt = r.s.deps.Now().UTC()
	r.mu.Unlock()
	close(r.done[name])
}

// step runs one step once its dependencies are done.
func (r *workflowRun) step(ctx context.Context, st WorkflowStep) {
	for _, dep := range st.DependsOn {
		select {
		case <-r.done[dep]:
		case <-ctx.Done():
			r.finish(st.Name, func(res *StepResult) {
				res.State, res.Error = StepTimedOut, fmt.Sprintf("still waiting for step %q when the workflow timed out", dep)
			})
			return
		}
		if d := r.result(dep); d.State != StepDone {
			r.finish(st.Name, func(res *StepResult) {
				res.State, res.Error = StepSkipped, fmt.Sprintf("step %q it depends on is %s", dep, d.State)
			})
			return
		}
	}
	r.mu.Lock()
	r.results[st.Name].StartedAt = r.s.deps.Now().UTC()
	r.mu.Unlock()

	env := mailbox.Envelope{Type: mailbox.TypeTask, Content: r.prompt(st),
		Metadata: map[string]string{"workflow": r.id, "step": st.Name}}
	sent, err := r.s.send(ctx, st.Agent, env)
	if err != nil {
		r.finish(st.Name, func(res *StepResult) {
			res.State, res.MessageID, res.Verdict = StepFailed, sent.MessageID, sent.Verdict
			res.Error = "sending the task: " + err.Error()
			if ctx.Err() != nil {
				res.State = StepTimedOut
			}
		})
		return
	}
	taskID := message.ID(sent.MessageID)
	r.mu.Lock()
	r.results[st.Name].MessageID, r.results[st.Name].Verdict = sent.MessageID, sent.Verdict
	r.mu.Unlock()

	wctx, stop := context.WithCancel(ctx)
	defer stop()
	if sent.Verdict == string(courier.Deferred) {
		// The agent was busy: keep delivering what waits for it until it
		// takes the task (nobody else may be running agentmsg deliver).
		go r.keepDelivering(wctx)
	}
	match := func(e mailbox.Envelope) bool {
		if e.From != st.Agent {
			return false
		}
		return e.ReplyTo == taskID || (e.Type == mailbox.TypeStatus && e.Metadata["step"] == st.Name)
	}
	rep, err := r.s.deps.Store.Wait(wctx, r.team, r.s.deps.Name, match, r.from)
	r.finish(st.Name, func(res *StepResult) {
		switch {
		case err != nil && ctx.Err() != nil:
			res.State, res.Error = StepTimedOut, fmt.Sprintf("%s did not report step %q before the workflow timed out", st.Agent, st.Name)
		case err != nil:
			res.State, res.Error = StepFailed, "waiting for the report: "+err.Error()
		default:
			res.Output, res.ReportID, res.State = rep.Content, string(rep.ID), StepDone
			if rep.Metadata["state"] == "failed" {
				res.State, res.Error = StepFailed, fmt.Sprintf("%s reported that step %q failed", st.Agent, st.Name)
			}
		}
	})
}

// keepDelivering types the messages waiting in the team's inboxes, a pass
// every two seconds, until ctx ends.
func (r *workflowRun) keepDelivering(ctx context.Context) {
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			_, _ = r.c.Deliver(ctx, r.team, dispatch.Call{})
		}
	}
}

// prompt is a step's task text: the prompt, the outputs of its
// dependencies, and how to report.
func (r *workflowRun) prompt(st WorkflowStep) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Workflow %s, step %q.\n\n%s\n", r.id, st.Name, strings.TrimSpace(st.Prompt))
	if len(st.DependsOn) > 0 {
		b.WriteString("\nOutputs of the steps this one depends on:\n")
		for _, dep := range st.DependsOn {
			d := r.result(dep)
			fmt.Fprintf(&b, "--- step %q (by %s) ---\n%s\n", dep, d.Agent, d.Output)
		}
	}
	lead := r.s.deps.Name
	fmt.Fprintf(&b, "\nWhen you are done, report your output to %s in a status message with metadata step=%s and state=complete "+
		"(state=failed if you could not do it), the output as its content: with the agentmsg MCP tools, "+
		"send_message {to: %q, type: \"status\", metadata: {step: %q, state: \"complete\"}, content: <output>}; "+
		"from a shell, agentmsg reply <this message's id> --type status --meta step=%s --meta state=complete \"<output>\".",
		lead, st.Name, lead, st.Name, st.Name)
	return b.String()
}
