package profile

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentmsg/agentmsg/delivery"
)

// The fixtures under testdata/ are reconstructions from the CLIs' sources
// and published captures, not captures of our own (see testdata/README.md).
func TestReconstructedScreens(t *testing.T) {
	codex, gemini, qwen := Codex{}, Gemini{Product: "Gemini CLI"}, Gemini{Product: "Qwen Code"}
	tests := []struct {
		file   string
		reader delivery.ScreenReader
		want   want
		detail string // a part of the detail, when it matters
	}{
		{"codex/idle.txt", codex, want{state: delivery.Ready, boxRow: 13}, ""},
		{"codex/idle-other-placeholder.txt", codex, want{state: delivery.Ready, boxRow: 16}, ""},
		{"codex/draft.txt", codex, want{state: delivery.Draft, box: "MSG_ab12: please review\nthe second line", boxRow: 13}, ""},
		{"codex/busy.txt", codex, want{state: delivery.Busy, boxRow: 19}, ""},
		{"codex/busy-queued.txt", codex, want{state: delivery.Busy, boxRow: 19, queued: true}, ""},
		{"codex/approval.txt", codex, want{state: delivery.Dialog, boxRow: -1}, "Would you like to run the following command?"},
		{"codex/old-composer.txt", codex, want{state: delivery.Ready, boxRow: 0}, ""},
		{"codex/old-draft.txt", codex, want{state: delivery.Draft, box: "[Pasted Content 1005 chars]", boxRow: 0}, ""},
		{"codex/streaming-no-composer.txt", codex, want{state: delivery.Unknown, boxRow: -1}, ""},
		{"codex/exited.txt", codex, want{state: delivery.Unknown, boxRow: -1, shell: true}, shellDetail},

		{"gemini/idle-boxed.txt", gemini, want{state: delivery.Ready, boxRow: 16}, ""},
		{"gemini/draft-boxed.txt", gemini, want{state: delivery.Draft, box: "MSG_ef56: first line\nsecond line", boxRow: 10}, ""},
		{"gemini/busy-boxed.txt", gemini, want{state: delivery.Busy, boxRow: 16}, ""},
		{"gemini/confirm-boxed.txt", gemini, want{state: delivery.Dialog, boxRow: -1}, "Allow execution of: 'rm'?"},
		{"gemini/yolo-draft-halfblock.txt", gemini, want{state: delivery.Draft, box: "MSG_0a1b: do it\nand this too", boxRow: 17}, ""},
		{"gemini/shell-mode-halfblock.txt", gemini, want{state: delivery.Unknown, boxRow: -1}, "shell mode"},
		{"gemini/exited.txt", gemini, want{state: delivery.Unknown, boxRow: -1, shell: true}, shellDetail},
		{"qwen/idle.txt", qwen, want{state: delivery.Ready, boxRow: 8}, ""},
		{"qwen/draft.txt", qwen, want{state: delivery.Draft, box: "[Pasted Content 1532 chars]", boxRow: 8}, ""},

		{"aider/idle.txt", Aider{}, want{state: delivery.Ready, boxRow: 6}, ""},
		{"aider/idle-files.txt", Aider{}, want{state: delivery.Ready, boxRow: 7}, ""},
		{"aider/draft.txt", Aider{}, want{state: delivery.Draft, box: "MSG_77aa: look at main.go", boxRow: 6}, ""},
		{"aider/question.txt", Aider{}, want{state: delivery.Dialog, boxRow: -1}, "Add file to the chat?"},
		{"aider/busy.txt", Aider{}, want{state: delivery.Busy, boxRow: -1}, ""},

		{"shell/bash.txt", Shell{}, want{state: delivery.Unknown, boxRow: -1, shell: true}, shellDetail},
		{"shell/root.txt", Shell{}, want{state: delivery.Unknown, boxRow: -1, shell: true}, shellDetail},
		{"shell/zsh.txt", Shell{}, want{state: delivery.Unknown, boxRow: -1, shell: true}, shellDetail},
		{"shell/running.txt", Shell{}, want{state: delivery.Unknown, boxRow: -1}, "no prompt"},
		{"shell/bash.txt", Generic{}, want{state: delivery.Unknown, boxRow: -1, shell: true}, shellDetail},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got := tt.reader.Read(readScreen(t, filepath.Join("testdata", tt.file)))
			check(t, got, tt.want)
			if !strings.Contains(got.Detail, tt.detail) {
				t.Errorf("detail %q, want it to contain %q", got.Detail, tt.detail)
			}
		})
	}
}

