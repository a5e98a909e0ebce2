// Package profile knows the agent CLIs agentmsg types into: how each one's
// screen reads (a delivery.ScreenReader), how long to pause before the
// submit key, whether it queues text submitted while busy, and how it shows
// long pastes. Detect picks a profile for a pane from its foreground command
// and its screen; Apply changes or adds profiles from the config file.
//
// A profile is data plus, where needed, a small reader. The Claude Code
// reader is built from real captures (e2e/claude/testdata/screens); the
// others are reconstructed from the CLIs' public sources and
// conservative where unsure: an unrecognised screen reads Unknown, never
// Ready.
package profile

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentmsg/agentmsg/delivery"
)

// Profile says how one agent CLI behaves in a terminal.
type Profile struct {
	// Name: "claude", "codex", "gemini", "qwen", "droid", "aider", "python",
	// "shell", "generic", or a name the config file adds.
	Name string
	// Commands are the pane_current_command values that identify it.
	// Node-based CLIs often show "node"; then the screen decides.
	Commands []string
	// Settle is the pause between seeing the text in the box and pressing
	// the submit key. Codex takes an Enter within about 120 ms of fast input
	// as a newline (paste-burst guard), so its settle is above that.
	Settle time.Duration
	// SubmitKey is the byte sent to submit (0x0d, a raw CR, for all known
	// CLIs; see FIELD-NOTES on named Enter keys).
	SubmitKey byte
	// Queues: the CLI accepts text submitted while it is busy and runs it
	// after the current turn (Claude Code does, measured).
	Queues bool
	// BracketedPaste: the CLI turns bracketed paste on, so a pasted text
	// with several lines reaches it as one input. A program that does not
	// (a plain REPL, a read loop) takes each pasted line as submitted on
	// its own: a multi-line message then goes to it as one line, a
	// pointer to the whole text. On tmux 3.7 and newer the pane itself
	// says, and that decides (#{bracket_paste_flag}).
	BracketedPaste bool
	// FoldBytes and FoldLines: a paste with more bytes, or more lines, than
	// these is shown folded in the box ("[Pasted text #1 +11 lines]"), so
	// the text cannot be checked there. 0 means never folded on that count.
	FoldBytes, FoldLines int
	// Reader interprets the pane's screen (nil, where a delivery is
	// given one: its options' reader).
	Reader delivery.ScreenReader
	// PromptOnly: the reader takes any prompt of its kind as ready,
	// whatever program draws it (generic, python, shell), so the profile
	// names no agent CLI and cannot tell one from a shell or a REPL. Set
	// where a profile is defined: the builtins here, and Apply (a profile
	// the config file replaces keeps its own, one it adds is an agent
	// CLI's).
	PromptOnly bool
}

// codexPasteBurst is Codex's settle whatever a calibration measured: it
// takes an Enter within about 120 ms of fast input as a newline (its
// paste-burst guard, FIELD-NOTES), and a calibration types bracketed
// pastes only, which 0.169.0 and 0.171.0 took at once (0 ms needed). A
// Codex whose input is not a bracketed paste still has the guard.
const codexPasteBurst = 200 * time.Millisecond

// The submit key of every known CLI: a raw CR.
//
// Settle is a profile's own: a pause before the submit key only where an
// agent is known to need one. A program that enabled bracketed paste and
// already shows our whole text in its box has taken the paste, so the
// press can follow at once (generic, shell, aider: 0).
//
// The live CLIs' settles are calibrated: see calibration.go.
const cr = 0x0d

// shellCommands are the pane_current_command values of interactive shells.
var shellCommands = []string{"bash", "zsh", "sh", "fish", "dash", "ksh", "mksh", "tcsh", "csh"}

