package profile

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentmsg/agentmsg/delivery"
)

func TestBuiltin(t *testing.T) {
	names := map[string]bool{}
	commands := map[string]string{}
	for _, p := range Builtin() {
		if names[p.Name] {
			t.Errorf("profile %s twice", p.Name)
		}
		names[p.Name] = true
		if p.Reader == nil || p.SubmitKey != 0x0d || p.Settle < 0 {
			t.Errorf("%s: reader %v, submit key %#x, settle %s", p.Name, p.Reader, p.SubmitKey, p.Settle)
		}
		for _, c := range p.Commands {
			if other, ok := commands[c]; ok {
				t.Errorf("command %s claimed by %s and %s", c, other, p.Name)
			}
			commands[c] = p.Name
		}
	}
	for _, n := range []string{"claude", "codex", "gemini", "qwen", "droid", "aider", "shell", "generic"} {
		if _, ok := Lookup(n); !ok {
			t.Errorf("Lookup(%q) found nothing", n)
		}
	}
	if _, ok := Lookup("nope"); ok {
		t.Error("Lookup found an unknown profile")
	}
	if p, _ := Lookup("codex"); p.Settle < 150*time.Millisecond {
		t.Errorf("codex settle %s is inside its paste-burst window", p.Settle)
	}
	// A Codex text taller than a 24-row pane is never confirmed (measured).
	if p, _ := Lookup("codex"); p.FoldLines == 0 || p.FoldLines > 16 || !p.Queues {
		t.Errorf("codex: %+v", p)
	}
	if p, _ := Lookup("claude"); !p.Queues || p.FoldBytes != 800 || p.FoldLines != 3 {
		t.Errorf("claude: %+v", p)
	}
	// Builtin returns copies.
	Builtin()[0].Commands[0] = "changed"
	if p, _ := Lookup("claude"); p.Commands[0] != "claude" {
		t.Error("Builtin shares its slices")
	}
}

func TestDetect(t *testing.T) {
	screen := func(name string) []string {
		if strings.HasPrefix(name, "claude:") {
			return readScreen(t, filepath.Join(claudeScreens, strings.TrimPrefix(name, "claude:")))
		}
		return readScreen(t, filepath.Join("testdata", name))
	}
	tests := []struct {
		command, screen string
		want, why       string
	}{
		{"claude", "claude:01-idle-ready.txt", "claude", "foreground command claude"},
		{"claude", "claude:10-permission-dialog.txt", "claude", "foreground command claude"},
		{"node", "claude:01-idle-ready.txt", "claude", "screen shows Claude Code's input box (not its command, so it is not trusted to queue while busy)"},
		{"node", "claude:30-first-start-dialog-1.txt", "claude", "screen shows a Claude Code dialog (not its command, so it is not trusted to queue while busy)"},
		{"2.1.197", "claude:05-busy.txt", "claude", "screen shows Claude Code's input box (not its command, so it is not trusted to queue while busy)"},
		{"bash", "claude:22-exited-to-shell.txt", "shell", "foreground command bash: a shell"},
		{"node", "claude:22-exited-to-shell.txt", "generic", "unknown program node: generic"},
		{"bash", "claude:16-person-draft.txt", "claude", "foreground command bash, but the screen shows Claude Code's input box (not its command, so it is not trusted to queue while busy)"},
		{"zsh", "shell/zsh.txt", "shell", "foreground command zsh: a shell"},
		{"codex", "codex/approval.txt", "codex", "foreground command codex"},
		{"node", "codex/idle.txt", "codex", "screen shows the OpenAI Codex banner (not its command, so it is not trusted to queue while busy)"},
		{"node", "codex/old-composer.txt", "codex", "screen shows Codex's composer (not its command, so it is not trusted to queue while busy)"},
		{"node", "gemini/idle-boxed.txt", "gemini", "screen shows Gemini CLI's input box (not its command, so it is not trusted to queue while busy)"},
		{"node", "gemini/0.61.0/120x40-truecolor/idle.txt", "gemini", "screen shows Gemini CLI's input box (not its command, so it is not trusted to queue while busy)"},
		{"node", "gemini/0.61.0/80x24-256/busy.txt", "gemini", "screen shows Gemini CLI's input box (not its command, so it is not trusted to queue while busy)"},
		{"node", "codex/0.169.0/80x24-256/tall-12.txt", "codex", "screen shows Codex's composer (not its command, so it is not trusted to queue while busy)"},
		{"node", "qwen/idle.txt", "qwen", "screen shows Qwen Code's input box (not its command, so it is not trusted to queue while busy)"},
		{"qwen", "qwen/draft.txt", "qwen", "foreground command qwen"},
		{"droid", "droid/0.225.2/100x24-256/busy-typed.txt", "droid", "foreground command droid"},
		{"node", "droid/0.225.2/100x50-truecolor/idle.txt", "droid", "screen shows Droid's input box (not its command, so it is not trusted to queue while busy)"},
		{"node", "droid/0.225.2/100x24-truecolor/busy.txt", "droid", "screen shows Droid's input box (not its command, so it is not trusted to queue while busy)"},
		{"python3", "aider/idle.txt", "aider", "foreground command python3, but the screen shows aider's banner"},
		{"vim", "shell/running.txt", "generic", "unknown program vim: generic"},
		{"", "shell/running.txt", "generic", "foreground command unknown: generic"},
	}
	for _, tt := range tests {
		t.Run(tt.command+" "+tt.screen, func(t *testing.T) {
			p, why := Detect(tt.command, screen(tt.screen))
			if p.Name != tt.want || why != tt.why {
				t.Errorf("Detect = %s, %q; want %s, %q", p.Name, why, tt.want, tt.why)
			}
			// Only the CLI's own command earns queueing while busy.
			if p.Queues && !strings.HasPrefix(why, "foreground command "+tt.command) {
				t.Errorf("queues, detected by %q", why)
			}
		})
	}
	if p, _ := Detect("claude.exe", nil); p.Name != "claude" || !p.Queues {
		t.Errorf("claude.exe (npm's binary) = %s, queues %v", p.Name, p.Queues)
	}
	if p, why := Detect("node", nil); p.Name != "generic" || why == "" {
		t.Errorf("empty screen: %s, %q", p.Name, why)
	}
}