// No reader takes another CLI's screen, a dialog or a shell for a ready box.
func TestNoFalseReady(t *testing.T) {
	files, _ := filepath.Glob("testdata/*/*.txt")
	real, _ := filepath.Glob("testdata/*/*/*/*.txt")
	files = append(files, real...)
	claude, _ := filepath.Glob(filepath.Join(claudeScreens, "*.txt"))
	files = append(files, claude...)
	for _, p := range Builtin() {
		for _, f := range files {
			// Gemini CLI and its fork Qwen Code share one reader.
			family := map[string]string{"qwen": "gemini"}
			own := strings.Contains(f, "/"+p.Name+"/") || strings.Contains(f, "/"+family[p.Name]+"/") ||
				(p.Name == "gemini" && strings.Contains(f, "/qwen/")) ||
				(p.Name == "claude" || p.Name == "generic") && strings.Contains(f, "e2e/claude")
			if own {
				continue
			}
			r := p.Reader.Read(readScreen(t, f))
			// Droid draws the rounded box of Gemini CLI's 2025 releases,
			// which the Gemini reader still takes: an empty one is ready.
			droidReady := (p.Name == "gemini" || p.Name == "qwen") && strings.Contains(f, "/droid/") &&
				Droid{}.Read(readScreen(t, f)).State == delivery.Ready
			// A plain "> " line is every generic prompt, and aider's.
			if r.State == delivery.Ready && !droidReady && !(p.Name == "generic" && strings.Contains(f, "/aider/")) {
				t.Errorf("%s reads %s as ready: %+v", p.Name, f, r)
			}
		}
	}
}

func TestShellPrompt(t *testing.T) {
	for l, want := range map[string]bool{
		"$":                       true,
		"$ ":                      true,
		"user@host:~/work$ ":      true,
		"bash-5.2# ":              true,
		"[user@host work]$":       true,
		"host work % ":            true,
		"%":                       true,
		"100%":                    false,
		"  ? for shortcuts 5%":    false,
		"/compact   Free up 10%":  false,
		"❯ #":                     false,
		"> ":                      false,
		"user@host:~/work$ ls -l": false,
		"":                        false,
	} {
		if got := isShellPrompt(l); got != want {
			t.Errorf("isShellPrompt(%q) = %v, want %v", l, got, want)
		}
	}
}

// withTranscript is a real screen with rows added to its transcript just
// above row at (counted from the end of the trimmed screen).
func withTranscript(t *testing.T, file string, fromEnd int, rows ...string) []string {
	t.Helper()
	screen := trimScreen(readScreen(t, file))
	at := len(screen) - fromEnd
	return slices.Concat(screen[:at], rows, screen[at:])
}

// Codex 0.169.0 while a turn runs, seen live: its bullet blinks (◦), and a
// message sent meanwhile waits under a header of its own.
func TestCodexBusyWithAMessageWaiting(t *testing.T) {
	screen := withTranscript(t, "testdata/codex/0.169.0/80x24-256/idle.txt", 4,
		"› MSG_TESTER_b352d7a2: a long task", "", "◦ Working (0s • esc to interrupt)", "",
		"• Messages to be submitted after next tool call (press esc to interrupt and send immediately)",
		"  ↳ MSG_TESTER_39bae87e: kept until the turn ends", "")
	if r := (Codex{}).Read(screen); r.State != delivery.Busy || !r.Queued {
		t.Errorf("read as %s (%s), queued %v; want busy with a message queued", r.State, r.Detail, r.Queued)
	}
}

// A message or an answer quoting a dialog, a busy row or a queue sits in
// the transcript: no reader takes it for the real thing, however near the
// box it is. (Real screens of the same: the quoted-* and reply-quotes-*
// captures in testdata.)
func TestQuotesInTheTranscriptAreNoState(t *testing.T) {
	for _, tt := range []struct {
		name   string
		reader delivery.ScreenReader
		screen []string
	}{
		// Codex: prompts at column 0, their lines indented by two, right
		// on top of the composer.
		{"codex", Codex{}, withTranscript(t, "testdata/codex/0.169.0/80x24-256/idle.txt", 4,
			"› MSG_0001: it asked", "  › 1. Yes, proceed (y)", "  • Working (0s • esc to interrupt)", "  ↳ MSG_0002: queued", "")},
		// Qwen Code: the transcript runs into the rule over the box.
		{"qwen", Gemini{Product: "Qwen Code"}, withTranscript(t, "testdata/qwen/0.24.4/120x40-truecolor/idle.txt", 5,
			"  > MSG_0001: it said", "    ⠏ Waiting for user confirmation...", "    ● 1. Allow once", "  ◆︎ ok")},
		// Droid: a message quoting its steering queue and spinner.
		{"droid", Droid{}, withTranscript(t, "testdata/droid/0.225.2/100x24-truecolor/idle.txt", 5,
			"   MSG_0001: it showed", "   Steering messages:", "   Ctrl+R to modify queue", "   ⠘ Thinking...  (Press ESC to stop)", "⛬  ok", "")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if r := tt.reader.Read(tt.screen); r.State != delivery.Ready || r.Queued {
				t.Errorf("read as %s (%s), queued %v; want ready\n%s", r.State, r.Detail, r.Queued, strings.Join(tt.screen, "\n"))
			}
		})
	}
}
