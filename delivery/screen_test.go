package delivery

import (
	"strings"
	"testing"
)

func TestGenericRead(t *testing.T) {
	rule := strings.Repeat("─", 40)
	tests := []struct {
		name   string
		screen []string
		state  State
		box    string
		boxRow int
	}{
		{"claude idle", []string{"> earlier", "", rule, "❯\u00a0", rule, "  ? for shortcuts", "", ""}, Ready, "", 2},
		{"claude idle nbsp trimmed to space", []string{rule, "❯ ", rule}, Ready, "", 0},
		{"claude draft", []string{rule, "❯\u00a0half typed", rule, "  ? for shortcuts"}, Draft, "half typed", 0},
		{"claude multi-line draft", []string{rule, "❯\u00a0one", "  two", rule}, Draft, "one\ntwo", 0},
		{"claude busy", []string{"✻ Working…", rule, "❯\u00a0", rule, "  esc to interrupt"}, Busy, "", 1},
		{"claude busy above box", []string{"✻ Thinking… (esc to interrupt)", "", rule, "❯\u00a0", rule}, Busy, "", 2},
		{"permission dialog", []string{"> run it", " Bash command", "   rm -rf /", " Do you want to proceed?", " ❯ 1. Yes", "   2. No", " Esc to cancel"}, Dialog, "", -1},
		{"selection menu inside rules", []string{rule, "❯ 1. Yes", "  2. No", rule}, Dialog, "", -1},
		{"menu under the box", []string{rule, "❯\u00a0/mod", rule, " ❯ 1. /model"}, Dialog, "", -1},
		{"transcript quoting a dialog above an idle box", []string{"> Do you want to proceed? Esc to cancel", "❯ 1. Yes", rule, "❯\u00a0", rule, "  ? for shortcuts"}, Ready, "", 2},
		{"plain prompt", []string{"hello", "> "}, Ready, "", 1},
		{"plain prompt bare", []string{"hello", ">"}, Ready, "", 1},
		{"plain draft", []string{"hello", "> abc"}, Draft, "abc", 1},
		{"plain multi-line", []string{"hello", "> abc", "  def"}, Draft, "abc\ndef", 1},
		{"y/n question", []string{"Overwrite file? (y/n)"}, Dialog, "", -1},
		// A plain prompt's transcript is above it: a menu quoted there is
		// none; a menu cursor on the prompt's row is one, and a question
		// over the prompt may be the one it answers.
		{"plain prompt under a quoted menu", []string{"> MSG_LEAD_0badcafe: hi", "  ❯ 1. Yes", "  2. No", "> "}, Ready, "", 3},
		{"menu with a > cursor", []string{"Pick one:", "  1. Yes", "> 2. No", "  3. Cancel"}, Dialog, "", -1},
		{"question over a plain prompt", []string{"Overwrite file? (y/n)", "> "}, Dialog, "", -1},
		{"plain draft quoting a menu and a question", []string{"hello", "> MSG_LEAD_0badcafe: it asked (y/n)", "  ❯ 1. Yes"}, Draft, "MSG_LEAD_0badcafe: it asked (y/n)\n❯ 1. Yes", 1},
		{"shell prompt is not a box", []string{"$ ls", "a b", "$ "}, Unknown, "", -1},
		{"busy without box", []string{"working... (esc to interrupt)"}, Busy, "", -1},
		{"empty screen", []string{"", "", ""}, Unknown, "", -1},
		{"box far above bottom", append([]string{rule, "❯\u00a0", rule}, strings.Split(strings.Repeat("x\n", 20), "\n")...), Unknown, "", -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Generic{}.Read(tt.screen)
			if got.State != tt.state || got.Box != tt.box || got.BoxRow != tt.boxRow {
				t.Errorf("Read = %+v, want state %s box %q row %d", got, tt.state, tt.box, tt.boxRow)
			}
			if got.State != Ready && got.Detail == "" {
				t.Errorf("state %s without a detail", got.State)
			}
		})
	}
}

// A folded paste shows as one bracketed label of at most 80 characters.
func TestIsFoldLabel(t *testing.T) {
	for box, want := range map[string]bool{
		"[Pasted text #1 +11 lines]":            true,
		"  [Pasted Content 1200 chars]  ":       true,
		"[" + strings.Repeat("é", 80) + "]":     true,
		"[" + strings.Repeat("x", 81) + "]":     false,
		"[]":                                    false,
		"[a] [b]":                               false,
		"[two\nlines]":                          false,
		"MSG_LEAD_1: [Pasted text #1 +3 lines]": false,
	} {
		if got := isFoldLabel(box); got != want {
			t.Errorf("isFoldLabel(%.30q) = %v, want %v", box, got, want)
		}
	}
}
