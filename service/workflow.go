package service

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/agentmsg/agentmsg/courier"
	"github.com/agentmsg/agentmsg/delivery"
	"github.com/agentmsg/agentmsg/dispatch"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/message"
	"github.com/agentmsg/agentmsg/target"
)

// WorkflowStep is one step of a workflow: a prompt for one agent of the
// caller's team, run once the steps it depends on are done.
type WorkflowStep struct {
	Name, Agent, Prompt string
	DependsOn           []string
}

// WorkflowRequest is a workflow's steps, in the order they are reported.
type WorkflowRequest struct {
	Steps []WorkflowStep
	// Timeout bounds the whole workflow; 0 runs until ctx ends.
	Timeout time.Duration
}

// StepState is how a step ended.
type StepState string

// Step states.
const (
	StepDone     StepState = "done"
	StepFailed   StepState = "failed"    // the agent reported state=failed, or the task could not be sent
	StepSkipped  StepState = "skipped"   // a dependency did not finish
	StepTimedOut StepState = "timed_out" // no report before the workflow's timeout
)

// StepResult is one step's outcome.
type StepResult struct {
	Name, Agent string
	State       StepState
	Output      string           // what the agent reported
	TaskID      message.ID       // the task message sent to the agent
	ReportID    message.ID       // the message that reported the output
	Verdict     delivery.Verdict // what became of the task message
	Err         error            // why the step is not done
	StartedAt   time.Time
	FinishedAt  time.Time
}

// WorkflowResult is every step's outcome, in the order given.
type WorkflowResult struct {
	ID        string
	Completed bool // every step is done
	TimedOut  bool
	Steps     []StepResult
	Outputs   map[string]string // each done step's output, by name
}

