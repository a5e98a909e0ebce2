package harness

import (
	"encoding/json"
	"fmt"
)

// The JSON documents agentmsg prints with --json (cmd/output.go, send.go,
// broadcast.go, list.go, exit.go). Only what tests and benchmarks read.

// Outcome is one target's verdict.
type Outcome struct {
	Team      string  `json:"team"`
	Agent     string  `json:"agent"`
	Session   string  `json:"session"`
	Pane      string  `json:"pane"`
	Verdict   string  `json:"verdict"`
	State     string  `json:"state"`
	Presses   int     `json:"presses"`
	Typings   int     `json:"typings"`
	ElapsedMS float64 `json:"elapsed_ms"`
	ExitCode  int     `json:"exit_code"`
	Error     string  `json:"error"`
	Pointer   bool    `json:"pointer"`
}

// SendReport is `send --json`.
type SendReport struct {
	ID   string `json:"id"`
	From string `json:"from"`
	Outcome
}

// BroadcastReport is `broadcast --json`.
type BroadcastReport struct {
	ID        string    `json:"id"`
	From      string    `json:"from"`
	Team      string    `json:"team"`
	All       bool      `json:"all"`
	Verdict   string    `json:"verdict"`
	Delivered int       `json:"delivered"`
	Deferred  int       `json:"deferred"`
	Failed    int       `json:"failed"`
	ExitCode  int       `json:"exit_code"`
	Results   []Outcome `json:"results"`
}

// ListedAgent is one agent in `list --json`.
type ListedAgent struct {
	Team    string `json:"team"`
	Agent   string `json:"agent"`
	Session string `json:"session"`
	Pane    string `json:"pane"`
	Command string `json:"command"`
	PID     int    `json:"pid"`
	InMode  bool   `json:"in_mode"`
	State   string `json:"state"`
	Detail  string `json:"detail"`
}

// ListReport is `list --json`.
type ListReport struct {
	Socket string        `json:"socket"`
	Agents []ListedAgent `json:"agents"`
}

// ErrorReport is what --json prints for an error that ended the command.
type ErrorReport struct {
	Error    string `json:"error"`
	ExitCode int    `json:"exit_code"`
}

// Decode parses one JSON document printed on stdout.
func Decode[T any](stdout string) (T, error) {
	var v T
	if err := json.Unmarshal([]byte(stdout), &v); err != nil {
		return v, fmt.Errorf("stdout is not the expected JSON document: %w\n%s", err, stdout)
	}
	return v, nil
}

// Submitted is the exact text an agent receives for a message: the id, a
// colon and a space, then the text as agentmsg cleaned it.
func Submitted(id, text string) string { return id + ": " + text }
