package serve

import (
	"errors"
	"net/http"
	"time"

	"github.com/agentmsg/agentmsg/service"
	"github.com/agentmsg/agentmsg/wire"
)

// The orchestration: a task for one agent, a workflow of steps, as the
// MCP server's assign_task and create_workflow run them.

// Workflow limits, as create_workflow's.
const (
	defaultWorkflowTimeout = 10 * time.Minute
	maxWorkflowTimeout     = time.Hour
)

func (*Daemon) checkTask(_ *http.Request, b *wire.TaskBody) (Caller, service.AssignRequest, error) {
	c, t, err := agentTarget(b.AgentBody)
	return c, service.AssignRequest{To: t, Task: b.Task, TaskID: b.TaskID}, err
}

// task is POST /v1/tasks: give an agent of the caller's team a message of
// type task whose text first lists the agent's unread messages, then the
// task. It answers send's document and the messages put in front.
func (d *Daemon) task(r *http.Request, svc *service.Service, req service.AssignRequest) (answer, error) {
	res, err := svc.AssignTask(d.requestContext(r), req)
	if err != nil {
		return answer{}, err
	}
	doc := wire.NewTask(res, wire.Plain)
	return answerOf(doc.ExitCode, doc), nil
}

func (*Daemon) checkWorkflow(_ *http.Request, b *wire.WorkflowBody) (Caller, service.WorkflowRequest, error) {
	c := asking(b.From, b.Team, b.Server)
	if b.Timeout == 0 {
		b.Timeout = wire.Duration(defaultWorkflowTimeout)
	}
	if time.Duration(b.Timeout) > maxWorkflowTimeout {
		return c, service.WorkflowRequest{}, badRequest("", errors.New("timeout: at most 1h"))
	}
	req := service.WorkflowRequest{Timeout: time.Duration(b.Timeout)}
	for _, st := range b.Steps {
		req.Steps = append(req.Steps, service.WorkflowStep{Name: st.Name, Agent: st.Agent, Prompt: st.Prompt, DependsOn: st.DependsOn})
	}
	return c, req, nil
}

// workflow is POST /v1/workflows: run named steps, each a prompt for one
// agent of the caller's team, in dependency order, and answer when every
// step has ended: exit_code 0 when all are done, 7 when time ran out, 1
// when one failed.
func (d *Daemon) workflow(r *http.Request, svc *service.Service, req service.WorkflowRequest) (answer, error) {
	res, err := svc.Workflow(d.requestContext(r), req)
	if err != nil {
		return answer{}, err
	}
	doc := wire.NewWorkflow(res, wire.Plain)
	return answerOf(doc.ExitCode, doc), nil
}
