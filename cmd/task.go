package cmd

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentmsg/agentmsg/service"
	"github.com/agentmsg/agentmsg/target"
	"github.com/agentmsg/agentmsg/wire"
)

// NewCmdTask groups the commands about tasks.
func NewCmdTask(f *Factory) *cobra.Command {
	c := &cobra.Command{
		Use:   "task",
		Short: "Give an agent a task that carries what waits for it",
	}
	c.AddCommand(newCmdTaskAssign(f, nil))
	return c
}

// TaskAssignOptions are task assign's inputs.
type TaskAssignOptions struct {
	IO        *IOStreams
	JSON      func() bool
	LookupEnv func(string) (string, bool)
	Service   func(ctx context.Context) (*service.Service, error)

	Target    target.Target
	Task      string
	FromStdin bool
	TaskID    string
}

func newCmdTaskAssign(f *Factory, runF func(context.Context, *TaskAssignOptions) error) *cobra.Command {
	opts := &TaskAssignOptions{IO: f.IO, JSON: func() bool { return f.JSON }, LookupEnv: f.LookupEnv, Service: f.Service}
	c := &cobra.Command{
		Use:   "assign TEAM NAME [TASK...]",
		Short: "Send an agent a task whose text first lists its unread messages",
		Long: `Assign sends the agent a message of type task. Its text first lists the
agent's unread messages that never reached its pane (the context it would
otherwise miss: messages deferred while it was busy, or only recorded), then
TASK; those messages count as read afterwards and are not typed on their own.
It is typed and confirmed as send does (deferred when the agent stays busy),
and the MCP tool assign_task does the same.

The task comes from the arguments, or from stdin when none is given or it is
"-". --task-id names it for you, as metadata task_id.

` + exitCodesHelp,
		Example: `  agentmsg task assign alpha ana "review PR 12 and report with agentmsg reply"
  agentmsg task assign alpha bob --task-id flaky-42 < task.md
  agentmsg --json task assign alpha ana "run the benchmarks" | jq .injected`,
		Args:              argsBetween(2, -1, "TEAM NAME [TASK...]"),
		ValidArgsFunction: completeTeamAgent(f),
		RunE: func(c *cobra.Command, args []string) error {
			t, err := teamName(args)
			if err != nil {
				return err
			}
			opts.Target = t
			rest := args[2:]
			opts.Task, opts.FromStdin = textArgs(rest)
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return taskAssignRun(c.Context(), opts)
		},
	}
	c.Flags().StringVar(&opts.TaskID, "task-id", "", "your name for the task, sent as metadata task_id")
	return c
}

func taskAssignRun(ctx context.Context, opts *TaskAssignOptions) error {
	task, err := messageText(ctx, opts.IO, opts.Task, opts.FromStdin)
	if err != nil {
		return err
	}
	svc, err := opts.Service(ctx)
	if err != nil {
		return err
	}
	res, err := svc.AssignTask(ctx, service.AssignRequest{To: opts.Target, Task: task, TaskID: opts.TaskID})
	if errors.Is(err, service.ErrEmptyTask) {
		return usageError{err}
	}
	if err != nil {
		return err
	}
	f := &Factory{IO: opts.IO, JSON: opts.JSON(), LookupEnv: opts.LookupEnv}
	if f.JSON {
		writeJSON(f, wire.NewTask(res, errText))
		if !res.OK() {
			return exitError{wire.ResultCode(res.Result)}
		}
		return nil
	}
	if len(res.Injected) > 0 {
		ids := make([]string, len(res.Injected))
		for i, id := range res.Injected {
			ids[i] = string(id)
		}
		fmt.Fprintf(opts.IO.ErrOut, "the task carries %d unread message(s): %s\n", len(ids), strings.Join(ids, ", "))
	}
	return reportSent(f, res.SendResult)
}