// Builtin returns the profiles agentmsg ships, in detection order. Each call
// returns fresh slices, so callers may change them.
func Builtin() []Profile {
	return []Profile{
		{
			// Measured with Claude Code 2.1.197 (e2e/claude/NOTES.md): 4 or
			// more lines, or one line over 800 characters, fold; it queues.
			Name: "claude", Commands: []string{"claude", "claude.exe"}, // npm's package runs bin/claude.exe
			Settle: calibratedSettle("claude"), SubmitKey: cr, Queues: true, BracketedPaste: true,
			FoldBytes: 800, FoldLines: 3,
			Reader: Claude{},
		},
		{
			// openai/codex tui: LARGE_PASTE_CHAR_THRESHOLD 1000 chars
			// ("[Pasted Content N chars]"), no fold by lines; the paste-burst
			// guard swallows an Enter within ~120 ms of fast input. Codex
			// 0.169 takes text submitted while busy at once, steering the
			// running turn (measured: it reaches the model once), so it may
			// be typed into while busy.
			//
			// FoldLines: Codex does not fold by lines, but a submitted text
			// taller than the pane pushes its id off the screen and out of
			// reach (measured with 0.169 at 24 rows: 24 lines, at 50 rows:
			// 45 lines were never confirmed, and retyped), so a text of
			// more than 15 lines goes as a pointer.
			Name: "codex", Commands: []string{"codex"},
			Settle: max(calibratedSettle("codex"), codexPasteBurst), SubmitKey: cr, Queues: true, BracketedPaste: true,
			FoldBytes: 1000, FoldLines: 15,
			Reader: Codex{},
		},
		{
			// Factory's Droid 0.225.2 (e2e/clis/DROID.md): pastes of more
			// than 8 lines fold ("[MSG_… 9 lines]"), and so do single
			// lines of 450 characters (400 did not). Enter while busy puts
			// the text under "Steering messages:" and sends it after the
			// running turn (measured: once). An Enter right after a paste
			// submitted it in every try, and 200 of 200 calibration sends.
			// Before gemini: its box is the rounded one Gemini CLI drew in
			// 2025, which that reader still takes.
			Name: "droid", Commands: []string{"droid"},
			Settle: calibratedSettle("droid"), SubmitKey: cr, Queues: true, BracketedPaste: true,
			FoldBytes: 400, FoldLines: 8,
			Reader: Droid{},
		},
		{
			// gemini-cli text buffer: "[Pasted Text: N lines]" above 5 lines
			// (seen in 0.61.0), "[Pasted Text: N chars]" above 500
			// characters (read in source). Text submitted while busy waits
			// under "Queued (press ↑ to edit):" and runs after the turn
			// (measured: once).
			Name: "gemini", Commands: []string{"gemini"},
			Settle: calibratedSettle("gemini"), SubmitKey: cr, Queues: true, BracketedPaste: true,
			FoldBytes: 500, FoldLines: 5,
			Reader: Gemini{Product: "Gemini CLI"},
		},
		{
			// QwenLM/qwen-code InputPrompt: "[Pasted Content N chars]" above
			// 1000 characters or 10 lines (0.24.4 folds 12 lines of 168
			// characters). Enter while busy queues the text ("⏳ 1 queued"),
			// run after the turn (measured: once).
			Name: "qwen", Commands: []string{"qwen"},
			Settle: calibratedSettle("qwen"), SubmitKey: cr, Queues: true, BracketedPaste: true,
			FoldBytes: 1000, FoldLines: 10,
			Reader: Gemini{Product: "Qwen Code"},
		},
		{
			// aider reads with prompt_toolkit (bracketed paste); no folding.
			Name: "aider", Commands: []string{"aider"},
			SubmitKey: cr, BracketedPaste: true,
			Reader: Aider{},
		},
		{
			// python3's interactive interpreter: ">>> ", and "... " while
			// a statement goes on; each line is taken when the next
			// prompt shows under it. Not assumed to turn bracketed paste
			// on, so a message of several lines goes to it as one line.
			// python3 runs scripts and agent CLIs too (python3 -m
			// aider): their processes and screens are looked at first.
			Name: "python", Commands: []string{"python3", "python"},
			SubmitKey: cr, PromptOnly: true,
			Reader: mustPrompt(`(>>>|\.\.\.) `),
		},
		{
			// A shell runs whatever is typed: never an agent.
			Name: "shell", Commands: slices.Clone(shellCommands),
			SubmitKey: cr, PromptOnly: true,
			Reader: Shell{},
		},
		{
			Name:      "generic",
			SubmitKey: cr, PromptOnly: true,
			Reader: Generic{},
		},
	}
}

// Lookup returns the builtin profile with that name.
func Lookup(name string) (Profile, bool) {
	return LookupIn(Builtin(), name)
}

// LookupIn returns the profile with that name from profiles (for example the
// result of Apply).
func LookupIn(profiles []Profile, name string) (Profile, bool) {
	for _, p := range profiles {
		if p.Name == name {
			return p, true
		}
	}
	return Profile{}, false
}

// Detect picks a builtin profile from the pane's foreground command and its
// screen, and says why.
func Detect(command string, screen []string) (Profile, string) {
	return DetectIn(Builtin(), command, screen)
}

// DetectIn picks a profile from profiles (builtins changed or extended by
// Apply) by the foreground command and the screen; see DetectPane.
func DetectIn(profiles []Profile, command string, screen []string) (Profile, string) {
	return DetectPane(profiles, Pane{Command: command}, screen)
}

