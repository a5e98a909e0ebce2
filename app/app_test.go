package app

import (
	"testing"

	"github.com/agentmsg/agentmsg/profile"
	"github.com/agentmsg/agentmsg/tmux"
)

// A pane's program tells the agent's pane from the others in its session
// only when it is an agent CLI (or a program the config names): a shell or
// a python3 REPL a person left beside it is not one.
func TestKnownAgent(t *testing.T) {
	profiles, err := profile.Apply(profile.Builtin(), map[string]profile.Override{
		"myrepl": {Base: "generic", Commands: []string{"myrepl"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	known := knownAgent(profiles)
	for command, want := range map[string]bool{"claude": true, "myrepl": true, "bash": false, "python3": false, "vim": false} {
		if name, ok := known(tmux.Pane{Command: command}); ok != want {
			t.Errorf("%s: known %v (%s), want %v", command, ok, name, want)
		}
	}
}
