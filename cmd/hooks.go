package cmd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/receipt"
)

func NewCmdHooks(f *Factory) *cobra.Command {
	c := &cobra.Command{
		Use:   "hooks",
		Short: "Install agentmsg's hooks into an agent CLI's settings",
	}
	var dir string
	var print bool
	install := &cobra.Command{
		Use:   "install claude|gemini",
		Short: "Add agentmsg's prompt-submit and turn-end hooks to a project's agent CLI settings (writes the file; --print to only show it)",
		Long: `Install merges two hooks into the project's settings of an agent CLI (DIR:
--dir, default the current directory), keeping everything else in the file,
and does nothing when they are there already:

  claude  DIR/.claude/settings.json: UserPromptSubmit and Stop
  gemini  DIR/.gemini/settings.json: BeforeAgent and AfterAgent

The prompt-submit hook records the id of every message the agent really
submits (Claude Code: a queued one when it is sent): send confirms by this
receipt, which no folding or scrolling of the screen hides. The turn-end hook
types the messages kept for agents that were busy (agentmsg deliver), in the
background.

` + installHelp + `

agentmsg mcp install behaves the same way.

Codex, Qwen Code and aider have no prompt-submit hook that agentmsg can use;
their deliveries are confirmed from the screen. The Gemini CLI hooks follow
its hooks reference and have not been run against a live Gemini CLI here.`,
		Example: `  agentmsg hooks install claude
  agentmsg hooks install gemini --dir ~/src/project --print`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) != 1 || hookCLIs[args[0]].dir == "" {
				return usagef("hooks install: want the agent CLI: claude or gemini (the ones with a prompt-submit hook)")
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			exe, err := os.Executable()
			if err != nil {
				return err
			}
			if dir == "" {
				if dir, err = os.Getwd(); err != nil {
					return err
				}
			}
			root := mailbox.DefaultRoot(f.LookupEnv)
			receipts := receipt.DefaultPath(root)
			// The hooks run in the agent's environment: the server comes
			// from its $TMUX unless one was named here.
			var serverArgs string
			if fl := c.Flags().Lookup("socket"); fl != nil && fl.Changed {
				serverArgs = "-S " + shellQuote(fl.Value.String()) + " "
			} else if fl := c.Flags().Lookup("socket-name"); fl != nil && fl.Changed {
				serverArgs = "-L " + shellQuote(fl.Value.String()) + " "
			}
			cli := hookCLIs[args[0]]
			path := filepath.Join(dir, cli.dir, "settings.json")
			old, err := os.ReadFile(path)
			if errors.Is(err, os.ErrNotExist) {
				old, err = nil, nil
			}
			if err != nil {
				return err
			}
			merged, changed, err := mergeHooks(old, cli, hookCommands(cli, exe, root, receipts, serverArgs))
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			if !changed {
				merged = old // already there: leave the file exactly as it is
			}
			rep, err := installFile(args[0], path, old, merged, print, time.Now())
			if err != nil {
				return err
			}
			if f.JSON {
				writeJSON(f, rep)
				return nil
			}
			return printInstall(f.IO, rep, print,
				fmt.Sprintf("added agentmsg's %s and %s hooks to %s\nreceipts go to %s", cli.submit, cli.turnEnd, path, receipts))
		},
	}
	install.Flags().StringVar(&dir, "dir", "", "the project directory (default: the current one)")
	install.Flags().BoolVar(&print, "print", false, "print the settings file as it would be written, and write nothing")
	c.AddCommand(install)
	return c
}

// hookCLI is where an agent CLI keeps its project settings and what it
// calls the two events.
type hookCLI struct {
	dir             string // under the project: ".claude"
	submit, turnEnd string // event names
	// replyJSON: the CLI reads the hook's stdout as JSON, so the hook
	// prints "{}" (Claude Code would add plain stdout to the prompt).
	replyJSON bool
}

var hookCLIs = map[string]hookCLI{
	"claude": {dir: ".claude", submit: "UserPromptSubmit", turnEnd: "Stop"},
	"gemini": {dir: ".gemini", submit: "BeforeAgent", turnEnd: "AfterAgent", replyJSON: true},
}

