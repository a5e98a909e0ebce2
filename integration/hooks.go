package integration

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentmsg/agentmsg/internal/safedir"
	"github.com/agentmsg/agentmsg/internal/shell"
	"github.com/agentmsg/agentmsg/receipt"
)

// HookInstall asks for agentmsg's two hooks in a project's settings of one
// CLI.
type HookInstall struct {
	CLI      string
	Dir      string // the project
	Exe      string // the agentmsg the hooks run
	Root     string // the mailbox root, fixed at install time (the agent's environment may lack what located it)
	Receipts string // the receipts log the prompt-submit hook appends to
	// Server are the arguments that name the tmux server deliver reaches
	// ("-S", path or "-L", name); none: the agent's own, from its $TMUX.
	Server []string
	Print  bool // only report the file as it would be
	Now    time.Time
}

// ErrNoHooks: the CLI has no hook agentmsg can use.
var ErrNoHooks = errors.New("no usable hooks")

// ErrUnknownCLI: no such CLI in the registry.
var ErrUnknownCLI = errors.New("unknown agent CLI")

// InstallHooks merges the CLI's prompt-submit and turn-end hooks into the
// project's settings file, unless agentmsg's are there already; the rest
// of the file stays as it was.
func InstallHooks(r HookInstall) (Report, error) {
	cli, ok := Lookup(r.CLI)
	if !ok {
		return Report{}, fmt.Errorf("%w %q", ErrUnknownCLI, r.CLI)
	}
	if cli.Hooks == nil {
		return Report{}, fmt.Errorf("%s: %w", cli.Title, ErrNoHooks)
	}
	path, err := cli.Hooks.File.Locate(r.Dir, "", nil)
	if err != nil {
		return Report{}, err
	}
	commands := cli.Hooks.Commands(r.Exe, r.Root, r.Receipts, r.Server)
	merge := func(old []byte) ([]byte, error) { return mergeHooks(old, *cli.Hooks, commands) }
	rep, err := install(cli.Name, path, merge, newMode, r.Print, r.Now)
	rep.Note = cli.Hooks.Note
	return rep, err
}

// Commands are the hooks' command lines, by event: the prompt-submit one
// records a receipt, the turn-end one runs deliver --turn-end in the
// background (the turn is not over until the hook returns, and deliver
// waits for the box it is holding up; --turn-end bounds it in time and
// lets one run per team at a time).
func (h Hooks) Commands(exe, root, receipts string, server []string) map[string]string {
	q := shell.Quote
	submit := q(exe) + " hook prompt-submit --receipts " + q(receipts)
	var srv strings.Builder
	for _, a := range server {
		srv.WriteString(q(a) + " ")
	}
	turnEnd := "(AGENTMSG_HOME=" + q(root) + " " + q(exe) + " " + srv.String() + "deliver --turn-end >/dev/null 2>&1 &)"
	if h.ReplyJSON {
		submit += " --reply-json"
		turnEnd += "; echo '{}'"
	}
	return map[string]string{h.Submit: submit, h.TurnEnd: turnEnd}
}

// mergeHooks adds each command as a new group under hooks.EVENT, unless a
// command of agentmsg's for that event is there. It returns old itself
// when nothing is to be added.
func mergeHooks(old []byte, h Hooks, commands map[string]string) ([]byte, error) {
	doc, err := parseJSONDoc(old)
	if err != nil {
		return nil, fmt.Errorf("%w, left untouched", err)
	}
	var settings map[string]any
	if err := json.Unmarshal(doc.plain, &settings); err != nil {
		return nil, err
	}
	hooks, isObj := settings["hooks"].(map[string]any)
	if settings["hooks"] != nil && !isObj {
		return nil, errors.New(`"hooks" is not an object, left untouched`)
	}
	changed := false
	for _, event := range []string{h.Submit, h.TurnEnd} {
		groups, isList := hooks[event].([]any)
		if hooks[event] != nil && !isList {
			return nil, fmt.Errorf(`"hooks.%s" is not a list, left untouched`, event)
		}
		if hasAgentmsgHook(groups, commands[event]) {
			continue
		}
		group := hookGroup{Hooks: []hookCommand{{Type: "command", Command: commands[event]}}}
		switch {
		case doc.lookup("hooks") == nil:
			err = doc.set(doc.root, "hooks", map[string]any{event: []any{group}})
		case doc.lookup("hooks", event) == nil:
			err = doc.set(doc.lookup("hooks"), event, []any{group})
		default:
			err = doc.add(doc.lookup("hooks", event), group)
		}
		if err != nil {
			return nil, err
		}
		changed = true
	}
	if !changed {
		return old, nil
	}
	return doc.out(), nil
}

// hookGroup is one entry of a hook event's list, in the order the CLIs'
// documentation writes it.
type hookGroup struct {
	Hooks []hookCommand `json:"hooks"`
}

type hookCommand struct {
	Type    string `json:"type"`
	Command string `json:"command"`
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

// RecordPrompt is the prompt-submit hook's work: it reads the hook's input
// (JSON with the submitted "prompt"; the same field in every CLI
// registered) and records the message id the prompt starts with in the
// receipts log, as received in the pane at. Receipts are proof of
// delivery: never written into a directory others control, or through a
// symbolic link.
func RecordPrompt(in io.Reader, receipts string, at receipt.Recipient) error {
	var hook struct {
		Prompt string `json:"prompt"`
	}
	data, err := io.ReadAll(io.LimitReader(in, 64<<20))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, &hook); err != nil {
		return fmt.Errorf("the hook's input is not JSON: %w", err)
	}
	id, ok := receipt.FromPrompt(hook.Prompt)
	if !ok {
		return nil
	}
	err = safedir.CheckFollow(filepath.Dir(receipts))
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		err = (&receipt.Log{Path: receipts}).Record(id, at)
	}
	return err
}
