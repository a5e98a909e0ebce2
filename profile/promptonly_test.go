package profile

import "testing"

// What a profile is (an agent CLI's, or one that takes any prompt) goes
// with its name: set on the builtins, kept by a profile the config file
// replaces whatever its base, and never inherited by one it adds.
func TestPromptOnlyGoesWithTheName(t *testing.T) {
	for _, p := range Builtin() {
		want := p.Name == "generic" || p.Name == "shell" || p.Name == "python"
		if p.PromptOnly != want {
			t.Errorf("builtin %s: PromptOnly %v, want %v", p.Name, p.PromptOnly, want)
		}
	}
	ps, err := Apply(Builtin(), map[string]Override{
		"myrepl":  {Base: "generic", Commands: []string{"myrepl"}},
		"generic": {Base: "claude"},
		"python":  {Commands: []string{"python3"}},
		"claude":  {Base: "shell"},
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{"myrepl": false, "generic": true, "python": true, "claude": false, "shell": true} {
		if p, _ := LookupIn(ps, name); p.PromptOnly != want {
			t.Errorf("%s after Apply: PromptOnly %v, want %v", name, p.PromptOnly, want)
		}
	}
}