// hookCommands are the hook command lines, by event. The mailbox root is
// fixed at install time: the agent's environment may not have the
// variables that located it.
func hookCommands(cli hookCLI, exe, root, receipts, serverArgs string) map[string]string {
	q := shellQuote
	submit := q(exe) + " hook prompt-submit --receipts " + q(receipts)
	// In the background: the turn is not over until the hook returns, and
	// deliver waits for the box it is holding up.
	turnEnd := "(AGENTMSG_HOME=" + q(root) + " " + q(exe) + " " + serverArgs + "deliver >/dev/null 2>&1 &)"
	if cli.replyJSON {
		submit += " --reply-json"
		turnEnd += "; echo '{}'"
	}
	return map[string]string{cli.submit: submit, cli.turnEnd: turnEnd}
}

// mergeHooks adds each command to settings' hooks unless a command of
// agentmsg's for that event is there; everything else is kept as it was.
func mergeHooks(old []byte, cli hookCLI, commands map[string]string) ([]byte, bool, error) {
	settings := map[string]any{}
	if len(bytes.TrimSpace(old)) > 0 {
		if err := json.Unmarshal(old, &settings); err != nil {
			return nil, false, fmt.Errorf("not valid JSON, left untouched: %w", err)
		}
	}
	hooks, _ := settings["hooks"].(map[string]any)
	if hooks == nil {
		if settings["hooks"] != nil {
			return nil, false, errors.New(`"hooks" is not an object, left untouched`)
		}
		hooks = map[string]any{}
	}
	changed := false
	for _, event := range []string{cli.submit, cli.turnEnd} {
		groups, _ := hooks[event].([]any)
		if hasAgentmsgHook(groups, commands[event]) {
			continue
		}
		groups = append(groups, map[string]any{
			"hooks": []any{map[string]any{"type": "command", "command": commands[event]}},
		})
		hooks[event] = groups
		changed = true
	}
	settings["hooks"] = hooks
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false) // keep > and & readable in the command lines
	enc.SetIndent("", "  ")
	if err := enc.Encode(settings); err != nil {
		return nil, false, err
	}
	return out.Bytes(), changed, nil
}

// hasAgentmsgHook reports whether groups hold want, or another command of
// an agentmsg (one installed from another path).
func hasAgentmsgHook(groups []any, want string) bool {
	for _, g := range groups {
		gm, _ := g.(map[string]any)
		hs, _ := gm["hooks"].([]any)
		for _, h := range hs {
			hm, _ := h.(map[string]any)
			cmd, _ := hm["command"].(string)
			if cmd == want {
				return true
			}
			if strings.Contains(cmd, "agentmsg") &&
				(strings.Contains(cmd, " hook prompt-submit") || strings.Contains(cmd, " deliver")) {
				return true
			}
		}
	}
	return false
}

// newCmdHookRun is what the installed hooks run; hidden from help.
func NewCmdHook(f *Factory) *cobra.Command {
	var receipts string
	var replyJSON bool
	c := &cobra.Command{
		Use:    "hook prompt-submit",
		Hidden: true,
		Short:  "Run by an agent CLI's prompt-submit hook: record the submitted message's id",
		Args:   argsBetween(1, 1, "prompt-submit"),
		RunE: func(c *cobra.Command, args []string) error {
			if args[0] != "prompt-submit" {
				return usagef("unknown hook %q", args[0])
			}
			// A hook must never stand in the agent's way: errors are
			// reported on stderr and the exit is 0.
			var in struct {
				Prompt string `json:"prompt"`
			}
			data, err := io.ReadAll(io.LimitReader(f.IO.In, 64<<20))
			if err == nil {
				err = json.Unmarshal(data, &in)
			}
			if err != nil {
				fmt.Fprintf(f.IO.ErrOut, "agentmsg hook: %s\n", showErr(err))
				if replyJSON {
					fmt.Fprintln(f.IO.Out, "{}")
				}
				return nil
			}
			if id, ok := receipt.FromPrompt(in.Prompt); ok {
				if err := (&receipt.Log{Path: receipts}).Record(id); err != nil {
					fmt.Fprintf(f.IO.ErrOut, "agentmsg hook: %s\n", showErr(err))
				}
			}
			if replyJSON {
				fmt.Fprintln(f.IO.Out, "{}") // allow, change nothing
			}
			return nil
		},
	}
	c.Flags().StringVar(&receipts, "receipts", "", "the receipts file")
	c.Flags().BoolVar(&replyJSON, "reply-json", false, `print "{}" on stdout (for CLIs that read the hook's answer as JSON)`)
	return c
}
