package cmd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmsg/agentmsg/receipt"
)

// Gemini CLI parses the hook's stdout as JSON: the hook answers {} even
// when its input is not what it expects.
func TestHookPromptSubmitReplies(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"TMUX": "/tmp/tmux-0/x,4242,0", "TMUX_PANE": "%7"}
	for _, in := range []string{`{"prompt": "MSG_ANA_0123abcd: hi"}`, "not json"} {
		f, out, _ := testFactory(env)
		f.IO.In = strings.NewReader(in)
		if code := Run(context.Background(), f, []string{"hook", "prompt-submit", "--reply-json", "--receipts", dir + "/r.log"}); code != 0 {
			t.Fatalf("exit %d", code)
		}
		if strings.TrimSpace(out.String()) != "{}" {
			t.Errorf("stdout %q, want {}", out)
		}
	}
	at := receipt.Recipient{Pane: "%7", ServerPID: 4242, Socket: "/tmp/tmux-0/x"}
	if l := (&receipt.Log{Path: dir + "/r.log"}); !l.Has("MSG_ANA_0123abcd", at) {
		t.Error("no receipt recorded for the hook's own pane")
	}
}

// Receipts are proof of delivery: never written into a directory others
// can write to (where they could forge them), or through a symbolic link.
func TestHookRefusesReceiptsOthersControl(t *testing.T) {
	open := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	private := t.TempDir()
	victim := filepath.Join(t.TempDir(), "pwned")
	if err := os.Symlink(victim, filepath.Join(private, "r.log")); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{filepath.Join(open, "r.log"), filepath.Join(private, "r.log")} {
		f, _, errOut := testFactory(nil)
		f.IO.In = strings.NewReader(`{"prompt": "MSG_ANA_0123abcd: hi"}`)
		if code := Run(context.Background(), f, []string{"hook", "prompt-submit", "--receipts", path}); code != 0 {
			t.Fatalf("exit %d: a hook must never stand in the agent's way", code)
		}
		if errOut.Len() == 0 {
			t.Errorf("%s: nothing said on stderr", path)
		}
	}
	if _, err := os.Lstat(filepath.Join(open, "r.log")); err == nil {
		t.Error("a receipt was written into a world-writable directory")
	}
	if _, err := os.Lstat(victim); err == nil {
		t.Error("a receipt was written through a symbolic link")
	}
}
