package mcpserver

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentmsg/agentmsg/service"
)

// AssignInput is assign_task's input.
type AssignInput struct {
	Agent  string `json:"agent" jsonschema:"the agent to give the task to"`
	Team   string `json:"team,omitempty" jsonschema:"its team: yours when empty, or any other"`
	Task   string `json:"task" jsonschema:"what the agent is to do"`
	TaskID string `json:"task_id,omitempty" jsonschema:"your name for the task, sent as metadata task_id"`
}

// AssignOutput is the task message and what went into it.
type AssignOutput struct {
	SendOutput
	// Injected are the unread messages put in front of the task.
	Injected []string `json:"injected" jsonschema:"ids of the agent's unread messages put in front of the task"`
}

func (s *server) assignTask(ctx context.Context, in AssignInput) (AssignOutput, error) {
	t, err := s.agentTarget(in.Team, "agent", in.Agent)
	if err != nil {
		return AssignOutput{}, err
	}
	res, err := s.deps.AssignTask(ctx, service.AssignRequest{To: t, Task: in.Task, TaskID: in.TaskID})
	if errors.Is(err, service.ErrEmptyTask) {
		return AssignOutput{}, fmt.Errorf("task is empty: say what %s is to do", t.Agent())
	}
	sent, err := sendOutput("agent", in.Agent, t, res.SendResult, err)
	out := AssignOutput{SendOutput: sent, Injected: []string{}}
	for _, id := range res.Injected {
		out.Injected = append(out.Injected, string(id))
	}
	return out, err
}
