package profile

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentmsg/agentmsg/delivery"
)

// claudeScreens are the real captures of Claude Code 2.1.197.
const claudeScreens = "../e2e/claude/testdata/screens"

func readScreen(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(string(b), "\n")
}

type want struct {
	state  delivery.State
	box    string
	boxRow int
	queued bool
	shell  bool
}

func check(t *testing.T, got delivery.Reading, w want) {
	t.Helper()
	if got.State != w.state || got.Box != w.box || got.BoxRow != w.boxRow || got.Queued != w.queued || got.Shell != w.shell {
		t.Errorf("Read = %+v\nwant state %s box %q row %d queued %v shell %v", got, w.state, w.box, w.boxRow, w.queued, w.shell)
	}
	if got.State != delivery.Ready && got.Detail == "" {
		t.Errorf("state %s without a detail", got.State)
	}
	if got.State == delivery.Ready && got.Box != "" {
		t.Errorf("ready with text in the box: %q", got.Box)
	}
}

func TestClaudeRecordedScreens(t *testing.T) {
	tests := map[string]want{
		"01-idle-ready.txt":             {state: delivery.Ready, boxRow: 13},
		"02-typed-not-submitted.txt":    {state: delivery.Draft, box: "MSG_0001: hello from agentmsg", boxRow: 13},
		"03-just-submitted.txt":         {state: delivery.Busy, boxRow: 17},
		"04-after-reply.txt":            {state: delivery.Ready, boxRow: 19},
		"05-busy.txt":                   {state: delivery.Busy, boxRow: 24},
		"06-busy-typed.txt":             {state: delivery.Busy, box: "MSG_0003: sent while busy", boxRow: 24},
		"07-busy-queued.txt":            {state: delivery.Busy, boxRow: 26, queued: true},
		"08-queued-then-run.txt":        {state: delivery.Busy, boxRow: 32},
		"09-interrupted.txt":            {state: delivery.Ready, boxRow: 30},
		"10-permission-dialog.txt":      {state: delivery.Dialog, boxRow: -1},
		"11-after-permission-yes.txt":   {state: delivery.Ready, boxRow: 39},
		"12-multiline-paste.txt":        {state: delivery.Draft, box: "[Pasted text #1 +11 lines]", boxRow: 39},
		"13-multiline-submitted.txt":    {state: delivery.Ready, boxRow: 44},
		"14-long-single-line-paste.txt": {state: delivery.Draft, box: "[Pasted text #2]", boxRow: 44},
		"15-three-line-paste.txt":       {state: delivery.Draft, box: "MSG_0007: three\nline two\nline three", boxRow: 43},
		"16-person-draft.txt":           {state: delivery.Draft, box: "I was typing this by hand", boxRow: 41},
		"17-paste-onto-draft.txt":       {state: delivery.Draft, box: "I was typing this by handMSG_0008: pasted onto a draft", boxRow: 41},
		"18-shortcuts-help.txt":         {state: delivery.Ready, boxRow: 39},
		"19-draft-stashed.txt":          {state: delivery.Ready, boxRow: 39},
		"20-stash-restored.txt":         {state: delivery.Draft, box: "person draft here", boxRow: 44},
		"21-slash-command-picker.txt":   {state: delivery.Dialog, boxRow: -1},
		"22-exited-to-shell.txt":        {state: delivery.Unknown, boxRow: -1, shell: true},
		"30-first-start-dialog-1.txt":   {state: delivery.Dialog, boxRow: -1},
		"31-first-start-dialog-2.txt":   {state: delivery.Dialog, boxRow: -1},
		"32-ready-80x24.txt":            {state: delivery.Ready, boxRow: 13},
		// Messages and answers that quote a dialog, a spinner or the busy
		// status: the transcript, above the box, never makes a dialog.
		"40-quoted-choice-busy.txt":         {state: delivery.Busy, boxRow: 18},
		"41-quoted-choice-after-reply.txt":  {state: delivery.Ready, boxRow: 20},
		"42-quoted-dialog-after-reply.txt":  {state: delivery.Ready, boxRow: 30},
		"43-reply-quotes-dialog.txt":        {state: delivery.Ready, boxRow: 39},
		"44-quoted-spinner-after-reply.txt": {state: delivery.Ready, boxRow: 45},
		"45-queued-quoted-choice.txt":       {state: delivery.Busy, boxRow: 45, queued: true},
		"46-after-queued-quoted-choice.txt": {state: delivery.Ready, boxRow: 44},
	}
	files, err := filepath.Glob(filepath.Join(claudeScreens, "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no recorded screens in %s: %v", claudeScreens, err)
	}
	for _, f := range files {
		name := filepath.Base(f)
		w, ok := tests[name]
		if !ok {
			t.Errorf("%s: a recorded screen with no expectation; add one", name)
			continue
		}
		delete(tests, name)
		t.Run(name, func(t *testing.T) {
			check(t, Claude{}.Read(readScreen(t, f)), w)
		})
	}
	for name := range tests {
		t.Errorf("%s: expected but not recorded", name)
	}
}

