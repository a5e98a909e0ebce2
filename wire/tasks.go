package wire

import (
	"time"

	"github.com/agentmsg/agentmsg/delivery"
	"github.com/agentmsg/agentmsg/service"
)

// The documents of the orchestration: a task, a workflow.

// Task is a task message's report (as send's) and the unread messages
// put in front of the task.
type Task struct {
	Send
	Injected []string `json:"injected"`
}

// NewTask is res as a document.
func NewTask(res service.AssignResult, words Words) Task {
	doc := Task{Send: NewSend(res.SendResult, words), Injected: []string{}}
	for _, id := range res.Injected {
		doc.Injected = append(doc.Injected, string(id))
	}
	return doc
}

// Step is one workflow step's outcome.
type Step struct {
	Name       string            `json:"name"`
	Agent      string            `json:"agent"`
	State      service.StepState `json:"state"`
	Output     string            `json:"output,omitempty"`
	MessageID  string            `json:"message_id,omitempty"`
	ReportID   string            `json:"report_id,omitempty"`
	Verdict    delivery.Verdict  `json:"verdict,omitempty"`
	Error      string            `json:"error,omitempty"`
	StartedAt  time.Time         `json:"started_at,omitzero"`
	FinishedAt time.Time         `json:"finished_at,omitzero"`
}

// Workflow is every step's outcome, in the order given.
type Workflow struct {
	WorkflowID string            `json:"workflow_id"`
	Completed  bool              `json:"completed"`
	TimedOut   bool              `json:"timed_out"`
	Steps      []Step            `json:"steps"`
	Outputs    map[string]string `json:"outputs"`
	ExitCode   int               `json:"exit_code"`
}

// WorkflowCode is a workflow's exit code: ExitOK when every step is
// done, ExitTimeout when time ran out first, else ExitError (a step
// failed, and those after it were skipped).
func WorkflowCode(res service.WorkflowResult) int {
	switch {
	case res.Completed:
		return ExitOK
	case res.TimedOut:
		return ExitTimeout
	}
	return ExitError
}

// NewWorkflow is res as a document.
func NewWorkflow(res service.WorkflowResult, words Words) Workflow {
	doc := Workflow{WorkflowID: res.ID, Completed: res.Completed, TimedOut: res.TimedOut, Steps: []Step{},
		Outputs: res.Outputs, ExitCode: WorkflowCode(res)}
	if doc.Outputs == nil {
		doc.Outputs = map[string]string{}
	}
	for _, r := range res.Steps {
		st := Step{Name: r.Name, Agent: r.Agent, State: r.State, Output: r.Output, MessageID: string(r.TaskID),
			ReportID: string(r.ReportID), Verdict: r.Verdict, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt}
		if r.Err != nil {
			st.Error = words(r.Err)
		}
		doc.Steps = append(doc.Steps, st)
	}
	return doc
}
