package clisharness

import "testing"

// Trust menus as Claude Code draws them (the rule and the question left
// out); the cursor starts on a different choice in each version.
const (
	trustMenu2_1_197 = " Security guide\n\n ❯ 1. Yes, I trust this folder\n   2. No, exit\n\n Enter to confirm · Esc to cancel\n"
	trustMenu2_1_332 = " Security guide\n\n ❯ No, exit\n   Yes, I trust this folder\n\n Enter to confirm · Esc to cancel\n"
	trustMenuUp      = " Security guide\n\n   Yes, I trust this folder\n ❯ No, exit\n\n Enter to confirm · Esc to cancel\n"
	codexModelMenu   = "› 1. Try new model\n  2. Use existing model\n\n› Ask Codex to do anything\n"
)

func TestMenuKey(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, screen, want string
		key                string
		selected           bool
	}{
		{"2.1.197 starts on it", trustMenu2_1_197, "Yes, I trust this folder", "", true},
		{"2.1.332 starts above it", trustMenu2_1_332, "Yes, I trust this folder", "Down", false},
		{"cursor below it", trustMenuUp, "Yes, I trust this folder", "Up", false},
		{"the box's ❯ is no cursor", "❯\u00a0Yes, I trust this folder\n", "Yes, I trust this folder", "Down", false},
		{"want holding the cursor, not yet there", codexModelMenu, "› 2. Use existing model", "Down", false},
		{"want holding the cursor, there", "  1. Try new model\n› 2. Use existing model\n", "› 2. Use existing model", "", true},
	} {
		key, selected := menuKey(c.screen, c.want)
		if key != c.key || selected != c.selected {
			t.Errorf("%s: got (%q, %v), want (%q, %v)", c.name, key, selected, c.key, c.selected)
		}
	}
}
