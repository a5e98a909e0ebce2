package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentmsg/agentmsg/service"
)

// WorkflowStep is one step of a workflow.
type WorkflowStep struct {
	Name      string   `json:"name" jsonschema:"the step's name: letters, digits, _ . -"`
	Agent     string   `json:"agent" jsonschema:"the agent of the workflow's team that does it"`
	Prompt    string   `json:"prompt" jsonschema:"what the agent is to do"`
	DependsOn []string `json:"depends_on,omitempty" jsonschema:"steps whose outputs this one needs; it starts when they are done"`
}

// WorkflowInput is create_workflow's input.
type WorkflowInput struct {
	Steps          []WorkflowStep `json:"steps"`
	Team           string         `json:"team,omitempty" jsonschema:"the team whose agents do the steps: yours when empty, or any other"`
	TimeoutSeconds float64        `json:"timeout_seconds,omitempty" jsonschema:"give up on the steps not done after this long (default 600, at most 3600)"`
}

// Step states, as service.StepState.
const (
	StepDone     = string(service.StepDone)
	StepFailed   = string(service.StepFailed)
	StepSkipped  = string(service.StepSkipped)
	StepTimedOut = string(service.StepTimedOut)
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

func (s *server) createWorkflow(ctx context.Context, in WorkflowInput) (WorkflowOutput, error) {
	team, err := s.teamOf(in.Team)
	if err != nil {
		return WorkflowOutput{}, err
	}
	limit, err := seconds(in.TimeoutSeconds, DefaultWorkflowTimeout, MaxWorkflowTimeout)
	if err != nil {
		return WorkflowOutput{}, fmt.Errorf("timeout_seconds: %w", err)
	}
	req := service.WorkflowRequest{Timeout: limit}
	for _, st := range in.Steps {
		req.Steps = append(req.Steps, service.WorkflowStep{Name: st.Name, Agent: st.Agent, Prompt: st.Prompt, DependsOn: st.DependsOn})
	}
	// The steps report to the caller's inbox in that team.
	res, err := s.in(team).Workflow(ctx, req)
	switch {
	case errors.Is(err, service.ErrNoSteps):
		return WorkflowOutput{}, errors.New("steps is empty: give at least one {name, agent, prompt}")
	case errors.Is(err, service.ErrInterrupted):
		return WorkflowOutput{}, fmt.Errorf("create_workflow %s was cancelled: %w", res.ID, ctx.Err())
	case err != nil:
		return WorkflowOutput{}, err
	}
	out := WorkflowOutput{WorkflowID: res.ID, Completed: res.Completed, TimedOut: res.TimedOut, Steps: []StepResult{}, Outputs: res.Outputs}
	for _, r := range res.Steps {
		st := StepResult{Name: r.Name, Agent: r.Agent, State: string(r.State), Output: r.Output, MessageID: string(r.TaskID),
			ReportID: string(r.ReportID), Verdict: string(r.Verdict), StartedAt: r.StartedAt, FinishedAt: r.FinishedAt}
		if r.Err != nil {
			st.Error = r.Err.Error()
		}
		out.Steps = append(out.Steps, st)
	}
	return out, nil
}