// The details a person reads for the screens that refuse delivery.
func TestClaudeDetails(t *testing.T) {
	for name, want := range map[string]string{
		"10-permission-dialog.txt":    "dialog: Do you want to proceed?",
		"21-slash-command-picker.txt": "slash-command picker open: Enter would run /exit",
		"22-exited-to-shell.txt":      shellDetail,
		"31-first-start-dialog-2.txt": "dialog: Do you want to use this API key?",
	} {
		got := Claude{}.Read(readScreen(t, filepath.Join(claudeScreens, name)))
		if got.Detail != want {
			t.Errorf("%s: detail %q, want %q", name, got.Detail, want)
		}
	}
}

func TestClaudeSynthetic(t *testing.T) {
	rule := strings.Repeat("─", 40)
	tests := []struct {
		name   string
		screen []string
		want   want
	}{
		{"a ❯ in the transcript is no box", []string{"❯ earlier prompt", "● ok", "", "✻ Worked for 0s"}, want{state: delivery.Unknown, boxRow: -1}},
		{"menu inside the rules", []string{rule, "❯ 1. Yes", "  2. No", rule}, want{state: delivery.Dialog, boxRow: -1}},
		{"nbsp lost to a space", []string{rule, "❯ ", rule, "  ? for shortcuts"}, want{state: delivery.Ready, boxRow: 0}},
		{"draft with a blank line", []string{rule, "❯\u00a0one", "", "  three", rule}, want{state: delivery.Draft, box: "one\n\nthree", boxRow: 0}},
		{"busy with the spinner only", []string{"✢ Thinking… (3s · esc to interrupt)", "", rule, "❯\u00a0typed", rule, ""}, want{state: delivery.Busy, box: "typed", boxRow: 2}},
		{"shell prompt under a stale box", []string{rule, "❯\u00a0/exit", rule, "", "user@host:~/work$ "}, want{state: delivery.Unknown, boxRow: -1, shell: true}},
		{"context percentage in the status is no shell", []string{rule, "❯\u00a0", rule, "  Context left until auto-compact: 5%"}, want{state: delivery.Ready, boxRow: 0}},
		{"empty screen", []string{"", ""}, want{state: delivery.Unknown, boxRow: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			check(t, Claude{}.Read(tt.screen), tt.want)
		})
	}
}

// A dialog is read where Claude Code draws it: under its own rule, between
// the transcript and the box (half drawn over the box), or in the box's
// place. A choice quoted in the transcript, indented under its message, is
// no dialog, however near the box; a real one under it still is.
func TestClaudeDialogsOnlyWhereDrawn(t *testing.T) {
	rule := strings.Repeat("─", 60)
	box := []string{rule, "❯\u00a0", rule, "  ? for shortcuts"}
	quoted := []string{"❯ MSG_LEAD_0badcafe: hi", "  ❯ 1. Yes", "    2. No", ""}
	dialogTop := []string{rule, " Bash command", "   touch /tmp/x/ran", " Do you want to proceed?", " ❯ 1. Yes", "   2. No"}
	for _, tt := range []struct {
		name   string
		screen []string
		want   delivery.State
	}{
		{"a quoted choice right above the box", slices.Concat(quoted, box), delivery.Ready},
		{"a quoted choice above a half-drawn dialog", slices.Concat(quoted, dialogTop, box), delivery.Dialog},
		{"a quoted choice above a whole dialog", slices.Concat(quoted, dialogTop, []string{"", " Esc to cancel"}), delivery.Dialog},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if rd := (Claude{}).Read(tt.screen); rd.State != tt.want {
				t.Errorf("read as %s (%s), want %s", rd.State, rd.Detail, tt.want)
			}
		})
	}
}

// A permission dialog in place of the box is placed at its rule: the
// transcript above it, where the message that made the agent ask shows,
// is proof of that message; the dialog itself is not transcript.
func TestClaudeDialogIsPlacedAtItsRule(t *testing.T) {
	lines := readScreen(t, filepath.Join(claudeScreens, "10-permission-dialog.txt"))
	r := Claude{}.Read(lines)
	if r.State != delivery.Dialog || r.DialogRow <= 0 {
		t.Fatalf("Read = %+v, want a dialog with its row", r)
	}
	if !isRule(lines[r.DialogRow]) || !slices.ContainsFunc(lines[:r.DialogRow], func(l string) bool { return strings.HasPrefix(l, "❯ MSG_0004: run it") }) {
		t.Errorf("DialogRow %d: %q; want the rule under the transcript that ends with MSG_0004", r.DialogRow, lines[r.DialogRow])
	}
	if slices.ContainsFunc(lines[r.DialogRow:], func(l string) bool { return strings.Contains(l, "MSG_") }) {
		t.Errorf("rows under DialogRow %d hold transcript", r.DialogRow)
	}
}
