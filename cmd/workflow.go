package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentmsg/agentmsg/service"
	"github.com/agentmsg/agentmsg/wire"
)

// Workflow limits, as create_workflow's and the API's.
const (
	defaultWorkflowTimeout = 10 * time.Minute
	maxWorkflowTimeout     = time.Hour
)

// NewCmdWorkflow groups the commands about workflows.
func NewCmdWorkflow(f *Factory) *cobra.Command {
	c := &cobra.Command{
		Use:   "workflow",
		Short: "Run steps, each a task for one agent, in dependency order",
	}
	c.AddCommand(newCmdWorkflowRun(f, nil))
	return c
}

// WorkflowRunOptions are workflow run's inputs.
type WorkflowRunOptions struct {
	IO      *IOStreams
	JSON    func() bool
	Service func(ctx context.Context) (*service.Service, error)

	Team    string
	File    string // "-": stdin
	Timeout time.Duration
}

// workflowFile is a workflow as a file gives it: the API's and
// create_workflow's steps.
type workflowFile struct {
	Steps []struct {
		Name      string   `json:"name"`
		Agent     string   `json:"agent"`
		Prompt    string   `json:"prompt"`
		DependsOn []string `json:"depends_on"`
	} `json:"steps"`
}

func newCmdWorkflowRun(f *Factory, runF func(context.Context, *WorkflowRunOptions) error) *cobra.Command {
	opts := &WorkflowRunOptions{IO: f.IO, JSON: func() bool { return f.JSON }, Service: f.Service}
	c := &cobra.Command{
		Use:   "run TEAM [FILE]",
		Short: "Run named steps, each a prompt for one agent of TEAM, in dependency order",
		Long: `Run reads a workflow from FILE (stdin when none is given, or "-"):

  {"steps": [
    {"name": "build", "agent": "ana", "prompt": "build the release"},
    {"name": "test",  "agent": "bob", "prompt": "test it", "depends_on": ["build"]}
  ]}

Each step is sent to its agent of TEAM as a task once the steps it depends on
are done (steps whose dependencies are done run in parallel), with their
outputs in its prompt. A step's output is what its agent reports to you in a
status message with metadata step=NAME (the prompt says how), or a reply to
the step's task; state=failed fails it, and the steps after it are skipped.
The reports come to your inbox in TEAM. The MCP tool create_workflow does the
same.

It prints each step's outcome when all have ended: exit 0 when every step is
done, 7 when --timeout ran out first, 1 when a step failed.

` + exitCodesHelp,
		Example: `  agentmsg workflow run alpha release.json
  agentmsg --json workflow run alpha --timeout 30m < release.json | jq .outputs`,
		Args:              argsBetween(1, 2, "TEAM [FILE]"),
		ValidArgsFunction: completeMailboxTeam(f),
		RunE: func(c *cobra.Command, args []string) error {
			team, err := teamArg(args[0])
			if err != nil {
				return err
			}
			opts.Team, opts.File = team, "-"
			if len(args) == 2 {
				opts.File = args[1]
			}
			if opts.Timeout <= 0 || opts.Timeout > maxWorkflowTimeout {
				return usagef("--timeout %s: want a duration above 0, at most %s", opts.Timeout, maxWorkflowTimeout)
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return workflowRun(c.Context(), opts)
		},
	}
	c.Flags().DurationVar(&opts.Timeout, "timeout", defaultWorkflowTimeout, "give up on the steps not done after this long (exit 7; at most 1h)")
	return c
}

func workflowRun(ctx context.Context, opts *WorkflowRunOptions) error {
	steps, err := readWorkflow(ctx, opts.IO, opts.File)
	if err != nil {
		return err
	}
	caller, err := opts.Service(ctx)
	if err != nil {
		return err
	}
	// The steps' agents are of TEAM, and report to the caller's inbox there.
	svc := *caller
	svc.Team = opts.Team
	res, err := svc.Workflow(ctx, service.WorkflowRequest{Steps: steps, Timeout: opts.Timeout})
	if errors.Is(err, service.ErrNoSteps) || errors.Is(err, service.ErrBadWorkflow) {
		return usageError{fmt.Errorf("%s: %w", workflowSource(opts.File), err)}
	}
	if err != nil {
		return err
	}
	code := wire.WorkflowCode(res)
	if opts.JSON() {
		writeJSON(&Factory{IO: opts.IO}, wire.NewWorkflow(res, errText))
	} else {
		printWorkflow(opts.IO.Out, res)
	}
	if code != ExitOK {
		return exitError{code}
	}
	return nil
}

// readWorkflow reads the steps from file ("-": stdin).
func readWorkflow(ctx context.Context, ios *IOStreams, file string) ([]service.WorkflowStep, error) {
	var data []byte
	var err error
	if file == "-" {
		if ios.InTTY {
			return nil, usagef("no workflow: give its FILE, or pipe it on stdin")
		}
		data, err = readAll(ctx, ios.In)
	} else {
		data, err = os.ReadFile(file)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the workflow: %w", err)
	}
	var wf workflowFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&wf); err != nil {
		return nil, usagef("%s is not a workflow (%v): want {\"steps\": [{\"name\", \"agent\", \"prompt\", \"depends_on\"}, ...]}", workflowSource(file), err)
	}
	steps := make([]service.WorkflowStep, len(wf.Steps))
	for i, st := range wf.Steps {
		steps[i] = service.WorkflowStep{Name: st.Name, Agent: st.Agent, Prompt: st.Prompt, DependsOn: st.DependsOn}
	}
	return steps, nil
}

func workflowSource(file string) string {
	if file == "-" {
		return "stdin"
	}
	return file
}

// printWorkflow prints one line per step, then the outputs of those done.
func printWorkflow(w io.Writer, res service.WorkflowResult) {
	fmt.Fprintf(w, "workflow %s: %s\n", res.ID, workflowVerdict(res))
	for _, st := range res.Steps {
		line := fmt.Sprintf("  %-12s %-10s %s", show(st.Name), st.State, show(st.Agent))
		if st.Err != nil {
			line += ": " + errText(st.Err)
		}
		fmt.Fprintln(w, line)
	}
	for _, st := range res.Steps {
		if st.State == service.StepDone {
			fmt.Fprintf(w, "--- %s (%s) ---\n%s\n", show(st.Name), show(st.Agent), strings.TrimRight(showText(st.Output), "\n"))
		}
	}
}

func workflowVerdict(res service.WorkflowResult) string {
	switch {
	case res.Completed:
		return "every step is done"
	case res.TimedOut:
		return "time ran out before every step was done"
	}
	return "a step failed"
}
