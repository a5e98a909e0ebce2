package cmd

import (
	"context"
	"testing"

	"github.com/spf13/cobra"
)

// Flag parsing of the commands that gained the options + runF shape: each
// fills its options and calls runF, touching nothing else.
func TestOptionsShape(t *testing.T) {
	var doc *DoctorOptions
	if code := parse(func(f *Factory) *cobra.Command {
		return newCmdDoctor(f, func(_ context.Context, o *DoctorOptions) error { doc = o; return nil })
	}, "--probe", "--agent", "claude", "alpha", "ana"); code != ExitOK || !doc.Probe || doc.Target.Session != "agent-alpha-ana" || doc.Agent.kind != "claude" {
		t.Errorf("doctor: exit %d, %+v", code, doc)
	}
	if code := parse(func(f *Factory) *cobra.Command {
		return newCmdDoctor(f, func(context.Context, *DoctorOptions) error { return nil })
	}, "alpha"); code != ExitUsage {
		t.Errorf("doctor with one argument: exit %d, want %d", code, ExitUsage)
	}
	called := false
	if code := parse(func(f *Factory) *cobra.Command {
		return newCmdConfig(f, func(context.Context, *ConfigOptions) error { called = true; return nil })
	}); code != ExitOK || !called {
		t.Errorf("config: exit %d, called %v", code, called)
	}
	var comp *CompletionOptions
	if code := parse(func(f *Factory) *cobra.Command {
		return newCmdCompletion(f, func(_ context.Context, o *CompletionOptions) error { comp = o; return nil })
	}, "zsh"); code != ExitOK || comp.Shell != "zsh" || comp.Root == nil {
		t.Errorf("completion: exit %d, %+v", code, comp)
	}
	var hook *HookOptions
	if code := parse(func(f *Factory) *cobra.Command {
		return newCmdHook(f, func(_ context.Context, o *HookOptions) error { hook = o; return nil })
	}, "--receipts", "/tmp/r.log", "--reply-json", "prompt-submit"); code != ExitOK || hook.Receipts != "/tmp/r.log" || !hook.ReplyJSON {
		t.Errorf("hook: exit %d, %+v", code, hook)
	}
}
