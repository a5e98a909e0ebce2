package claudeharness

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The recorded screens of Claude Code 2.1.197 (testdata/screens, see
// NOTES.md) read as the states they were recorded in.
func TestRecordedScreens(t *testing.T) {
	t.Parallel()
	const noBox = "\x00none"
	tests := []struct {
		file                string
		box                 string // noBox: no input box
		ready, busy, queued bool
		dialog              bool
		statusHas           string
	}{
		{file: "01-idle-ready", box: "", ready: true, statusHas: "? for shortcuts"},
		{file: "02-typed-not-submitted", box: "MSG_0001: hello from agentmsg"},
		{file: "03-just-submitted", box: "", busy: true, statusHas: BusyStatus},
		{file: "04-after-reply", box: "", ready: true},
		{file: "05-busy", box: "", busy: true, statusHas: BusyStatus},
		// The status line is blank while the box holds text; the spinner
		// line above the box still says busy.
		{file: "06-busy-typed", box: "MSG_0003: sent while busy", busy: true},
		{file: "07-busy-queued", box: QueuedPlaceholder, busy: true, queued: true},
		{file: "08-queued-then-run", box: "", busy: true},
		{file: "09-interrupted", box: "", ready: true},
		{file: "10-permission-dialog", box: noBox, dialog: true},
		{file: "11-after-permission-yes", box: "", ready: true},
		{file: "12-multiline-paste", box: "[Pasted text #1 +11 lines]", statusHas: "paste again to expand"},
		// The hint outlives the paste: still there once the box is empty.
		{file: "13-multiline-submitted", box: "", ready: true, statusHas: "paste again to expand"},
		{file: "14-long-single-line-paste", box: "[Pasted text #2]"},
		{file: "15-three-line-paste", box: "MSG_0007: three\nline two\nline three"},
		{file: "16-person-draft", box: "I was typing this by hand"},
		{file: "17-paste-onto-draft", box: "I was typing this by handMSG_0008: pasted onto a draft"},
		{file: "18-shortcuts-help", box: "", ready: true, statusHas: "double tap esc to clear input"},
		{file: "19-draft-stashed", box: "", ready: true, statusHas: "› stashed"},
		{file: "20-stash-restored", box: "person draft here"},
		{file: "21-slash-command-picker", box: "/exit", statusHas: "/exit"},
		// After /exit the last frame stays on screen above the shell prompt.
		{file: "22-exited-to-shell", box: "/exit"},
		// First-start dialogs, with .claude.json pre-accepting nothing but
		// onboarding (80x24, blank lines dropped).
		{file: "30-first-start-dialog-1", box: noBox, dialog: true},
		{file: "31-first-start-dialog-2", box: noBox, dialog: true},
		{file: "32-ready-80x24", box: "", ready: true},
		// A message (or an answer) quoting a dialog's choice, a whole
		// dialog, or a spinner with "esc to interrupt": transcript only.
		{file: "40-quoted-choice-busy", box: "", busy: true, statusHas: BusyStatus},
		{file: "41-quoted-choice-after-reply", box: "", ready: true},
		{file: "42-quoted-dialog-after-reply", box: "", ready: true},
		{file: "43-reply-quotes-dialog", box: "", ready: true},
		{file: "44-quoted-spinner-after-reply", box: "", ready: true},
		{file: "45-queued-quoted-choice", box: QueuedPlaceholder, busy: true, queued: true},
		{file: "46-after-queued-quoted-choice", box: "", ready: true},
	}
	for _, tt := range tests {
		b, err := os.ReadFile(filepath.Join("testdata", "screens", tt.file+".txt"))
		if err != nil {
			t.Fatal(err)
		}
		screen := string(b)
		box, ok := FindBox(screen)
		switch {
		case tt.box == noBox && ok:
			t.Errorf("%s: found a box %q, want none", tt.file, box.Text)
		case tt.box != noBox && !ok:
			t.Errorf("%s: no box found", tt.file)
		case ok && box.Text != tt.box:
			t.Errorf("%s: box = %q, want %q", tt.file, box.Text, tt.box)
		}
		if got := IsReady(screen); got != tt.ready {
			t.Errorf("%s: IsReady = %v, want %v", tt.file, got, tt.ready)
		}
		if got := IsBusy(screen); got != tt.busy {
			t.Errorf("%s: IsBusy = %v, want %v", tt.file, got, tt.busy)
		}
		if got := IsQueued(screen); got != tt.queued {
			t.Errorf("%s: IsQueued = %v, want %v", tt.file, got, tt.queued)
		}
		if got := IsDialog(screen); got != tt.dialog {
			t.Errorf("%s: IsDialog = %v, want %v", tt.file, got, tt.dialog)
		}
		if tt.statusHas != "" && !strings.Contains(box.Status, tt.statusHas) {
			t.Errorf("%s: status %q lacks %q", tt.file, box.Status, tt.statusHas)
		}
	}
}

func TestIsRule(t *testing.T) {
	t.Parallel()
	for line, want := range map[string]bool{
		strings.Repeat("─", 40):        true,
		strings.Repeat("─", 40) + "  ": true,
		strings.Repeat("─", 5):         false,
		"─── Claude Code ───":          false,
		"":                             false,
	} {
		if got := IsRule(line); got != want {
			t.Errorf("IsRule(%q) = %v", line, got)
		}
	}
}