func ptr[T any](v T) *T { return &v }

func TestApply(t *testing.T) {
	base := Builtin()
	got, err := Apply(base, map[string]Override{
		"codex": {Settle: ptr(300 * time.Millisecond), Queues: ptr(true), Commands: []string{"codex", "codex-x86_64"}},
		// Based on another that this config adds.
		"myclaude2": {Base: "myclaude", FoldLines: ptr(1), Commands: []string{"cc2"}},
		"myclaude":  {Base: "claude", Commands: []string{"claude", "cc"}, FoldBytes: ptr(0)},
		"repl": {Base: "generic", Commands: []string{"myrepl"},
			ReadyPattern: `^ok>$`, BusyPattern: `^working`, DialogPattern: `\[confirm\]`, PlaceholderPattern: `^type here$`},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(base[1].Commands) != 1 || base[1].Settle != 200*time.Millisecond {
		t.Errorf("Apply changed its input: %+v", base[1])
	}
	codex, _ := LookupIn(got, "codex")
	if codex.Settle != 300*time.Millisecond || !codex.Queues || len(codex.Commands) != 2 || codex.FoldBytes != 1000 {
		t.Errorf("codex override: %+v", codex)
	}
	mc, ok := LookupIn(got, "myclaude")
	if !ok || mc.FoldBytes != 0 || mc.FoldLines != 3 || !mc.Queues {
		t.Errorf("myclaude: %+v", mc)
	}
	mc2, ok := LookupIn(got, "myclaude2")
	if !ok || mc2.FoldLines != 1 || mc2.FoldBytes != 0 || !mc2.Queues || mc2.Commands[0] != "cc2" {
		t.Errorf("myclaude2: %+v", mc2)
	}
	if len(got) != len(base)+3 {
		t.Errorf("%d profiles, want %d", len(got), len(base)+3)
	}

	// A command claimed again: the added profile wins; Claude's own screen
	// still detects as claude.
	if p, why := DetectIn(got, "claude", nil); p.Name != "myclaude" {
		t.Errorf("DetectIn(claude) = %s (%s), want myclaude", p.Name, why)
	}
	if p, _ := DetectIn(got, "node", readScreen(t, filepath.Join(claudeScreens, "01-idle-ready.txt"))); p.Name != "claude" {
		t.Errorf("Claude's screen detected as %s", p.Name)
	}

	repl, _ := LookupIn(got, "repl")
	if p, _ := DetectIn(got, "myrepl", nil); p.Name != "repl" {
		t.Errorf("DetectIn(myrepl) = %s", p.Name)
	}
	for _, tt := range []struct {
		screen []string
		want   want
	}{
		{[]string{"hello", "ok> "}, want{state: delivery.Ready, boxRow: 1}},
		{[]string{"working on it", "ok> "}, want{state: delivery.Busy, boxRow: -1}},
		{[]string{"delete it? [confirm]"}, want{state: delivery.Dialog, boxRow: -1}},
		{[]string{"x", "> type here"}, want{state: delivery.Ready, boxRow: 1}},
		{[]string{"x", "> my draft"}, want{state: delivery.Draft, box: "my draft", boxRow: 1}},
		{[]string{"working", "> my draft"}, want{state: delivery.Busy, box: "my draft", boxRow: 1}},
		{[]string{"ok> ls", "user@host:~$ "}, want{state: delivery.Unknown, boxRow: -1, shell: true}},
	} {
		check(t, repl.Reader.Read(tt.screen), tt.want)
	}
}

// A dialog pattern over a CLI that draws its box apart from the transcript
// matches the box and what is under it, never a message above it that
// quotes the dialog; over a plain prompt, the question may stand above it.
func TestDialogPatternIsNotReadFromTheTranscript(t *testing.T) {
	got, err := Apply(Builtin(), map[string]Override{
		"mine":  {Base: "claude", DialogPattern: `\[confirm\]`},
		"plain": {Base: "generic", DialogPattern: `\[confirm\]`},
	})
	if err != nil {
		t.Fatal(err)
	}
	mine, _ := LookupIn(got, "mine")
	plain, _ := LookupIn(got, "plain")
	rule := strings.Repeat("─", 40)
	for _, tt := range []struct {
		name   string
		reader delivery.ScreenReader
		screen []string
		want   delivery.State
	}{
		{"quoted above the box", mine.Reader, []string{"❯ MSG_LEAD_0badcafe: it asked", "  delete it? [confirm]", "", rule, "❯\u00a0", rule, "  ? for shortcuts"}, delivery.Ready},
		{"under the box", mine.Reader, []string{"", rule, "❯\u00a0", rule, "  delete it? [confirm]"}, delivery.Dialog},
		{"over a plain prompt", plain.Reader, []string{"delete it? [confirm]", "> "}, delivery.Dialog},
	} {
		if rd := tt.reader.Read(tt.screen); rd.State != tt.want {
			t.Errorf("%s: read as %s (%s), want %s", tt.name, rd.State, rd.Detail, tt.want)
		}
	}
}

func TestApplyErrors(t *testing.T) {
	for name, tt := range map[string]struct {
		o    map[string]Override
		want string
	}{
		"bad regexp":         {map[string]Override{"claude": {BusyPattern: `(`}}, `profile "claude": busy pattern "(":`},
		"unknown, no base":   {map[string]Override{"mine": {Settle: ptr(time.Second)}}, `profile "mine": no such profile; to add one, give a base`},
		"unknown base":       {map[string]Override{"mine": {Base: "nope"}}, `profile "mine": base "nope": no such profile`},
		"cycle":              {map[string]Override{"a": {Base: "b"}, "b": {Base: "a"}}, "form a cycle"},
		"negative settle":    {map[string]Override{"codex": {Settle: ptr(-time.Second)}}, "negative"},
		"negative fold":      {map[string]Override{"codex": {FoldLines: ptr(-1)}}, "negative"},
		"empty command":      {map[string]Override{"codex": {Commands: []string{" "}}}, "empty command"},
		"bad ready pattern":  {map[string]Override{"x": {Base: "generic", ReadyPattern: `[`}}, `profile "x": ready pattern`},
		"bad dialog pattern": {map[string]Override{"x": {Base: "generic", DialogPattern: `a{2,1}`}}, `dialog pattern`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Apply(Builtin(), tt.o)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Apply error %v, want one containing %q", err, tt.want)
			}
		})
	}
	if got, err := Apply(Builtin(), nil); err != nil || len(got) != len(Builtin()) {
		t.Errorf("Apply(nil) = %d profiles, %v", len(got), err)
	}
}

// A permission dialog caught half drawn over Claude Code's old box shows
// its choices above the box: that is a dialog, never an empty box.
func TestClaudeHalfDrawnDialogIsADialog(t *testing.T) {
	rule := strings.Repeat("─", 60)
	screen := []string{
		"● Bash(touch /tmp/x/ran)",
		"  ⎿  Waiting…",
		"",
		rule,
		" Bash command",
		"   touch /tmp/x/ran",
		" Do you want to proceed?",
		" ❯ 1. Yes",
		"   2. No",
		rule,
		"❯\u00a0",
		rule,
		"  ? for shortcuts",
	}
	if rd := (Claude{}).Read(screen); rd.State != delivery.Dialog {
		t.Fatalf("read as %s (%s), want a dialog", rd.State, rd.Detail)
	}
	// An assistant's numbered list above an idle box is no dialog.
	screen[4], screen[5], screen[6], screen[7], screen[8] = "● 1. First, the tests", "  2. Then the docs", "", "", ""
	if rd := (Claude{}).Read(screen); rd.State == delivery.Dialog {
		t.Fatalf("an answer's numbered list read as a dialog: %s", rd.Detail)
	}
}
