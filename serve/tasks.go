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

// task is POST /v1/tasks: give an agent of the caller's team a message of
// type task whose text first lists the agent's unread messages, then the
// task. It answers send's document and the messages put in front.
func (d *Daemon) task(w http.ResponseWriter, r *http.Request) {
	var b wire.TaskBody
	if !decode(w, r, &b) {
		return
	}
	t, ok := agentTarget(w, b.AgentBody)
	if !ok {
		return
	}
	svc, ok := d.serviceFor(w, agentCaller(b.AgentBody))
	if !ok {
		return
	}
	res, err := svc.AssignTask(d.requestContext(r), service.AssignRequest{To: t, Task: b.Task, TaskID: b.TaskID})
	if err != nil {
		fail(w, 0, err)
		return
	}
	doc := wire.NewTask(res, wire.Plain)
	respond(w, doc.ExitCode, doc)
}

// workflow is POST /v1/workflows: run named steps, each a prompt for one
// agent of the caller's team, in dependency order, and answer when every
// step has ended: exit_code 0 when all are done, 7 when time ran out, 1
// when one failed.
func (d *Daemon) workflow(w http.ResponseWriter, r *http.Request) {
	var b wire.WorkflowBody
	if !decode(w, r, &b) {
		return
	}
	if b.Timeout == 0 {
		b.Timeout = wire.Duration(defaultWorkflowTimeout)
	}
	if time.Duration(b.Timeout) > maxWorkflowTimeout {
		fail(w, http.StatusBadRequest, errors.New("timeout: at most 1h"))
		return
	}
	req := service.WorkflowRequest{Timeout: time.Duration(b.Timeout)}
	for _, st := range b.Steps {
		req.Steps = append(req.Steps, service.WorkflowStep{Name: st.Name, Agent: st.Agent, Prompt: st.Prompt, DependsOn: st.DependsOn})
	}
	svc, ok := d.serviceFor(w, Caller{From: b.From, Team: b.Team, Socket: b.Socket, SocketName: b.SocketName})
	if !ok {
		return
	}
	res, err := svc.Workflow(d.requestContext(r), req)
	if err != nil {
		fail(w, 0, err)
		return
	}
	doc := wire.NewWorkflow(res, wire.Plain)
	respond(w, doc.ExitCode, doc)
}