// Workflow runs named steps, each a task for one agent, in dependency
// order: steps whose dependencies are done run in parallel, and each
// step's task carries the outputs of the steps it depends on. A step's
// output is what its agent reports to the caller in a status message
// with metadata step=<name> (or a reply to the step's task). It returns
// when every step has ended; steps not done by req.Timeout are timed out
// (a result, not an error); ctx ending first is ErrInterrupted.
func (s *Service) Workflow(ctx context.Context, req WorkflowRequest) (WorkflowResult, error) {
	if s.Team == "" {
		return WorkflowResult{}, ErrNoCallerTeam
	}
	if req.Timeout < 0 {
		return WorkflowResult{}, fmt.Errorf("timeout %s is negative", req.Timeout)
	}
	byName, agents, err := s.checkWorkflow(req.Steps)
	if err != nil {
		return WorkflowResult{}, err
	}
	d, err := s.Dispatcher()
	if err != nil {
		return WorkflowResult{}, err
	}
	c := s.carrier(d)
	wfID, err := message.NewWorkflowID()
	if err != nil {
		return WorkflowResult{}, err
	}
	// Reports count from here on: anything in the inbox before the
	// workflow started is not a step's output.
	before, err := s.Store.Read(s.Team, s.Name)
	if err != nil {
		return WorkflowResult{}, fmt.Errorf("reading your inbox: %w", err)
	}
	run := &workflowRun{s: s, c: c, id: wfID, steps: byName, agents: agents, from: before.End,
		done: map[string]chan struct{}{}, results: map[string]*StepResult{}}
	for _, st := range req.Steps {
		run.done[st.Name] = make(chan struct{})
		run.results[st.Name] = &StepResult{Name: st.Name, Agent: st.Agent}
	}
	wctx := ctx
	if req.Timeout > 0 {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, req.Timeout)
		defer cancel()
	}
	var wg sync.WaitGroup
	for _, st := range req.Steps {
		wg.Go(func() { run.step(wctx, st) })
	}
	wg.Wait()
	if ctx.Err() != nil {
		return WorkflowResult{ID: wfID}, fmt.Errorf("%w: workflow %s: %w", ErrInterrupted, wfID, ctx.Err())
	}
	out := WorkflowResult{ID: wfID, Completed: true, Outputs: map[string]string{}}
	for _, st := range req.Steps {
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
	s      *Service
	c      *courier.Courier
	id     string
	steps  map[string]WorkflowStep
	agents map[string]target.Target
	from   mailbox.Position // the caller's inbox when the workflow started

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
	r.results[name].FinishedAt = r.s.mailboxNow().UTC()
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
				res.State, res.Err = StepTimedOut, fmt.Errorf("still waiting for step %q when the workflow timed out", dep)
			})
			return
		}
		if d := r.result(dep); d.State != StepDone {
			r.finish(st.Name, func(res *StepResult) {
				res.State, res.Err = StepSkipped, fmt.Errorf("step %q it depends on is %s", dep, d.State)
			})
			return
		}
	}
	r.mu.Lock()
	r.results[st.Name].StartedAt = r.s.mailboxNow().UTC()
	r.mu.Unlock()

	sent, err := r.s.Send(ctx, SendRequest{To: r.agents[st.Name], InboxIfAbsent: true, Delivery: Delivery{Queue: true},
		Draft: Draft{Text: r.prompt(st), Type: string(mailbox.TypeTask), Meta: map[string]string{"workflow": r.id, "step": st.Name}}})
	if err == nil {
		err = notSent(sent)
	}
	if err != nil {
		r.finish(st.Name, func(res *StepResult) {
			res.State, res.TaskID, res.Verdict = StepFailed, sent.ID, sent.Verdict
			res.Err = fmt.Errorf("sending the task: %w", err)
			if ctx.Err() != nil {
				res.State = StepTimedOut
			}
		})
		return
	}
	r.mu.Lock()
	r.results[st.Name].TaskID, r.results[st.Name].Verdict = sent.ID, sent.Verdict
	r.mu.Unlock()

	wctx, stop := context.WithCancel(ctx)
	defer stop()
	if sent.Verdict == delivery.Deferred {
		// The agent was busy: keep delivering what waits for it until it
		// takes the task (nobody else may be running agentmsg deliver).
		go r.keepDelivering(wctx)
	}
	agent := r.agents[st.Name].Agent()
	match := func(e mailbox.Envelope) bool {
		if e.From != agent {
			return false
		}
		return e.ReplyTo == sent.ID || (e.Type == mailbox.TypeStatus && e.Metadata["step"] == st.Name)
	}
	rep, err := r.s.Store.Wait(wctx, r.s.Team, r.s.Name, match, r.from)
	r.finish(st.Name, func(res *StepResult) {
		switch {
		case err != nil && ctx.Err() != nil:
			res.State, res.Err = StepTimedOut, fmt.Errorf("%s did not report step %q before the workflow timed out", st.Agent, st.Name)
		case err != nil:
			res.State, res.Err = StepFailed, fmt.Errorf("waiting for the report: %w", err)
		default:
			res.Output, res.ReportID, res.State = rep.Content, rep.ID, StepDone
			if rep.Metadata["state"] == "failed" {
				res.State, res.Err = StepFailed, fmt.Errorf("%s reported that step %q failed", st.Agent, st.Name)
			}
		}
	})
}

// notSent is why a message that was sent did not arrive and will not: nil
// when it was delivered, deferred or recorded.
func notSent(r SendResult) error {
	switch {
	case r.RecordErr != nil:
		return fmt.Errorf("message %s to %s: %w", r.ID, r.Target, r.RecordErr)
	case !r.OK():
		return fmt.Errorf("message %s to %s was not delivered (%s): %v", r.ID, r.Target, r.Verdict, r.Err)
	}
	return nil
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
			_, _ = r.c.Deliver(ctx, r.s.Team, dispatch.Call{})
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
	lead := r.s.Name
	fmt.Fprintf(&b, "\nWhen you are done, report your output to %s in a status message with metadata step=%s and state=complete "+
		"(state=failed if you could not do it), the output as its content: with the agentmsg MCP tools, "+
		"send_message {to: %q, type: \"status\", metadata: {step: %q, state: \"complete\"}, content: <output>}; "+
		"from a shell, agentmsg reply <this message's id> --type status --meta step=%s --meta state=complete \"<output>\".",
		lead, st.Name, lead, st.Name, st.Name)
	return b.String()
}
