package cmd

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentmsg/agentmsg/integration"
	"github.com/agentmsg/agentmsg/mailbox"
	"github.com/agentmsg/agentmsg/receipt"
	"github.com/agentmsg/agentmsg/tmux"
)

// HooksInstallOptions are hooks install's inputs.
type HooksInstallOptions struct {
	IO   *IOStreams
	JSON func() bool

	CLI    string
	Dir    string // the project (default: the working directory)
	Print  bool
	Exe    string   // the agentmsg the hooks run (this executable)
	Root   string   // the mailbox root
	Server []string // -S / -L given here, for the turn-end deliver
}

func NewCmdHooks(f *Factory) *cobra.Command {
	c := &cobra.Command{
		Use:   "hooks",
		Short: "Install agentmsg's hooks into an agent CLI's settings",
	}
	c.AddCommand(NewCmdHooksInstall(f, nil))
	return c
}

func NewCmdHooksInstall(f *Factory, runF func(context.Context, *HooksInstallOptions) error) *cobra.Command {
	opts := &HooksInstallOptions{IO: f.IO, JSON: func() bool { return f.JSON }}
	names := integration.WithHooks()
	c := &cobra.Command{
		Use:   "install " + strings.Join(names, "|"),
		Short: "Add agentmsg's prompt-submit and turn-end hooks to a project's agent CLI settings (writes the file; --print to only show it)",
		Long: `Install merges two hooks into the project's settings of an agent CLI (DIR:
--dir, default the current directory), and does nothing when they are there
already:

` + hooksTable() + `
The prompt-submit hook records the id of every message the agent really
submits (a queued one when it is sent): send confirms by this receipt, which
no folding or scrolling of the screen hides. The turn-end hook types the
messages kept for agents that were busy (agentmsg deliver), in the background.

Codex runs new hooks only after a person trusts them (at its next start,
"Trust all and continue", or /hooks); Codex, Gemini CLI and Qwen Code read a
project's hooks only in a trusted folder.

` + installHelp + `

agentmsg mcp install behaves the same way.`,
		Example: `  agentmsg hooks install claude
  agentmsg hooks install codex --dir ~/src/project --print`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) != 1 || !slices.Contains(names, args[0]) {
				return usagef("hooks install: want the agent CLI: %s (the ones with a prompt-submit hook)", orList(names))
			}
			return nil
		},
		ValidArgs: names,
		RunE: func(c *cobra.Command, args []string) error {
			opts.CLI = args[0]
			var err error
			if opts.Exe, err = os.Executable(); err != nil {
				return err
			}
			if opts.Dir == "" {
				if opts.Dir, err = os.Getwd(); err != nil {
					return err
				}
			}
			opts.Root = mailbox.DefaultRoot(f.LookupEnv)
			// The hooks run in the agent's environment: the server comes
			// from its $TMUX unless one was named here.
			opts.Server = serverArgs(c)
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return hooksInstallRun(opts)
		},
	}
	c.Flags().StringVar(&opts.Dir, "dir", "", "the project directory (default: the current one)")
	c.Flags().BoolVar(&opts.Print, "print", false, "print the settings file as it would be written, and write nothing")
	return c
}

func hooksInstallRun(opts *HooksInstallOptions) error {
	receipts := receipt.DefaultPath(opts.Root)
	rep, err := integration.InstallHooks(integration.HookInstall{
		CLI: opts.CLI, Dir: opts.Dir, Exe: opts.Exe, Root: opts.Root, Receipts: receipts,
		Server: opts.Server, Print: opts.Print, Now: time.Now(),
	})
	if err != nil {
		return installErr(err)
	}
	if opts.JSON() {
		writeJSON(&Factory{IO: opts.IO}, rep)
		return nil
	}
	cli, _ := integration.Lookup(opts.CLI)
	h := cli.Hooks
	return printInstall(opts.IO, rep, opts.Print,
		fmt.Sprintf("added agentmsg's %s and %s hooks to %s\nreceipts go to %s", h.Submit, h.TurnEnd, rep.Path, receipts))
}

// hooksTable is, for --help, each CLI's hooks file and events.
func hooksTable() string {
	var b strings.Builder
	for _, name := range integration.WithHooks() {
		cli, _ := integration.Lookup(name)
		h := cli.Hooks
		fmt.Fprintf(&b, "  %-7s DIR/%s: %s and %s\n", name, h.File.Path, h.Submit, h.TurnEnd)
	}
	return b.String()
}

// HookOptions are the inputs of the hook the agent CLIs run.
type HookOptions struct {
	IO        *IOStreams
	LookupEnv func(string) (string, bool)
	Receipts  string
	ReplyJSON bool
}

// NewCmdHook is what the installed hooks run; hidden from help.
func NewCmdHook(f *Factory) *cobra.Command { return newCmdHook(f, nil) }

func newCmdHook(f *Factory, runF func(context.Context, *HookOptions) error) *cobra.Command {
	opts := &HookOptions{IO: f.IO, LookupEnv: f.LookupEnv}
	c := &cobra.Command{
		Use:    "hook prompt-submit",
		Hidden: true,
		Short:  "Run by an agent CLI's prompt-submit hook: record the submitted message's id",
		Args:   argsBetween(1, 1, "prompt-submit"),
		RunE: func(c *cobra.Command, args []string) error {
			if args[0] != "prompt-submit" {
				return usagef("unknown hook %q", args[0])
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return hookRun(c.Context(), opts)
		},
	}
	c.Flags().StringVar(&opts.Receipts, "receipts", "", "the receipts file")
	c.Flags().BoolVar(&opts.ReplyJSON, "reply-json", false, `print "{}" on stdout (for CLIs that read the hook's answer as JSON)`)
	return c
}

// hookRun records the prompt's receipt. A hook must never stand in the
// agent's way: errors are reported on stderr and the exit is 0.
func hookRun(ctx context.Context, opts *HookOptions) error {
	// The pane the hook runs in is the agent's: its receipt proves the
	// copy typed there, no other.
	c := tmux.CallerFrom(opts.LookupEnv)
	at := receipt.Recipient{Pane: c.Pane, ServerPID: c.ServerPID, Socket: c.Socket}
	in, err := readAll(ctx, io.LimitReader(opts.IO.In, 64<<20))
	if err == nil {
		err = integration.RecordPrompt(bytes.NewReader(in), opts.Receipts, at)
	}
	if err != nil {
		fmt.Fprintf(opts.IO.ErrOut, "agentmsg hook: %s\n", showErr(err))
	}
	if opts.ReplyJSON {
		fmt.Fprintln(opts.IO.Out, "{}") // allow, change nothing
	}
	return nil
}
