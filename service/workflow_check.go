package service

// Checking a workflow's steps before any runs.

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/agentmsg/agentmsg/target"
)

var (
	// ErrNoSteps: a workflow without steps.
	ErrNoSteps = errors.New("a workflow needs at least one step")
	// ErrBadWorkflow: the steps do not make a workflow (a bad name, a
	// duplicate, an unknown dependency, a cycle, ...); a *WorkflowError.
	ErrBadWorkflow = errors.New("invalid workflow")
)

// WorkflowError says what is wrong with a workflow's steps.
type WorkflowError struct{ Reason string }

func (e *WorkflowError) Error() string        { return e.Reason }
func (e *WorkflowError) Is(target error) bool { return target == ErrBadWorkflow }

func badWorkflow(format string, a ...any) error {
	return &WorkflowError{Reason: fmt.Sprintf(format, a...)}
}

// stepNameRe is a step's name; its length (1 to 64) is checked apart: a
// counted repetition compiles to that many copies at every start.
var stepNameRe = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

// checkWorkflow validates the steps: unique names, agents of the caller's
// team other than the caller, known dependencies, no cycle. It returns
// the steps by name and their agents.
func (s *Service) checkWorkflow(steps []WorkflowStep) (map[string]WorkflowStep, map[string]target.Target, error) {
	if len(steps) == 0 {
		return nil, nil, ErrNoSteps
	}
	byName, agents := map[string]WorkflowStep{}, map[string]target.Target{}
	for i, st := range steps {
		if len(st.Name) > 64 || !stepNameRe.MatchString(st.Name) {
			return nil, nil, badWorkflow("step %d's name %q: want 1 to 64 letters, digits, _ . or -", i+1, st.Name)
		}
		if _, dup := byName[st.Name]; dup {
			return nil, nil, badWorkflow("two steps are named %q", st.Name)
		}
		if strings.TrimSpace(st.Prompt) == "" {
			return nil, nil, badWorkflow("step %q has an empty prompt", st.Name)
		}
		t, err := target.New(s.Team, st.Agent)
		if err != nil {
			return nil, nil, fmt.Errorf("step %q: agent: %w", st.Name, err)
		}
		if t.Agent() == s.Name {
			return nil, nil, badWorkflow("step %q: agent %q is you; give the step to another agent", st.Name, st.Agent)
		}
		byName[st.Name], agents[st.Name] = st, t
	}
	for _, st := range steps {
		for _, dep := range st.DependsOn {
			if _, ok := byName[dep]; !ok {
				return nil, nil, badWorkflow("step %q depends on %q, which is not a step", st.Name, dep)
			}
			if dep == st.Name {
				return nil, nil, badWorkflow("step %q depends on itself", st.Name)
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
			return badWorkflow("the steps depend on each other in a cycle: %s -> %s", strings.Join(path, " -> "), name)
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
			return nil, nil, err
		}
	}
	return byName, agents, nil
}