// Pane is what detection knows of a pane besides its screen.
type Pane struct {
	Command string // pane_current_command: "claude", "node", "bash", ...
	// Procs, when set, returns the arguments of the pane's foreground
	// processes (Procs.Foreground); called only when the command alone does
	// not decide.
	Procs func() [][]string
}

// DetectPane picks a profile from profiles. The foreground command decides
// first, by exact match; a profile later in the list wins a command claimed
// twice, so a profile the config adds beats a builtin. A shell or an
// interpreter (python3, node) as the foreground command is only a guess,
// though: it may run an agent CLI or a program of the config's. Next come
// the foreground processes: a Node launcher ("node …/bin/codex.js") or a
// wrapper shell running the CLI is known by the CLI's arguments, a script
// by its name among a profile's commands (bash running …/myrepl is
// "myrepl"), and trusted as its command would be. The guess still yields
// to an agent whose live screen is recognised. Otherwise the screen
// decides; failing all, the profile named "generic".
func DetectPane(profiles []Profile, pane Pane, screen []string) (Profile, string) {
	cmd := strings.TrimSpace(pane.Command)
	var guess *Profile
	if cmd != "" {
		for i := len(profiles) - 1; i >= 0; i-- {
			p := profiles[i]
			if !slices.Contains(p.Commands, cmd) {
				continue
			}
			if !isShellProfile(p) && !isInterpreter(cmd) {
				return p, "foreground command " + cmd
			}
			guess = &p
			break
		}
	}
	if pane.Procs != nil {
		procs := pane.Procs()
		if name, argv := IdentifyAll(procs); name != "" {
			if p, ok := byCLI(profiles, name); ok {
				return p, fmt.Sprintf("foreground process %s (%s)", name, clipArgs(argv))
			}
		}
		if p, name, argv, ok := byProgram(profiles, procs); ok {
			return p, fmt.Sprintf("foreground process %s (%s)", name, clipArgs(argv))
		}
	}
	if guess != nil {
		if q, why, ok := recognize(profiles, screen); ok {
			q, why = screenOnly(q, why)
			return q, fmt.Sprintf("foreground command %s, but the %s", cmd, why)
		}
		if isShellProfile(*guess) {
			return *guess, fmt.Sprintf("foreground command %s: a shell", cmd)
		}
		return *guess, "foreground command " + cmd
	}
	if p, why, ok := recognize(profiles, screen); ok {
		return screenOnly(p, why)
	}
	g, ok := LookupIn(profiles, "generic")
	if !ok {
		g, _ = Lookup("generic")
	}
	if cmd == "" {
		return g, "foreground command unknown: generic"
	}
	return g, "unknown program " + cmd + ": generic"
}

// byCLI is the profile for a CLI a process was identified as: the last one
// that claims its name as a command (a profile the config adds for it wins),
// else the builtin of that name.
func byCLI(profiles []Profile, name string) (Profile, bool) {
	for i := len(profiles) - 1; i >= 0; i-- {
		if slices.Contains(profiles[i].Commands, name) {
			return profiles[i], true
		}
	}
	return LookupIn(profiles, name)
}

// clipArgs shows a process's arguments in a detail, shortened.
func clipArgs(argv []string) string {
	s := strings.Join(argv, " ")
	if r := []rune(s); len(r) > 100 {
		s = string(r[:100]) + "…"
	}
	return s
}

// screenOnly adjusts a profile recognised by its screen alone: a program
// that draws the same box may not queue what is submitted while it works,
// and text typed into a busy one that does not would sit in its box. So
// it is waited for instead (only the CLI's own command earns queueing).
func screenOnly(p Profile, why string) (Profile, string) {
	if p.Queues {
		p.Queues = false
		why += " (not its command, so it is not trusted to queue while busy)"
	}
	return p, why
}

// recognizer is implemented by readers that can tell their own CLI's live
// screen: why is "screen shows Claude Code's input box".
type recognizer interface {
	recognize(lines []string) (why string, ok bool)
}

// recognize returns the first profile whose reader recognises the screen.
// Builtins come first, so a profile based on claude does not take Claude's
// screens from claude.
func recognize(profiles []Profile, screen []string) (Profile, string, bool) {
	lines := trimScreen(screen)
	if len(lines) == 0 {
		return Profile{}, "", false
	}
	for _, p := range profiles {
		if r, ok := p.Reader.(recognizer); ok {
			if why, ok := r.recognize(lines); ok {
				return p, why, true
			}
		}
	}
	return Profile{}, "", false
}

func isShellProfile(p Profile) bool {
	switch r := p.Reader.(type) {
	case Shell:
		return true
	case patterned:
		_, ok := r.base.(Shell)
		return ok
	}
	return false
}
